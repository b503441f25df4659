/**
 * What a user would pick instead, timed in the same run: submit → process started for the
 * same command with task-spooler (`tsp`, Debian's task-spooler) and with a one-node Slurm
 * test cluster (`sbatch`). Each row says "not installed" when the tool is missing here.
 */
import { slurmMissing, startTestCluster } from "../tests/slurm/_cluster.ts";
import type { Report } from "./report.ts";

const ROUNDS = 10;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};

/** Waits until `path` exists; the ms from `t0` (performance.now) to then. */
async function appeared(path: string, t0: number, limitMs = 60_000): Promise<number> {
  for (;;) {
    try {
      Deno.statSync(path);
      return performance.now() - t0;
    } catch {
      if (performance.now() - t0 > limitMs) throw new Error(`${path} did not appear`);
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}

function installed(program: string): boolean {
  return ["/usr/bin", "/usr/local/bin"].some((d) => {
    try {
      return Deno.statSync(`${d}/${program}`).isFile;
    } catch {
      return false;
    }
  });
}

/** `tsp` (task-spooler): queue a command that touches a file, time until it exists. */
async function benchTsp(dir: string): Promise<number[] | null> {
  if (!installed("tsp")) return null;
  const env = { TS_SOCKET: `${dir}/tsp.sock`, TS_MAXFINISHED: "100" };
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const mark = `${dir}/tsp-${i}`;
    const t0 = performance.now();
    await new Deno.Command("tsp", { args: ["touch", mark], env, stdout: "null" }).output();
    times.push(await appeared(mark, t0));
  }
  await new Deno.Command("tsp", { args: ["-K"], env, stdout: "null", stderr: "null" }).output();
  return times;
}

/** `sbatch` on the one-node test cluster: the same, through Slurm's scheduler. */
async function benchSlurm(dir: string): Promise<number[] | string> {
  const missing = slurmMissing();
  if (missing) return missing;
  const cluster = await startTestCluster(1);
  try {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const mark = `${dir}/slurm-${i}`;
      const t0 = performance.now();
      await cluster.run("sbatch", "--quiet", "--wrap", `touch ${mark}`, "--output", "/dev/null");
      times.push(await appeared(mark, t0));
    }
    return times;
  } finally {
    await cluster.stop();
  }
}

/** Reports the peers' submit → started next to gpuctl's (`gpuctlP50Ms`, measured before). */
export async function benchPeers(report: Report, gpuctlP50Ms: number | null): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-bench-peers-" });
  try {
    const gpuctl = gpuctlP50Ms === null
      ? null
      : { value: gpuctlP50Ms, unit: "ms", text: `gpuctl p50 ${gpuctlP50Ms.toFixed(0)} ms` };
    const tsp = await benchTsp(dir);
    report({
      name: "peer: task-spooler (tsp) submit → process started, p50",
      value: tsp
        ? { value: pct(tsp, 0.5), unit: "ms" }
        : { value: NaN, unit: "ms", text: "not installed (apt-get install task-spooler)" },
      baseline: gpuctl,
      target: null,
      note: "for comparison",
    });
    const slurm = await benchSlurm(dir);
    report({
      name: "peer: Slurm (one-node test cluster) sbatch → process started, p50",
      value: typeof slurm === "string"
        ? { value: NaN, unit: "ms", text: `not available: ${slurm}` }
        : { value: pct(slurm, 0.5), unit: "ms" },
      baseline: gpuctl,
      target: null,
      note: "for comparison",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const { BenchReport } = await import("./report.ts");
  await benchPeers(new BenchReport().add, null);
}
