// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * TensorBoard's loaders next to `gpuctl import-run` on the same event folders (written by
 * torch's SummaryWriter): EventAccumulator keeping every scalar and keeping its default
 * 10,000 a tag, and TensorBoard's data server (`--load_fast true`, 1,000 a tag) behind its
 * HTTP API; against importing each run folder with the CLI into a real server and charting
 * through `POST /api/runs/metrics:query` as the console does (2,000 points a series).
 *
 * Time to first chart: from the first process start until one tag is charted whole (its last
 * step) for every run; total: until every tag is. Peak memory: the processes' peak RSS
 * (VmHWM, or `/usr/bin/time -f %M` for a process that exits).
 */
import { startServerProcess, taskArgs } from "../../tests/_processes.ts";
import type { Report } from "../report.ts";
import { num } from "./summary.ts";

const HERE = new URL(".", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

export interface LoaderShape {
  runs: number;
  tags: number;
  steps: number;
}

const tagNames = (n: number) => Array.from({ length: n }, (_, i) => `train/metric${i}`);
const text = (b: Uint8Array) => new TextDecoder().decode(b);
const lastJson = (s: string) =>
  JSON.parse(s.trim().split("\n").filter((l) => l.startsWith("{")).at(-1)!);

/** Peak RSS in MB of a live process and its descendants (VmHWM each, summed). */
function treePeakMb(pid: number): number {
  let kb = 0;
  try {
    kb = Number(/VmHWM:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))![1]);
  } catch {
    return 0;
  }
  let children: number[] = [];
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      const c = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
      if (c) children = children.concat(c.split(/\s+/).map(Number));
    }
  } catch {
    // gone meanwhile
  }
  return kb / 1024 + children.reduce((s, c) => s + treePeakMb(c), 0);
}

/** The event folders, written once and kept under the cache (SummaryWriter is ~70 µs a call). */
async function eventFolders(python: string, cache: string, shape: LoaderShape): Promise<string> {
  const dir = `${cache}/events/${shape.runs}x${shape.tags}x${shape.steps}`;
  try {
    Deno.statSync(`${dir}/.complete`);
    return dir;
  } catch {
    // write them
  }
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  console.log(`peers: writing ${shape.runs} runs × ${shape.tags} tags × ${shape.steps} steps`);
  const out = await new Deno.Command(python, {
    args: [
      `${HERE}/loader.py`,
      "generate",
      dir,
      "--runs",
      String(shape.runs),
      "--tags",
      String(shape.tags),
      "--steps",
      String(shape.steps),
    ],
    stderr: "inherit",
    stdout: "piped",
  }).output();
  if (!out.success) throw new Error("writing the event folders failed");
  await Deno.writeTextFile(`${dir}/.complete`, text(out.stdout));
  return dir;
}

interface LoadResult {
  firstChartS: number;
  totalS: number;
  peakMb: number;
  kept: number;
  detail: string;
}

async function accumulator(python: string, dir: string, scalars: number): Promise<LoadResult> {
  const t0 = Date.now() / 1000;
  const out = await new Deno.Command(python, {
    args: [`${HERE}/loader.py`, "accumulate", dir, "--scalars", String(scalars)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`EventAccumulator failed: ${text(out.stderr).slice(-2000)}`);
  const r = lastJson(text(out.stdout));
  return {
    firstChartS: r.first_chart - t0,
    totalS: r.total - t0,
    peakMb: r.peak_rss_mb,
    kept: r.points_kept,
    detail: `${r.series} series; Python with TensorBoard imported ${num(r.import_rss_mb)} MB`,
  };
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** `tensorboard --load_fast true`: polled over its HTTP API until every series is whole. */
async function dataServer(
  python: string,
  dir: string,
  shape: LoaderShape,
  limitS: number,
): Promise<LoadResult | string> {
  const port = freePort();
  const t0 = performance.now();
  const tb = new Deno.Command(python, {
    args: [
      "-m",
      "tensorboard.main",
      "--logdir",
      dir,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--load_fast",
      "true",
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let log = "";
  const pump = (async () => {
    for await (const c of tb.stderr) log += text(c);
  })();
  const runs = Array.from({ length: shape.runs }, (_, i) => `run${i}`);
  const tags = tagNames(shape.tags);
  const whole = new Map<string, number>(); // "run tag" → points when its last step arrived
  let firstChartS: number | null = null;
  let peakMb = 0;
  try {
    while (whole.size < runs.length * tags.length) {
      if ((performance.now() - t0) / 1000 > limitS) {
        return `not done in ${limitS} s (${whole.size} of ${runs.length * tags.length} series)`;
      }
      for (const run of runs) {
        for (const tag of tags) {
          if (whole.has(`${run} ${tag}`)) continue;
          try {
            const res = await fetch(
              `http://127.0.0.1:${port}/data/plugin/scalars/scalars?run=${run}&tag=${
                encodeURIComponent(tag)
              }`,
            );
            if (!res.ok) {
              await res.body?.cancel();
              continue;
            }
            const pts = await res.json() as [number, number, number][];
            if (pts.at(-1)?.[1] === shape.steps - 1) whole.set(`${run} ${tag}`, pts.length);
          } catch {
            // not listening yet
          }
        }
      }
      if (firstChartS === null && runs.every((r) => whole.has(`${r} ${tags[0]}`))) {
        firstChartS = (performance.now() - t0) / 1000;
      }
      peakMb = Math.max(peakMb, treePeakMb(tb.pid));
      await new Promise((r) => setTimeout(r, 250));
    }
    const totalS = (performance.now() - t0) / 1000;
    peakMb = Math.max(peakMb, treePeakMb(tb.pid));
    const kept = [...whole.values()].reduce((a, b) => a + b, 0);
    return { firstChartS: firstChartS!, totalS, peakMb, kept, detail: "" };
  } finally {
    try {
      tb.kill("SIGTERM");
    } catch {
      // already gone
    }
    await tb.status;
    await pump;
    if (log.includes("Traceback")) console.log(log.slice(-2000));
  }
}

/** `gpuctl import-run` for each run folder in turn, then the charts. */
async function gpuctlImport(dir: string, shape: LoaderShape): Promise<LoadResult> {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-bench-peers-loader-" });
  const server = await startServerProcess(home);
  const env = { GPUCTL_SERVER_URL: server.url, GPUCTL_TOKEN: server.adminToken, NO_COLOR: "1" };
  const cli = [Deno.execPath(), ...taskArgs("cli")];
  try {
    // The CLI's modules are compiled once, as for anyone who ran it before.
    await new Deno.Command(cli[0], { args: [...cli.slice(1), "import-run", "--help"], cwd: ROOT })
      .output();
    const t0 = performance.now();
    const runIds: string[] = [];
    let cliPeakKb = 0;
    let stored = 0;
    for (let r = 0; r < shape.runs; r++) {
      const timeFile = `${home}/time-${r}`;
      const out = await new Deno.Command("/usr/bin/time", {
        args: [
          "-f",
          "%M",
          "-o",
          timeFile,
          ...cli,
          "import-run",
          `${dir}/run${r}`,
          "--project",
          "peers-loader",
          "--json",
        ],
        cwd: ROOT,
        env,
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!out.success) throw new Error(`import-run failed: ${text(out.stderr).slice(-2000)}`);
      const summary = lastJson(text(out.stdout));
      runIds.push(summary.run_id);
      stored += summary.points;
      cliPeakKb = Math.max(cliPeakKb, Number((await Deno.readTextFile(timeFile)).trim()));
    }
    const chart = async (tag: string) => {
      const res = await fetch(`${server.url}/api/runs/metrics:query`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${server.adminToken}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ runs: runIds, keys: [tag], max_points: 2000 }),
      });
      if (!res.ok) throw new Error(`metrics:query ${res.status}: ${await res.text()}`);
      const body = await res.json() as { series: { steps: number[] }[] };
      if (
        body.series.length !== shape.runs ||
        body.series.some((s) => s.steps.at(-1) !== shape.steps - 1)
      ) throw new Error(`the chart of ${tag} is not whole`);
      return body.series.reduce((n, s) => n + s.steps.length, 0);
    };
    const tags = tagNames(shape.tags);
    let drawn = await chart(tags[0]);
    const firstChartS = (performance.now() - t0) / 1000;
    for (const tag of tags.slice(1)) drawn += await chart(tag);
    const totalS = (performance.now() - t0) / 1000;
    const serverMb = treePeakMb(server.proc.child.pid);
    return {
      firstChartS,
      totalS,
      peakMb: serverMb + cliPeakKb / 1024,
      kept: stored,
      detail: `server ${num(serverMb)} MB + import-run ${num(cliPeakKb / 1024)} MB; ` +
        `charts drawn from ${num(drawn)} points (2,000 a series)`,
    };
  } finally {
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
}

/** The loader rows: each TensorBoard loader against gpuctl's import and chart. */
export async function benchLoader(
  report: Report,
  python: string | null,
  cache: string,
  shape: LoaderShape,
  why: string,
): Promise<void> {
  const what = `${shape.runs} runs × ${shape.tags} tags × ${num(shape.steps)} steps`;
  const name = (peer: string, measure: string) => `peer: ${peer}, ${what}: ${measure}`;
  if (python === null) {
    for (const peer of ["TensorBoard EventAccumulator", "TensorBoard data server"]) {
      report({
        name: name(peer, "load"),
        value: { value: NaN, unit: "s", text: why },
        baseline: null,
        target: null,
        note: "for comparison",
      });
    }
    return;
  }
  const dir = await eventFolders(python, cache, shape);
  console.log("peers: gpuctl import-run …");
  const g = await gpuctlImport(dir, shape);
  const peers: [string, () => Promise<LoadResult | string>][] = [
    [
      "TensorBoard EventAccumulator, every scalar (size_guidance scalars 0)",
      () => accumulator(python, dir, 0),
    ],
    [
      "TensorBoard EventAccumulator, its default (10,000 scalars a tag)",
      () => accumulator(python, dir, -1),
    ],
    [
      "TensorBoard data server (--load_fast true, 1,000 scalars a tag)",
      () => dataServer(python, dir, shape, 600),
    ],
  ];
  const gs = (v: number, unit: string, t: string) => ({ value: v, unit, text: `gpuctl ${t}` });
  for (const [peer, load] of peers) {
    console.log(`peers: ${peer} …`);
    const r = await load().catch((e) => `failed: ${e.message}`);
    if (typeof r === "string") {
      report({
        name: name(peer, "load"),
        value: { value: NaN, unit: "s", text: r },
        baseline: gs(g.totalS, "s", `import-run + charts ${num(g.totalS)} s`),
        target: null,
        note: "for comparison",
      });
      continue;
    }
    report({
      name: name(peer, "time to first chart"),
      value: { value: r.firstChartS, unit: "s", text: `${num(r.firstChartS)} s` },
      baseline: gs(g.firstChartS, "s", `import-run + first chart ${num(g.firstChartS)} s`),
      target: null,
      note: "for comparison",
    });
    report({
      name: name(peer, "total (every tag charted)"),
      value: { value: r.totalS, unit: "s", text: `${num(r.totalS)} s` },
      baseline: gs(g.totalS, "s", `${num(g.totalS)} s`),
      target: null,
      note: "for comparison",
    });
    report({
      name: name(peer, "peak memory"),
      value: {
        value: r.peakMb,
        unit: "MB",
        text: `${num(r.peakMb)} MB${r.detail ? ` (${r.detail})` : ""}`,
      },
      baseline: gs(g.peakMb, "MB", `${num(g.peakMb)} MB (${g.detail})`),
      target: null,
      note: "for comparison",
    });
    report({
      name: name(peer, "points kept"),
      value: { value: r.kept, unit: "points" },
      baseline: gs(g.kept, "points", `${num(g.kept)} points stored`),
      target: null,
      note: "for comparison",
    });
  }
}
