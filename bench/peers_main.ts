// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:peers`: what a user would pick instead of gpuctl, measured in the same run on
 * the same machine, each row as the peer's number with gpuctl's beside it (ratio = peer /
 * gpuctl):
 *
 * - TensorBoard's loaders (EventAccumulator, its data server) against `gpuctl import-run` and a
 *   chart query, on the same event folders;
 * - torch's `SummaryWriter.add_scalar` against the SDK's `run.log`, per call and in a loop;
 * - Optuna's pruners and Ray Tune's ASHA against a gpuctl sweep with early stopping, on the
 *   synthetic example's learning rate, the same budget and seeds.
 *
 * The peers run in a private virtualenv (bench/peers/venv.ts). Rows go to
 * `bench/results/peers.json` with the conditions (load average, versions).
 *
 * Flags: `--quick` (small shapes, one seed, written to a temp file unless `--out`),
 * `--sections=loader,logging,search`, `--out=PATH`.
 */
import { BenchReport } from "./report.ts";
import { peersPython } from "./peers/venv.ts";
import { benchLoader, type LoaderShape } from "./peers/loader.ts";
import { benchLogging, type LogShape } from "./peers/log_call.ts";
import { benchSearch, type SearchShape } from "./peers/search.ts";

function flag(name: string): string | null {
  const hit = Deno.args.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : null;
}

const QUICK = Deno.args.includes("--quick");
const SECTIONS = new Set((flag("sections") ?? "loader,logging,search").split(","));
const OUT = flag("out") ??
  (QUICK
    ? `${await Deno.makeTempDir({ prefix: "gpuctl-bench-peers-" })}/peers.json`
    : new URL("./results/peers.json", import.meta.url).pathname);

const LOADER: LoaderShape = QUICK
  ? { runs: 2, tags: 2, steps: 10_000 }
  : { runs: 3, tags: 4, steps: 100_000 };
const LOGGING: LogShape = QUICK
  ? { calls: 20_000, steps: 5_000, rounds: 1 }
  : { calls: 200_000, steps: 50_000, rounds: 3 };
const SEARCH: SearchShape = QUICK
  ? { seeds: [1], trials: 6, steps: 120, sleep: 0.005 }
  : { seeds: [1, 2, 3, 4, 5], trials: 16, steps: 120, sleep: 0.01 };

const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
/** The 1-minute load average every 5 s, by section: the machine is shared, so each row's
 *  conditions are part of its number. */
const loadBySection: Record<string, { min: number; max: number }> = {};
let section = "setup";
const sampleLoad = () => {
  const one = Number(loadavg().split(" ")[0]);
  const s = loadBySection[section] ??= { min: one, max: one };
  s.min = Math.min(s.min, one);
  s.max = Math.max(s.max, one);
};
sampleLoad();
const sampler = setInterval(sampleLoad, 5000);
const enter = (name: string) => {
  section = name;
  sampleLoad();
};
const started = new Date();
const loadAtStart = loadavg();
const env = Deno.env.toObject();
const cache = `${env.HOME ?? "/root"}/.cache/gpuctl-peers`;

const py = await peersPython(env);
console.log(`peers: ${py.python} ${JSON.stringify(py.versions)}`);
for (const [name, why] of Object.entries(py.missing)) console.log(`peers: ${name} missing: ${why}`);
const bench = new BenchReport();
const tbReady = py.versions.tensorboard !== null && py.versions.torch !== null;
const notInstalled = (names: string[]) =>
  `not installed: ${
    names.filter((n) => py.versions[n as keyof typeof py.versions] === null).join(", ")
  }`;

if (SECTIONS.has("loader")) {
  enter("loader");
  await benchLoader(
    bench.add,
    tbReady ? py.python : null,
    cache,
    LOADER,
    notInstalled(["tensorboard", "torch"]),
  );
}
if (SECTIONS.has("logging")) {
  enter("logging");
  if (tbReady) await benchLogging(bench.add, py.python, LOGGING);
  else {
    bench.add({
      name: "peer: SummaryWriter.add_scalar",
      value: { value: NaN, unit: "µs", text: notInstalled(["tensorboard", "torch"]) },
      baseline: null,
      target: null,
      note: "for comparison",
    });
  }
}
if (SECTIONS.has("search")) {
  enter("search");
  await benchSearch(bench.add, py.python, {
    optuna: py.versions.optuna === null ? py.missing.optuna ?? "optuna" : undefined,
    ray: py.versions.ray === null ? py.missing.ray ?? "ray[tune]" : undefined,
  }, SEARCH);
}

sampleLoad();
clearInterval(sampler);
const finished = new Date();
const json = {
  ...(bench.json(finished) as Record<string, unknown>),
  conditions: {
    started_at: started.toISOString(),
    seconds: Math.round((finished.getTime() - started.getTime()) / 1000),
    load_average_at_start: loadAtStart,
    load_average_at_end: loadavg(),
    load_average_1min_by_section: loadBySection,
    quick: QUICK,
    python: py.python,
    versions: py.versions,
    missing: py.missing,
    loader: LOADER,
    logging: LOGGING,
    search: SEARCH,
    ratio: "peer / gpuctl",
  },
};
await Deno.mkdir(OUT.replace(/\/[^/]+$/, ""), { recursive: true });
await Deno.writeTextFile(OUT, JSON.stringify(json, null, 2) + "\n");
console.log(
  `\n${bench.table()}\n\nload average ${loadAtStart} at the start, ${loadavg()} at the end`,
);
for (const [name, l] of Object.entries(loadBySection)) {
  console.log(`load average (1 min) during ${name}: ${l.min}–${l.max}`);
}
console.log(`written: ${OUT}`);
