// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:agent-cpu`: only the agent CPU row of `deno task bench` (10 jobs growing
 * TensorBoard files, fake NVML sampled every 10 s), on a cluster of its own, so a change to
 * the agent can be measured on its own. Flags:
 *
 * - `--runs N` measures N times on one cluster (one row each). @default 1
 * - `--threads` also says which of the agent's threads used the CPU (from
 *   `/proc/<pid>/task/<tid>/stat`: the JavaScript thread, the file-system pool, V8's helpers).
 * - `--profile FILE` samples the agent's JavaScript through the inspector over the window,
 *   writes the profile (Chrome's `.cpuprofile`) to FILE and prints the functions that used
 *   the most of it. The inspector costs some CPU of its own: read the share from a run
 *   without it.
 */
import { startCluster } from "../tests/_processes.ts";
import { benchAgentCpu } from "./cluster.ts";
import { BenchReport } from "./report.ts";

const flags: { runs?: string; profile?: string; threads?: boolean } = {};
for (let i = 0; i < Deno.args.length; i++) {
  const arg = Deno.args[i];
  if (arg === "--threads") flags.threads = true;
  else if (arg === "--runs" || arg === "--profile") {
    flags[arg === "--runs" ? "runs" : "profile"] = Deno.args[++i];
  } else throw new Error(`unknown flag ${arg}: --runs N, --threads, --profile FILE`);
}
const runs = Number(flags.runs ?? 1);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number ≥ 1`);
const profilePath = flags.profile ?? null;

const cluster = await startCluster({
  fakeGpus: 10,
  sampleS: 10,
  heartbeatS: 10,
  prefix: "gpuctl-bench-agent-cpu-",
  agentDenoFlags: profilePath ? ["--inspect=127.0.0.1:0"] : [],
});
const bench = new BenchReport();
try {
  for (let i = 0; i < runs; i++) {
    const load = Deno.loadavg();
    const share = await benchAgentCpu(bench.add, cluster, async (pid, ms) => {
      const watches: Promise<void>[] = [];
      if (flags.threads) watches.push(threadShares(pid, ms));
      if (profilePath) {
        watches.push(profile(ms, `${profilePath.replace(/\.cpuprofile$/, "")}-${i}`));
      }
      await Promise.all(watches);
    });
    console.log(
      `run ${i + 1}: ${share.toFixed(2)} % of a core (load average ${
        load.map((n) => n.toFixed(2)).join(" ")
      } before, ${Deno.loadavg().map((n) => n.toFixed(2)).join(" ")} after)`,
    );
  }
} finally {
  await cluster.stop();
}
console.log(`\n${bench.table()}`);

/** Ticks (user + system) of each of the agent's threads, by thread name, over `ms`. */
async function threadShares(pid: number, ms: number): Promise<void> {
  const read = () => {
    const out = new Map<string, number>();
    for (const entry of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const stat = Deno.readTextFileSync(`/proc/${pid}/task/${entry.name}/stat`);
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]));
      } catch {
        // The thread ended meanwhile.
      }
    }
    return out;
  };
  const before = read();
  await new Promise((r) => setTimeout(r, ms));
  const after = read();
  const rows = [...after].map(([name, ticks]) => [name, ticks - (before.get(name) ?? 0)] as const)
    .filter(([, ticks]) => ticks > 0).sort((a, b) => b[1] - a[1]);
  console.log(`threads (% of a core over ${ms / 1000} s):`);
  for (const [name, ticks] of rows) {
    console.log(`  ${name.padEnd(18)} ${((100 * ticks) / (ms / 10)).toFixed(2)} %`);
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

/** Samples the agent's JavaScript through the inspector for `ms`; writes `<base>.cpuprofile`. */
async function profile(ms: number, base: string): Promise<void> {
  const match = await cluster.agent.waitFor(/Debugger listening on (ws:\/\/\S+)/, 10_000);
  const ws = new WebSocket(match[1]);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  ws.onmessage = (event) => {
    const message = JSON.parse(event.data);
    pending.get(message.id)?.(message.result);
    pending.delete(message.id);
  };
  const send = (method: string, params: unknown = {}) =>
    new Promise<unknown>((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 500 });
  await send("Profiler.start");
  await new Promise((r) => setTimeout(r, ms));
  const { profile } = await send("Profiler.stop") as {
    profile: { nodes: ProfileNode[]; samples: number[] };
  };
  ws.close();
  await Deno.writeTextFile(`${base}.cpuprofile`, JSON.stringify(profile));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  for (const s of profile.samples) hits.set(s, (hits.get(s) ?? 0) + 1);
  const label = (n: ProfileNode) =>
    `${n.callFrame.functionName || "(anonymous)"} ${
      n.callFrame.url.replace(/^.*\/(agent|lib|protocol|ext)\//, "$1/")
    }:${n.callFrame.lineNumber + 1}`;
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let busy = 0;
  for (const [nodeId, count] of hits) {
    const node = byId.get(nodeId)!;
    if (node.callFrame.functionName === "(idle)") continue;
    busy += count;
    self.set(label(node), (self.get(label(node)) ?? 0) + count);
    const seen = new Set<string>();
    for (let at: number | undefined = nodeId; at !== undefined; at = parent.get(at)) {
      const l = label(byId.get(at)!);
      if (seen.has(l)) continue;
      seen.add(l);
      total.set(l, (total.get(l) ?? 0) + count);
    }
  }
  const top = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, 25)
      .map(([l, n]) => `  ${(100 * n / busy).toFixed(1).padStart(5)} %  ${l}`).join("\n");
  console.log(`profile ${base}.cpuprofile: ${busy} busy samples of ${profile.samples.length}`);
  console.log(`self:\n${top(self)}\ntotal (with callees):\n${top(total)}`);
}
