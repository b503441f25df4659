/**
 * A one-node Slurm cluster with fake GPUs for the Slurm runner's tests (`./test-cluster`),
 * and whether this machine can run one. Without Slurm's packages (or root) the tests are
 * skipped with a message, except under CI (`CI=true`), where they must run.
 */

const SCRIPT = new URL("./test-cluster", import.meta.url).pathname;

/** Why the Slurm tests cannot run here, or null when they can. */
export function slurmMissing(): string | null {
  const found = (name: string) =>
    ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"].some((dir) => {
      try {
        return Deno.statSync(`${dir}/${name}`).isFile;
      } catch {
        return false;
      }
    });
  const missing = ["sbatch", "squeue", "scontrol", "scancel", "slurmctld", "slurmd", "munged"]
    .filter((name) => !found(name));
  if (missing.length > 0) {
    return `${missing.join(", ")} not installed (apt-get install -y slurm-wlm munge)`;
  }
  if (Deno.uid() !== 0) {
    return "the test cluster needs root (it runs slurmd and makes device nodes)";
  }
  return null;
}

/** Test options for a Slurm test: skipped with the reason outside CI when Slurm is missing. */
export function slurmTest(name: string): { name: string; ignore: boolean } {
  const missing = slurmMissing();
  const inCi = Deno.env.get("CI") === "true";
  if (missing === null || inCi) return { name, ignore: false };
  return { name: `${name} (skipped: ${missing}; CI=true runs it)`, ignore: true };
}

/** A started test cluster. */
export interface TestCluster {
  dir: string;
  /** The environment Slurm's commands need (`SLURM_CONF`). */
  env: Record<string, string>;
  /** Runs a Slurm command against the cluster; its stdout. */
  run(command: string, ...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

async function script(args: string[]): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: [SCRIPT, ...args],
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) {
    throw new Error(
      `test-cluster ${args.join(" ")} failed: ${text(out.stderr)}${text(out.stdout)}`,
    );
  }
  return text(out.stdout);
}

/** Starts a cluster in a new temp dir with `gpus` fake GPUs. */
export async function startTestCluster(gpus = 4): Promise<TestCluster> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-slurm-" });
  const printed = await script(["start", dir, String(gpus)]);
  const conf = /export SLURM_CONF=(\S+)/.exec(printed)?.[1];
  if (!conf) throw new Error(`test-cluster printed no SLURM_CONF: ${printed}`);
  const env = { SLURM_CONF: conf };
  return {
    dir,
    env,
    async run(command, ...args) {
      const out = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" })
        .output();
      return new TextDecoder().decode(out.stdout);
    },
    async stop() {
      await script(["stop", dir]);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
