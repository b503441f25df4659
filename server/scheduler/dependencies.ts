/**
 * Dependency resolution for `after: [job id]`: which queued jobs may be placed now, which
 * keep waiting, and which can never start (DESIGN "Shapes", job submission).
 *
 * @module
 */

import type { JobStatus } from "../../protocol/vocabulary.ts";

/** A queued job and the jobs it runs after. */
export interface JobDependencies {
  id: string;
  after: string[];
}

/** A job that can never start, and why, in words for a person. */
export interface DependencyFailure {
  job_id: string;
  reason: string;
}

/** The outcome of resolving the dependencies of a set of queued jobs. */
export interface ResolvedDependencies {
  /** Every dependency SUCCEEDED (or there is none): hand these to placement. */
  ready: string[];
  /** Some dependency has not ended yet: keep these queued. */
  blocked: string[];
  /** Some dependency ended without success, is unknown, or waits on a cycle: fail these. */
  failed: DependencyFailure[];
}

/**
 * Splits queued jobs into ready, blocked and failed by the status of the jobs they run after.
 *
 * A job is ready when all of its `after` jobs SUCCEEDED. It fails when one of them ended
 * FAILED or CANCELLED, is unknown (`statusOf` returns undefined), is the job itself, or when
 * its blocked dependencies form a cycle among `jobs`. LOST is not terminal (the job may be
 * requeued), so it blocks like QUEUED, DISPATCHED and RUNNING. `ready` and `blocked` keep
 * input order.
 */
export function resolveDependencies(
  jobs: JobDependencies[],
  statusOf: (id: string) => JobStatus | undefined,
): ResolvedDependencies {
  const ready: string[] = [];
  const failed: DependencyFailure[] = [];
  const blocked: JobDependencies[] = [];

  for (const job of jobs) {
    let failure: string | null = null;
    let waits = false;
    for (const dep of job.after) {
      if (dep === job.id) {
        failure = `Dependency "${dep}" is the job itself: job "${job.id}" will not start`;
        break;
      }
      const status = statusOf(dep);
      if (status === undefined) {
        failure = `Dependency "${dep}" is unknown: job "${job.id}" will not start`;
        break;
      }
      if (status === "FAILED" || status === "CANCELLED") {
        failure = `Dependency "${dep}" ended ${status}: job "${job.id}" will not start`;
        break;
      }
      if (status !== "SUCCEEDED") waits = true;
    }
    if (failure !== null) failed.push({ job_id: job.id, reason: failure });
    else if (waits) blocked.push(job);
    else ready.push(job.id);
  }

  const cyclic = waitingOnCycle(blocked);
  for (const [jobId, dep] of cyclic) {
    failed.push({
      job_id: jobId,
      reason: `Dependency "${dep}" waits on a dependency cycle: job "${jobId}" will not start`,
    });
  }
  return {
    ready,
    blocked: blocked.filter((j) => !cyclic.has(j.id)).map((j) => j.id),
    failed,
  };
}

/**
 * Blocked jobs that can never become ready because they are on, or wait on, a cycle of
 * blocked jobs: what is left after repeatedly removing jobs none of whose blocked
 * dependencies remain (Kahn's algorithm). Maps each such job to one dependency on the cycle.
 * Only cycles among the given jobs are seen; a dependency outside them is assumed to end.
 */
function waitingOnCycle(blocked: JobDependencies[]): Map<string, string> {
  const byId = new Map(blocked.map((j) => [j.id, j]));
  const pending = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const job of blocked) {
    const deps = new Set(job.after.filter((d) => byId.has(d)));
    pending.set(job.id, deps.size);
    for (const d of deps) {
      const list = dependents.get(d);
      if (list === undefined) dependents.set(d, [job.id]);
      else list.push(job.id);
    }
  }
  const free = blocked.filter((j) => pending.get(j.id) === 0).map((j) => j.id);
  while (free.length > 0) {
    const id = free.pop() as string;
    pending.delete(id);
    for (const d of dependents.get(id) ?? []) {
      const n = (pending.get(d) as number) - 1;
      pending.set(d, n);
      if (n === 0) free.push(d);
    }
  }
  const stuck = new Map<string, string>();
  for (const id of pending.keys()) {
    const job = byId.get(id) as JobDependencies;
    stuck.set(id, job.after.find((d) => pending.has(d)) as string);
  }
  return stuck;
}
