/**
 * What the loop's runs show afterwards, read from the server (REST, as a person checking the
 * loop's work would): how much of the GPUs' time no run held them, and whether every run's
 * code checks out again as the bytes it ran.
 */
import { runInProcess } from "../../cli/_test_server.ts";
import type { api } from "../../tests/_processes.ts";
import type { Experiment } from "./loop.ts";

/** A run's time on a GPU: from its process start to its end (ms since the epoch). */
export interface Busy {
  start: number;
  end: number | null;
}

/** The share of `slots` GPUs' time in [from, to] spent in these intervals (clipped to it). */
export function heldShare(spans: readonly Busy[], slots: number, from: number, to: number): number {
  return 1 - idleFraction(spans, slots, from, to);
}

/**
 * The share of `slots` GPUs' time in [from, to] that no run held: 1 − Σ overlap / (slots ×
 * window). A run still going at `to` counts to `to`.
 */
export function idleFraction(
  busy: readonly Busy[],
  slots: number,
  from: number,
  to: number,
): number {
  const window = to - from;
  if (window <= 0 || slots <= 0) return 0;
  let held = 0;
  for (const b of busy) {
    const start = Math.max(b.start, from);
    const end = Math.min(b.end ?? to, to);
    if (end > start) held += end - start;
  }
  return Math.max(0, 1 - held / (slots * window));
}

/** The most runs that held GPUs at one moment. */
export function peakConcurrency(busy: readonly Busy[]): number {
  const edges = busy.flatMap((b) => [
    { t: b.start, d: 1 },
    { t: b.end ?? Infinity, d: -1 },
  ]).sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let peak = 0;
  for (const e of edges) peak = Math.max(peak, now += e.d);
  return peak;
}

type Call = ReturnType<typeof api>;

/** What the server holds about one of the loop's runs. */
export interface RunFacts {
  exp: Experiment;
  busy: Busy | null;
  /** From the job's dispatch to its process start: the GPU is the job's, nothing runs yet. */
  starting: Busy | null;
  parentRun: string | null;
  mark: { mark: string; reason: string; at: string } | null;
  /** When its job was submitted (a run is created later, at dispatch). */
  submittedAt: string;
  /** Its final eval/loss (the primary metric), as the server has it. */
  value: number | null;
  /** The SHA-256 its process printed of its own train.py, and the GPUs it was given. */
  ranSha: string | null;
  gpus: string | null;
}

/** The server's record of each experiment that got a run. */
export async function runFacts(
  call: Call,
  experiments: readonly Experiment[],
): Promise<RunFacts[]> {
  const out: RunFacts[] = [];
  for (const exp of experiments) {
    if (!exp.runId) continue;
    const run = (await call("GET", `/api/runs/${exp.runId}`)).json;
    const logs = (await call("GET", `/api/runs/${exp.runId}/logs?after_seq=0&limit=100`)).json;
    const lines: string[] = logs.lines.map((l: { text: string }) => l.text);
    const dispatched = (await call(
      "GET",
      `/api/events?job_id=${exp.jobId}&type=JOB_DISPATCHED&limit=1`,
    )).json.items[0];
    out.push({
      exp,
      busy: run.started_at
        ? {
          start: Date.parse(run.started_at),
          end: run.finished_at ? Date.parse(run.finished_at) : null,
        }
        : null,
      starting: run.started_at && dispatched
        ? { start: Date.parse(dispatched.ts), end: Date.parse(run.started_at) }
        : null,
      parentRun: run.parent_run,
      mark: run.mark,
      submittedAt: (await call("GET", `/api/jobs/${exp.jobId}`)).json.created_at,
      value: run.primary_metric?.latest ?? null,
      ranSha: lines.find((l) => l.startsWith("code sha256 "))?.slice(12) ?? null,
      gpus: lines.find((l) => l.startsWith("gpus "))?.slice(5) ?? null,
    });
  }
  return out;
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** How one run's code came back from `gpuctl run checkout`. */
export interface CodeCheck {
  runId: string;
  ok: boolean;
  problem: string | null;
}

/**
 * `gpuctl run checkout RUN DIR` for each run, then its train.py compared with the source the
 * loop gave it and with the SHA-256 its process printed of the file it ran.
 */
export async function checkCode(
  facts: readonly RunFacts[],
  server: { url: string; token: string },
  dir: string,
): Promise<CodeCheck[]> {
  const env = { GPUCTL_SERVER_URL: server.url, GPUCTL_TOKEN: server.token, NO_COLOR: "1" };
  const out: CodeCheck[] = [];
  for (const f of facts) {
    const runId = f.exp.runId!;
    const target = `${dir}/${runId}`;
    const co = await runInProcess(["run", "checkout", runId, target], env);
    if (co.code !== 0) {
      out.push({ runId, ok: false, problem: `checkout exit ${co.code}: ${co.stderr.trim()}` });
      continue;
    }
    const bytes = await Deno.readFile(`${target}/train.py`);
    const got = await sha256(bytes);
    const given = await sha256(new TextEncoder().encode(f.exp.source));
    const problem = got !== given
      ? "train.py differs from the code the loop gave the run"
      : f.ranSha !== null && got !== f.ranSha
      ? "train.py differs from the file the process ran"
      : null;
    out.push({ runId, ok: problem === null, problem });
    await Deno.remove(target, { recursive: true });
  }
  return out;
}
