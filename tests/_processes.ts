/** Real server and agent processes for end-to-end and fault tests. */
const ROOT = new URL("..", import.meta.url).pathname;

/**
 * The argv of a `deno task` from deno.json, run directly: a test that kills the process with
 * SIGKILL must hit the program itself, not the task runner in front of it.
 */
export function taskArgs(task: string): string[] {
  const tasks = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks as Record<
    string,
    string
  >;
  const words = tasks[task].split(/\s+/);
  if (words[0] !== "deno") throw new Error(`task ${task} does not start with deno`);
  return words.slice(1);
}

export interface Proc {
  child: Deno.ChildProcess;
  output: () => string;
  /** Waits until the output matches. */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpExecArray>;
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** `deno <args>` in the repository root with `env` added, its output collected. */
export function spawnDeno(args: string[], env: Record<string, string>): Proc {
  return spawnProgram(Deno.execPath(), args, env);
}

/** `program <args>` in the repository root with `env` added, its output collected. */
export function spawnProgram(program: string, args: string[], env: Record<string, string>): Proc {
  const child = new Deno.Command(program, {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let status: Promise<Deno.CommandStatus> | null = null;
  return {
    child,
    output: () => out,
    async waitFor(pattern, ms = 30_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = pattern.exec(out);
        if (m) return m;
        if (Date.now() > deadline) {
          throw new Error(`no ${pattern} in ${ms} ms; output:\n${out.slice(-4000)}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async kill(signal: Deno.Signal = "SIGTERM") {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
      status ??= child.status;
      const s = await status;
      await pumps;
      return s;
    },
  };
}

/** `deno task server` on a free port with its own GPUCTL_HOME; resolves once it listens. */
export async function startServerProcess(home: string, port = 0) {
  const proc = spawnDeno([...taskArgs("server"), "--port", String(port)], { GPUCTL_HOME: home });
  const m = await proc.waitFor(/console at (http:\/\/[0-9.]+:(\d+))\//);
  const config = await Deno.readTextFile(`${home}/server.yaml`);
  return {
    proc,
    url: m[1],
    port: Number(m[2]),
    adminToken: /admin_token: (\S+)/.exec(config)![1],
    agentToken: /agent_token: (\S+)/.exec(config)![1],
  };
}

/** `deno task agent` against a server, with fake GPUs and fast heartbeats. */
export function startAgentProcess(
  opts: {
    server: string;
    token: string;
    dataDir: string;
    fakeGpus?: number;
    nodeId?: string;
    sampleS?: number;
    heartbeatS?: number;
    fenceAfterS?: number;
    /** Flags for `deno run` before the script (`--inspect`, say). @default none */
    denoFlags?: string[];
  },
): Proc {
  const task = taskArgs("agent");
  const args = [
    task[0],
    ...(opts.denoFlags ?? []),
    ...task.slice(1),
    "--server",
    opts.server,
    "--token",
    opts.token,
    "--data-dir",
    opts.dataDir,
    "--node-id",
    opts.nodeId ?? "e2e-node",
    "--heartbeat-s",
    String(opts.heartbeatS ?? 1),
    "--sample-s",
    String(opts.sampleS ?? 1),
  ];
  if (opts.fakeGpus !== undefined) args.push("--fake-gpus", String(opts.fakeGpus));
  if (opts.fenceAfterS !== undefined) args.push("--fence-after-s", String(opts.fenceAfterS));
  return spawnDeno(args, { GPUCTL_HOME: `${opts.dataDir}-home` });
}

/** A small API client with the admin token. */
export function api(base: string, token: string) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    // deno-lint-ignore no-explicit-any -- tests read arbitrary JSON answers
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, json, text };
  };
}

/** Polls until `fn` returns a truthy value. */
export async function until<T>(
  fn: () => Promise<T> | T,
  ms = 20_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`${what} not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until job `id` is in one of `statuses`; the job object. */
export async function waitJob(
  call: ReturnType<typeof api>,
  id: string,
  statuses: string[],
  ms = 30_000,
) {
  return await until(
    async () => {
      const j = (await call("GET", `/api/jobs/${id}`)).json;
      return statuses.includes(j.status) ? j : null;
    },
    ms,
    `job ${id} in ${statuses.join("/")}`,
  );
}

/** The text of a run's stored log lines, oldest first. */
export async function logText(call: ReturnType<typeof api>, runId: string): Promise<string[]> {
  const res = await call("GET", `/api/runs/${runId}/logs?after_seq=0&limit=2000`);
  return res.json.lines.map((l: { text: string }) => l.text);
}

/** Whether a process with this pid is alive (for checking that nothing outlived a job). */
export function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/** Waits until the (only) node is ONLINE. */
export async function nodeOnline(call: ReturnType<typeof api>): Promise<void> {
  await until(
    async () => (await call("GET", "/api/nodes")).json.items[0]?.status === "ONLINE",
    30_000,
    "node online",
  );
}

/** A server and one agent with fake GPUs in a temp GPUCTL_HOME, ready once the node is ONLINE. */
export async function startCluster(
  opts: {
    fakeGpus?: number;
    serverYaml?: string;
    sampleS?: number;
    heartbeatS?: number;
    prefix?: string;
    /** Flags for the agent's `deno run` (`--inspect`, say). @default none */
    agentDenoFlags?: string[];
  } = {},
) {
  const home = await Deno.makeTempDir({ prefix: opts.prefix ?? "gpuctl-e2e-" });
  await Deno.mkdir(`${home}/server`, { recursive: true });
  if (opts.serverYaml) await Deno.writeTextFile(`${home}/server/server.yaml`, opts.serverYaml);
  const server = await startServerProcess(`${home}/server`);
  const agent = startAgentProcess({
    server: server.url,
    token: server.agentToken,
    dataDir: `${home}/agent`,
    fakeGpus: opts.fakeGpus ?? 2,
    sampleS: opts.sampleS,
    heartbeatS: opts.heartbeatS,
    denoFlags: opts.agentDenoFlags,
  });
  const call = api(server.url, server.adminToken);
  try {
    await nodeOnline(call);
  } catch (err) {
    await agent.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    throw err;
  }
  return {
    home,
    call,
    server,
    agent,
    async stop() {
      await agent.kill("SIGTERM");
      await server.proc.kill("SIGTERM");
      await Deno.remove(home, { recursive: true });
    },
  };
}
