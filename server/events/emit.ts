/**
 * `emitEvent`: stores an event with its job's secret values masked, then publishes it on the
 * bus once its transaction commits.
 */
import type { EventRecord } from "../../protocol/objects.ts";
import { events as eventsDb, jobs as jobsDb, runs as runsDb } from "../db/mod.ts";
import { maskSecretsDeep, maskSecretText, secretValues } from "../../protocol/secret_env.ts";
import type { NewEvent } from "../db/events.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";

/**
 * Stores an event and, once its transaction commits, publishes it on the bus. An event of a
 * job (or of a job's run) has the job's secret values masked in its message and data, on the
 * way in: every face, rule, webhook and diagnosis reads the stored form.
 */
export function emitEvent(ctx: Context, e: Omit<NewEvent, "ts"> & { ts?: string }): EventRecord {
  const secrets = eventSecrets(ctx, e);
  const masked = secrets.length
    ? {
      ...e,
      message: maskSecretText(e.message, secrets),
      data: e.data && maskSecretsDeep(e.data, secrets) as Record<string, unknown>,
    }
    : e;
  const record = eventsDb.insertEvent(ctx.db, {
    ...masked,
    ts: e.ts ?? ctx.now().toISOString(),
  });
  ctx.db.afterCommit(() => ctx.bus.publish(topics.events, record));
  return record;
}

/** The secret values of the event's job (named, or its run's). */
function eventSecrets(ctx: Context, e: { job_id?: string | null; run_id?: string | null }) {
  const jobId = e.job_id ?? (e.run_id ? runsDb.getRun(ctx.db, e.run_id)?.job_id : null);
  const job = jobId ? jobsDb.getJob(ctx.db, jobId) : null;
  return job ? secretValues(job.env, job.secret_env) : [];
}
