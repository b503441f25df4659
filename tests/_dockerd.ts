/**
 * A private Docker engine for the Docker runner's tests: `dockerd` with its own data root,
 * exec root, pid file and socket in a temp dir (`--iptables=false --bridge=none`, so it
 * touches neither the host's firewall nor its interfaces), in a process group of its own,
 * and a small image with bash and Python built from this host's own files
 * (agent/runner/testdata/python_rootfs.sh; no registry is needed). Without root or Debian's
 * docker.io the tests are skipped with the reason, except under CI (`CI=true`), where they
 * must run.
 */

const ROOTFS_SCRIPT = new URL("../agent/runner/testdata/python_rootfs.sh", import.meta.url)
  .pathname;

/** The tag of the test image (bash, coreutils, setsid and Debian's python3). */
export const TEST_IMAGE = "gpuctl-test-python:1";

const START_WAIT_MS = 60_000;
const STOP_WAIT_MS = 5_000;

function installed(name: string): boolean {
  return ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"].some((dir) => {
    try {
      return Deno.statSync(`${dir}/${name}`).isFile;
    } catch {
      return false;
    }
  });
}

/**
 * Why the Docker tests cannot run here, or null when they can. Tests skip with it, except
 * under CI (`CI=true`), where they must run.
 */
export function dockerMissing(): string | null {
  const missing = ["dockerd", "docker", "containerd", "runc"].filter((name) => !installed(name));
  if (missing.length > 0) {
    return `${missing.join(", ")} not installed (apt-get install -y docker.io)`;
  }
  if (Deno.uid() !== 0) return "a private dockerd needs root";
  return null;
}

/** What a docker command printed, and whether it succeeded. */
export interface DockerOutput {
  ok: boolean;
  code: number;
  stdout: string;
  stderr: string;
}

/** A started engine. */
export interface TestEngine {
  dir: string;
  /** `unix://<dir>/docker.sock`. */
  host: string;
  /** The environment the docker CLI needs to reach this engine (`DOCKER_HOST`). */
  env: Record<string, string>;
  /** The image built for the tests, {@linkcode TEST_IMAGE}. */
  image: string;
  /** Runs `docker ARGS…` against the engine. */
  docker(...args: string[]): Promise<DockerOutput>;
  /** The names of all containers, running or not (`docker ps -a`). */
  containers(): Promise<string[]>;
  /** Stops the engine (its whole process group) and removes its dir; idempotent. */
  stop(): void;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function run(
  program: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<DockerOutput> {
  const out = await new Deno.Command(program, {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { ok: out.success, code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function processExists(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

/**
 * The root filesystem tar of the test image, made once and kept in the temp dir under a
 * name that changes with the script and the host's python3, so each test file (and each
 * later run) imports it without making it again.
 */
async function rootfsTar(): Promise<string> {
  const python = Deno.realPathSync("/usr/bin/python3");
  const stat = Deno.statSync(python);
  const key = `${Deno.readTextFileSync(ROOTFS_SCRIPT)}\n${python}\n${stat.mtime?.getTime()}`;
  const hash = Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key))),
  ).slice(0, 8).map((b) => b.toString(16).padStart(2, "0")).join("");
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  const tar = `${tmp}/gpuctl-test-rootfs-${hash}.tar`;
  try {
    if (Deno.statSync(tar).size > 0) return tar;
  } catch {
    // not made yet
  }
  // Test files may run as workers of one process: the pid alone does not tell them apart.
  const partial = `${tar}.${crypto.randomUUID()}.part`;
  const out = await run("bash", ["-c", 'bash "$0" > "$1"', ROOTFS_SCRIPT, partial]);
  if (!out.ok) {
    await Deno.remove(partial).catch(() => {});
    throw new Error(`Cannot make the test image's root filesystem: ${out.stderr}`);
  }
  await Deno.rename(partial, tar); // atomic: a parallel file sees all of it or none
  // Older ones (another script or python3) are not used again.
  for (const entry of Deno.readDirSync(tmp)) {
    if (/^gpuctl-test-rootfs-[0-9a-f]+\.tar$/.test(entry.name) && `${tmp}/${entry.name}` !== tar) {
      await Deno.remove(`${tmp}/${entry.name}`).catch(() => {});
    }
  }
  return tar;
}

/**
 * Starts a private dockerd and imports the test image. The caller stops it; an `unload`
 * handler stops it too, so an engine never outlives its test file.
 */
export async function startEngine(): Promise<TestEngine> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-dockerd-" });
  const host = `unix://${dir}/docker.sock`;
  const env = { DOCKER_HOST: host };
  const logPath = `${dir}/dockerd.log`;
  // setsid: dockerd leads a process group of its own (with the containerd it starts), so
  // stopping it reaches every process it started and nothing else. `exec` keeps the pid.
  const args = [
    "--data-root",
    `${dir}/data`,
    "--exec-root",
    `${dir}/exec`,
    "--pidfile",
    `${dir}/dockerd.pid`,
    "--host",
    host,
    "--iptables=false",
    "--ip6tables=false",
    "--bridge=none",
    "--shutdown-timeout",
    "2",
    // A host whose own containerd runs makes dockerd use it: these keep this engine's
    // containers and images apart from the host's and from other test files' engines there.
    "--containerd-namespace",
    `gpuctl-test-${dir.split("/").at(-1)}`,
    "--containerd-plugins-namespace",
    `gpuctl-test-${dir.split("/").at(-1)}-plugins`,
  ];
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      'log="$1"; shift; exec setsid dockerd "$@" >"$log" 2>&1',
      "dockerd",
      logPath,
      ...args,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const pid = child.pid;
  let stopped = false;
  const docker = (...args: string[]) => run("docker", args, env);
  const engine: TestEngine = {
    dir,
    host,
    env,
    image: TEST_IMAGE,
    docker,
    async containers() {
      const out = await docker("ps", "-a", "--format", "{{.Names}}");
      if (!out.ok) throw new Error(`docker ps -a failed: ${out.stderr}`);
      return out.stdout.split("\n").filter((s) => s !== "");
    },
    stop() {
      if (stopped) return;
      stopped = true;
      globalThis.removeEventListener("unload", onUnload);
      stopGroup(pid, dir);
    },
  };
  const onUnload = () => engine.stop();
  globalThis.addEventListener("unload", onUnload);
  try {
    const deadline = Date.now() + START_WAIT_MS;
    for (;;) {
      if ((await docker("version", "--format", "{{.Server.Version}}")).ok) break;
      const status = await Promise.race([
        child.status,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 100)),
      ]);
      if (status !== null || Date.now() > deadline) {
        const said = await Deno.readTextFile(logPath).catch(() => "");
        throw new Error(
          `The test dockerd did not start (${status ? `exit ${status.code}` : "timed out"}): ` +
            said.slice(-3000),
        );
      }
    }
    // The engine must not keep a test file's process alive: `unload` stops it.
    child.unref();
    const tar = await rootfsTar();
    const imported = await docker("import", tar, TEST_IMAGE);
    if (!imported.ok) throw new Error(`docker import failed: ${imported.stderr}`);
  } catch (err) {
    engine.stop();
    throw err;
  }
  return engine;
}

/**
 * SIGTERM to the engine's process group, SIGKILL after a bound; then the container shims
 * that name this engine's dir (they leave the group), and the dir. Synchronous, so that it
 * also runs from an `unload` handler.
 */
function stopGroup(pgid: number, dir: string): void {
  const signalGroup = (signal: Deno.Signal) => {
    try {
      Deno.kill(-pgid, signal);
    } catch {
      // the group is gone
    }
  };
  signalGroup("SIGTERM");
  const deadline = Date.now() + STOP_WAIT_MS;
  while (processExists(pgid) && Date.now() < deadline) sleepSync(50);
  signalGroup("SIGKILL");
  for (const pid of processesNaming(dir)) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // ended meanwhile
    }
  }
  // Mounts an engine killed mid-way may leave (overlay, the exec root's netns).
  const mounts = (() => {
    try {
      return Deno.readTextFileSync("/proc/self/mounts").split("\n")
        .map((line) => line.split(" ")[1]).filter((m) => m?.startsWith(dir));
    } catch {
      return [];
    }
  })();
  for (const mount of mounts.reverse()) {
    new Deno.Command("umount", { args: ["-l", mount], stdout: "null", stderr: "null" })
      .outputSync();
  }
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch {
    // a file still held: the temp dir keeps it
  }
}

/** Pids of processes whose command line names `dir` (the engine's containerd shims). */
function processesNaming(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes(dir)) pids.push(Number(entry.name));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

/**
 * The host pids of processes a container's job named by its own pids: the processes in
 * the pid namespaces of this engine's running containers whose innermost pid is one of
 * `jobPids`. Pids that match none (ended, or in no container) are left out.
 */
export async function hostPidsOf(engine: TestEngine, jobPids: number[]): Promise<number[]> {
  const ps = await engine.docker("ps", "-q");
  const ids = ps.stdout.split("\n").filter((s) => s !== "");
  if (ids.length === 0) return [];
  const inspect = await engine.docker("inspect", "--format", "{{.State.Pid}}", ...ids);
  const namespaces = new Set<string>();
  for (const pid of inspect.stdout.split("\n").filter((s) => s !== "" && s !== "0")) {
    try {
      namespaces.add(Deno.readLinkSync(`/proc/${pid}/ns/pid`));
    } catch {
      // ended meanwhile
    }
  }
  const wanted = new Set(jobPids);
  const found = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      if (!namespaces.has(Deno.readLinkSync(`/proc/${entry.name}/ns/pid`))) continue;
      const status = Deno.readTextFileSync(`/proc/${entry.name}/status`);
      const nspid = /^NSpid:\s+(.*)$/m.exec(status)?.[1].trim().split(/\s+/).map(Number) ?? [];
      const inner = nspid.at(-1);
      if (nspid.length > 1 && inner !== undefined && wanted.has(inner)) {
        found.set(inner, Number(entry.name));
      }
    } catch {
      // ended meanwhile
    }
  }
  return jobPids.flatMap((p) => found.has(p) ? [found.get(p)!] : []);
}
