/**
 * When the first queued jobs may start: a rough forecast for the status overview ("can I
 * submit another job now?"), never a promise. GPUs come free when the runs holding them are
 * expected to end, from their progress (steps done over time taken, to `max_steps`); a run
 * with no known end holds its GPUs for good in the forecast, so a job waiting only on such a
 * run has no estimate (null) rather than a made-up one.
 *
 * Jobs are taken in queue order (the scheduler's: priority, then submission) and each one
 * ahead claims the GPUs it will start on, so a later job is never forecast to start on
 * GPUs an earlier one will take first. A claim is held until the end of the forecast (a
 * queued job's length is unknown).
 *
 * @module
 */

/** A node the forecast may place jobs on. */
export interface ForecastNode {
  id: string;
  /** GPUs the node has. */
  gpus: number;
  /** CPU-only jobs it runs at once. */
  cpu_slots: number;
}

/** An attempt holding slots now, with its expected end (ms since epoch) when progress tells it. */
export interface HeldSlots {
  node_id: string;
  gpus: number;
  ends_at: number | null;
}

/** A queued job in queue order; `node` pins it to one node. */
export interface ForecastJob {
  id: string;
  gpus: number;
  node: string | null;
}

/** A job's forecast start (ms since epoch; `now` when it fits at once) and where; null: unknown. */
export interface StartForecast {
  job_id: string;
  starts_at: number | null;
  node_id: string | null;
}

interface Release {
  at: number;
  gpus: number;
  cpu: number;
}

/**
 * Forecasts when each of `queue` starts, given the nodes online and the slots held now.
 * A job that needs more GPUs than any eligible node has never starts (null).
 */
export function estimateStarts(
  queue: ForecastJob[],
  nodes: ForecastNode[],
  held: HeldSlots[],
  now: number,
): StartForecast[] {
  // Per node: free slots now, and the releases to come, in time order.
  const state = new Map(nodes.map((n) => [n.id, {
    node: n,
    freeGpus: n.gpus,
    freeCpu: n.cpu_slots,
    releases: [] as Release[],
  }]));
  for (const h of held) {
    const s = state.get(h.node_id);
    if (!s) continue;
    const cpu = h.gpus === 0 ? 1 : 0;
    s.freeGpus -= h.gpus;
    s.freeCpu -= cpu;
    if (h.ends_at !== null) s.releases.push({ at: Math.max(now, h.ends_at), gpus: h.gpus, cpu });
  }
  for (const s of state.values()) s.releases.sort((a, b) => a.at - b.at);

  return queue.map((job) => {
    let best: { at: number; node: string } | null = null;
    for (const s of state.values()) {
      if (job.node !== null && s.node.id !== job.node) continue;
      const at = earliestFit(s, job.gpus, now);
      if (at !== null && (best === null || at < best.at)) best = { at, node: s.node.id };
    }
    if (best === null) return { job_id: job.id, starts_at: null, node_id: null };
    // The job claims its slots from its start on: they stay taken in the forecast.
    const s = state.get(best.node)!;
    claim(s, job.gpus, best.at);
    return { job_id: job.id, starts_at: best.at, node_id: best.node };
  });
}

type NodeForecast = { freeGpus: number; freeCpu: number; releases: Release[] };

/** The first moment the node has the job's slots free, or null if it never will. */
function earliestFit(s: NodeForecast, gpus: number, now: number): number | null {
  const fits = (freeGpus: number, freeCpu: number) => gpus === 0 ? freeCpu >= 1 : freeGpus >= gpus;
  let freeGpus = s.freeGpus;
  let freeCpu = s.freeCpu;
  if (fits(freeGpus, freeCpu)) return now;
  for (const r of s.releases) {
    freeGpus += r.gpus;
    freeCpu += r.cpu;
    if (fits(freeGpus, freeCpu)) return r.at;
  }
  return null;
}

/**
 * Takes the job's slots from `at` on: releases up to `at` are folded into the free count,
 * then the slots are taken. What the job took never comes back in this forecast.
 */
function claim(s: NodeForecast, gpus: number, at: number): void {
  while (s.releases.length && s.releases[0].at <= at) {
    const r = s.releases.shift()!;
    s.freeGpus += r.gpus;
    s.freeCpu += r.cpu;
  }
  if (gpus === 0) s.freeCpu -= 1;
  else s.freeGpus -= gpus;
}

/**
 * When a run is expected to end from its progress: the time per step so far applied to the
 * steps left. Null without `max_steps`, without a step yet, or without a start time.
 */
export function expectedEnd(
  run: { step: number | null; max_steps: number | null; started_at: string | null },
  now: number,
): number | null {
  if (!run.max_steps || !run.step || run.step <= 0 || !run.started_at) return null;
  const started = Date.parse(run.started_at);
  if (!Number.isFinite(started) || now <= started) return null;
  const left = Math.max(0, run.max_steps - run.step);
  return now + (now - started) / run.step * left;
}
