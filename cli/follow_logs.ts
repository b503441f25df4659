// The log of a job or a run, printed or followed. Following a job goes from attempt to
// attempt (each attempt is a run of its own) until the job ends, and resumes each run's
// stream after a disconnect or a server restart from the last line printed, so no line is
// missed or printed twice.

import type { Job, LogLine, Page, Run } from "../protocol/objects.ts";
import { ApiError, ConnectionError, type GpuctlClient } from "./client.ts";
import { type CommandContext, EXIT_INTERRUPTED } from "./command.ts";
import { cleanLine, paint, progressBar } from "./output.ts";
import { followSse, sleep } from "./sse.ts";

/** Job statuses after which nothing more happens to it by itself. */
export const FINAL_JOB_STATUSES: readonly string[] = ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"];

/** How often a queued job and a running run's step are looked at. */
const POLL_MS = 500;

/** What `gpuctl logs ID` names: a job (its current attempt's run) or a run. */
export type LogTarget = { kind: "job"; job: Job } | { kind: "run"; run: Run };

/** Finds what an id names: a job first, else a run; a NotFound naming both otherwise. */
export async function findLogTarget(client: GpuctlClient, id: string): Promise<LogTarget> {
  const path = (kind: string) => `/api/${kind}/${encodeURIComponent(id)}`;
  try {
    return { kind: "job", job: await client.get<Job>(path("jobs")) };
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
  }
  try {
    return { kind: "run", run: await client.get<Run>(path("runs")) };
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      throw new ApiError(
        404,
        "NotFound",
        `No job or run "${id}": list them with gpuctl job list or gpuctl run list`,
      );
    }
    throw err;
  }
}

// Linux signal numbers, for the 128 + n a shell reports for a process a signal ended.
const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGXCPU: 24,
};

/**
 * The exit code a finished job stands for, as a shell would give it: its process's, else
 * 128 + the signal that ended it, else 0 for success and 1.
 */
export function jobExitCode(job: Job): number {
  if (job.exit_code !== null && job.exit_code >= 0 && job.exit_code <= 255) return job.exit_code;
  const signal = job.signal === null ? undefined : SIGNALS[job.signal.toUpperCase()] ??
    SIGNALS[`SIG${job.signal.toUpperCase()}`];
  if (signal !== undefined && job.status !== "CANCELLED") return 128 + signal;
  return job.status === "SUCCEEDED" ? 0 : 1;
}

/** How lines are printed. */
export interface PrintOptions {
  /** Each line as the API's JSON object, one per line. */
  json?: boolean;
}

function printLines(ctx: CommandContext, lines: LogLine[], o: PrintOptions): void {
  for (const l of lines) {
    if (o.json) ctx.io.out(JSON.stringify(l));
    else if (l.stream === "system") ctx.io.out(paint(ctx, "dim", cleanLine(l.text)));
    else ctx.io.out(cleanLine(l.text));
  }
}

/** Prints the last `tail` lines of a run. */
export async function printLog(
  client: GpuctlClient,
  ctx: CommandContext,
  runId: string,
  tail: number,
  o: PrintOptions,
): Promise<void> {
  const body = await client.get<{ lines: LogLine[] }>(
    `/api/runs/${encodeURIComponent(runId)}/logs`,
    { limit: tail },
  );
  if (o.json) ctx.io.out(JSON.stringify(body));
  else printLines(ctx, body.lines, o);
}

/** Retries a read while the server cannot be reached (it may be restarting). */
async function patiently<T>(ctx: CommandContext, read: () => Promise<T>): Promise<T> {
  let told = false;
  for (let wait = 250;; wait = Math.min(wait * 2, 5000)) {
    try {
      return await read();
    } catch (err) {
      if (!(err instanceof ConnectionError) || ctx.signal?.aborted) throw err;
      if (!told) ctx.io.err(`gpuctl: ${err.message}; trying again`);
      told = true;
      await sleep(wait, ctx.signal);
    }
  }
}

/**
 * Streams a run's lines after `after` (a line's seq; "0": from the first) until the run ends
 * (`ended`) or the user interrupts; `lastId` is the last line's seq seen. With `maxSteps`, a
 * progress bar shows the run's step on a terminal.
 */
export async function followRun(
  client: GpuctlClient,
  ctx: CommandContext,
  runId: string,
  o: PrintOptions & { maxSteps?: number | null; after?: string },
): Promise<{ ended: boolean; lastId: string }> {
  let lastId = o.after ?? "0";
  // A stream opened before the run started can stall on the server when the run starts
  // (server/http/sse.ts: a pull that enqueues nothing after RUN_STARTED): wait for the start.
  const runPath = `/api/runs/${encodeURIComponent(runId)}`;
  while ((await patiently(ctx, () => client.get<Run>(runPath))).status === "QUEUED") {
    await sleep(POLL_MS, ctx.signal);
    if (ctx.signal?.aborted) return { ended: false, lastId };
  }
  const progress = o.maxSteps && ctx.io.status && !o.json
    ? showProgress(client, ctx, runId, o.maxSteps)
    : null;
  try {
    const path = `/api/runs/${encodeURIComponent(runId)}/logs/stream`;
    for await (
      const m of followSse(client, path, {
        lastEventId: lastId,
        signal: ctx.signal,
        onDisconnect: (why) => ctx.io.err(`gpuctl logs: lost the stream (${why}); reconnecting`),
        onReconnect: () => ctx.io.err("gpuctl logs: reconnected"),
      })
    ) {
      if (m.event === "end") return { ended: true, lastId };
      if (m.event === undefined) {
        printLines(ctx, (JSON.parse(m.data) as { lines: LogLine[] }).lines, o);
        lastId = m.id ?? lastId;
      }
    }
    return { ended: false, lastId };
  } finally {
    await progress?.stop();
  }
}

function showProgress(client: GpuctlClient, ctx: CommandContext, runId: string, max: number) {
  const stop = new AbortController();
  const done = (async () => {
    while (!stop.signal.aborted) {
      try {
        const run = await client.get<Run>(`/api/runs/${encodeURIComponent(runId)}`);
        if (run.step !== null) ctx.io.status!(progressBar(run.step, max, ctx.columns));
      } catch {
        // The bar is a courtesy: the log stream reports outages.
      }
      await sleep(1000, stop.signal);
    }
  })();
  return {
    async stop() {
      stop.abort();
      await done;
      ctx.io.status!("");
    },
  };
}

/**
 * Follows a job's log across its attempts, from attempt `fromAttempt` on, until the job ends;
 * resolves to its exit code (or EXIT_INTERRUPTED). Each attempt is a run of its own, taken
 * in attempt order, so a short attempt that ended between two looks is still printed.
 */
export async function followJob(
  client: GpuctlClient,
  ctx: CommandContext,
  jobId: string,
  o: PrintOptions & { fromAttempt?: number },
): Promise<number> {
  const jobPath = `/api/jobs/${encodeURIComponent(jobId)}`;
  const readJob = () => patiently(ctx, () => client.get<Job>(jobPath));
  const readRuns = () =>
    patiently(ctx, () => client.get<Page<Run>>("/api/runs", { job_id: jobId, limit: 1000 }));
  let followed: Run | null = null;
  let after = "0";
  let attempt = (o.fromAttempt ?? 1) - 1;
  for (;;) {
    // The job first, then its runs: a job that has ended has all its runs by then.
    const job = await readJob();
    const next = (await readRuns()).items.filter((r) => r.attempt > attempt)
      .sort((a, b) => a.attempt - b.attempt)[0];
    let run: Run | null = null;
    if (next) {
      if (followed !== null && !o.json) {
        ctx.io.out(paint(ctx, "dim", `--- attempt ${next.attempt} (run ${next.id}) ---`));
      }
      run = followed = next;
      attempt = next.attempt;
      after = "0";
    } else if (followed && job.run_id === followed.id && job.status === "RUNNING") {
      run = followed; // the same attempt runs again: reattached after its node came back
    } else if (FINAL_JOB_STATUSES.includes(job.status)) {
      if (!o.json) {
        ctx.io.err(
          `gpuctl: job ${job.id} ${job.status}` +
            (job.exit_code !== null ? ` with exit code ${job.exit_code}` : "") +
            (job.reason ? `: ${cleanLine(job.reason)}` : ""),
        );
      }
      return jobExitCode(job);
    }
    if (run) {
      const r = await followRun(client, ctx, run.id, { ...o, maxSteps: job.max_steps, after });
      if (!r.ended) return EXIT_INTERRUPTED;
      after = r.lastId;
      if (!next) await sleep(POLL_MS, ctx.signal);
    } else {
      await sleep(POLL_MS, ctx.signal);
    }
    if (ctx.signal?.aborted) return EXIT_INTERRUPTED;
  }
}
