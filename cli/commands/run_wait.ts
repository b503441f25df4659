// `gpuctl run wait`: blocks until a run, a job's current run or a sweep finishes, reaches a
// step or raises an event (or an anomaly), through `GET /api/{runs,jobs,sweeps}/{id}/wait`.

import { z } from "zod";
import { ANOMALY_EVENT_TYPES } from "../../protocol/event_types.ts";
import { DEFAULT_WAIT_S, MAX_WAIT_S, type WaitResult } from "../../protocol/waits.ts";
import { EXIT_FAILURE, EXIT_OK } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { DATA_FLAGS, optionalInt, optionalText } from "../flags.ts";
import { clean, paintStatus, printFields } from "../output.ts";

/** The exit status of a wait that timed out, as timeout(1) has it. */
export const EXIT_TIMEOUT = 124;

/** Which wait route an id takes: runs are r-…, jobs j-…, sweeps s-…. */
function waitPath(id: string): string {
  const kind = id.startsWith("j-") ? "jobs" : id.startsWith("s-") ? "sweeps" : "runs";
  return `/api/${kind}/${encodeURIComponent(id)}/wait`;
}

/** A run that ended any other way than SUCCEEDED. */
const FAILED = new Set(["FAILED", "CANCELLED", "LOST"]);

export const waitCommand = defineCommand({
  name: "run wait",
  summary: "wait until a run (a job's run, a sweep) finishes, reaches a step, or raises an event",
  args: ["RUN|JOB|SWEEP"],
  examples: [
    "gpuctl run wait r-8c1d0e2f3a4b",
    "gpuctl run wait j-41aa09c2d7e1 --until step>=1000 --timeout 600",
    "gpuctl run wait r-8c1d0e2f3a4b --until CHECKPOINT_CREATED --json",
  ],
  description: `Wakes early on any anomaly (${ANOMALY_EVENT_TYPES.join(", ")}) and says why ` +
    "it woke, with the run's diagnosis. Exit status: 0 when what was awaited happened (a " +
    "finished run SUCCEEDED), 1 when the run ended otherwise or an anomaly woke the wait, " +
    `${EXIT_TIMEOUT} when the timeout passed first. --after-event-id N (the last_event_id of ` +
    "a previous wait) waits on past an anomaly.",
  flags: {
    until: {
      arg: "WHAT",
      schema: optionalText(64),
      help: '"finished" (default), "step>=N", or an event type',
    },
    timeout: {
      arg: "S",
      schema: z.coerce.number().min(1).max(MAX_WAIT_S).default(DEFAULT_WAIT_S),
      help: `seconds to wait at most (default ${DEFAULT_WAIT_S}, at most ${MAX_WAIT_S})`,
    },
    afterEventId: {
      arg: "N",
      schema: optionalInt(0, Number.MAX_SAFE_INTEGER),
      help: "only events after this id wake the wait",
    },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const w = await client.get<WaitResult>(waitPath(args[0]), {
      until: flags.until ?? undefined,
      timeout_s: flags.timeout,
      after_event_id: flags.afterEventId,
    }, { timeoutMs: (flags.timeout + 60) * 1000 });
    if (flags.json) ctx.io.out(JSON.stringify(w));
    else {
      printFields(ctx, [
        ["woke", w.reason],
        ["run", clean(w.run_id ?? "")],
        ["status", w.status ? paintStatus(ctx, w.status) : ""],
        ["step", w.step === null ? "" : String(w.step)],
        ["event", clean(w.event ? `${w.event.type}: ${w.event.message}` : "")],
        ["last event", String(w.last_event_id)],
        ["waited", `${w.waited_s}s`],
        ["summary", clean(w.summary)],
      ]);
    }
    if (w.reason === "timeout") return EXIT_TIMEOUT;
    if (w.reason === "anomaly") return EXIT_FAILURE;
    return w.status !== null && FAILED.has(w.status) ? EXIT_FAILURE : EXIT_OK;
  },
});
