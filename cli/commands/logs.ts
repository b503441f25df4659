// `gpuctl logs [-f] JOB|RUN`

import { z } from "zod";
import { EXIT_INTERRUPTED, EXIT_OK } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { DATA_FLAGS, optionalInt } from "../flags.ts";
import { findLogTarget, followJob, followRun, printLog } from "../follow_logs.ts";

export const logsCommand = defineCommand({
  name: "logs",
  summary: "the output of a job (its current attempt) or of a run",
  args: ["JOB|RUN"],
  description: `With -f the log streams until the job ends, going on to each new attempt, and
gpuctl exits with the job's exit code. A dropped connection or a restarted server is
reconnected to where the stream stopped: no line is missed or printed twice.`,
  examples: ["gpuctl logs -f j-3f9a2c7d1e0b", "gpuctl logs --tail 20 r-8c1d0e2f3a4b"],
  flags: {
    follow: { short: "f", schema: z.boolean().optional(), help: "stream new lines until it ends" },
    tail: { arg: "N", schema: optionalInt(1, 2000), help: "the last N lines (default 200)" },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const target = await findLogTarget(client, args[0]);
    const o = { json: flags.json };
    if (flags.follow) {
      if (target.kind === "job") {
        // From the current attempt on: earlier attempts are done, `gpuctl logs RUN` shows them.
        return await followJob(client, ctx, target.job.id, {
          ...o,
          fromAttempt: target.job.attempt,
        });
      }
      const { ended } = await followRun(client, ctx, target.run.id, {
        ...o,
        maxSteps: target.run.max_steps,
      });
      return ended ? EXIT_OK : EXIT_INTERRUPTED;
    }
    const runId = target.kind === "job" ? target.job.run_id : target.run.id;
    if (runId === null) {
      throw new Error(
        `job ${args[0]} has not started yet (it is ${
          target.kind === "job" ? target.job.status : ""
        }): ` +
          `follow it with gpuctl logs -f ${args[0]}`,
      );
    }
    await printLog(client, ctx, runId, flags.tail ?? 200, o);
    return EXIT_OK;
  },
});
