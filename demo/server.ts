/**
 * gpuctl with four fake GPUs in a GPUCTL_HOME of its own (`deno task start` as a child
 * process), seeded with a small lab's day; for `deno task demo` and `deno task screenshots`.
 */
import { apiClient, type Call, type DemoJobs, evaluateBaseline, seedDemo } from "./seed.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

export interface Demo {
  url: string;
  adminToken: string;
  home: string;
  call: Call;
  jobs: DemoJobs;
  /** Stops the server (its agent leaves with it). */
  stop(): Promise<void>;
}

/** The argv of `deno task start` after `deno`. */
function startArgs(): string[] {
  const tasks = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks;
  return (tasks.start as string).split(/\s+/).slice(1);
}

export async function startDemo(
  opts: { home: string; port: number; sweepSleep?: number; quiet?: boolean },
): Promise<Demo> {
  await Deno.mkdir(opts.home, { recursive: true });
  const child = new Deno.Command(Deno.execPath(), {
    args: [...startArgs(), "--port", String(opts.port), "--fake-gpus", "4"],
    cwd: ROOT,
    env: { GPUCTL_HOME: opts.home, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const decoder = new TextDecoder();
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) {
      const text = decoder.decode(chunk, { stream: true });
      out += text;
      if (!opts.quiet) Deno.stderr.writeSync(chunk);
    }
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let call: Call | null = null;
  const stop = async () => {
    // gpuctl leaves running jobs running when it stops (the next start reattaches them); a
    // demo that is over takes its jobs with it.
    if (call) await cancelAll(call).catch(() => {});
    try {
      child.kill("SIGTERM");
    } catch {
      // gone already
    }
    await child.status;
    await pumps;
  };
  try {
    const deadline = Date.now() + 120_000;
    let m: RegExpExecArray | null = null;
    while (!(m = /console at (http:\/\/[0-9.]+:\d+)\//.exec(out))) {
      if (Date.now() > deadline) throw new Error(`gpuctl did not start:\n${out.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const url = m[1];
    const config = await Deno.readTextFile(`${opts.home}/server.yaml`);
    const adminToken = /admin_token: (\S+)/.exec(config)![1];
    call = apiClient(url, adminToken);
    while (((await call!("GET", "/api/nodes")).json?.items ?? []).length === 0) {
      if (Date.now() > deadline) throw new Error("the local agent did not connect");
      await new Promise((r) => setTimeout(r, 200));
    }
    const work = `${opts.home}/work`;
    await Deno.mkdir(work, { recursive: true });
    const jobs = await seedDemo(call!, work, { sweepSleep: opts.sweepSleep });
    await evaluateBaseline(call!, jobs);
    return { url, adminToken, home: opts.home, call: call!, jobs, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Cancels every active job and waits (bounded) until none runs. */
async function cancelAll(call: Call): Promise<void> {
  const active = async () =>
    ((await call("GET", "/api/jobs?limit=200")).json.items as { id: string; status: string }[])
      .filter((j) => ["QUEUED", "DISPATCHED", "RUNNING"].includes(j.status));
  for (const j of await active()) await call("POST", `/api/jobs/${j.id}/cancel`);
  const deadline = Date.now() + 15_000;
  while ((await active()).length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
  }
}
