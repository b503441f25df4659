// `gpuctl event list` and `gpuctl event-hook -- CMD…`

import { z } from "zod";
import type { EventRecord, Page } from "../../protocol/objects.ts";
import { SEVERITIES } from "../../protocol/vocabulary.ts";
import { withQuery } from "../client.ts";
import { type CommandContext, EXIT_OK, UsageError } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import {
  CONNECTION_FLAGS,
  LIST_FLAGS,
  optionalInt,
  optionalText,
  pageQuery,
  textList,
} from "../flags.ts";
import { ago, clean, paintStatus, printPage } from "../output.ts";
import { followSse } from "../sse.ts";

const severity = {
  arg: "S",
  schema: z.enum(SEVERITIES).optional(),
  help: `only this severity or worse: ${SEVERITIES.join(", ")}`,
};

const list = defineCommand({
  name: "event list",
  summary: "events (lifecycle and anomalies), newest first",
  examples: [
    "gpuctl event list --severity warning",
    "gpuctl event list --run r-8c1d0e2f3a4b --json",
  ],
  flags: {
    severity,
    type: { arg: "TYPE", schema: optionalText(), help: "only this type (LOSS_NAN, RUN_FAILED, …)" },
    run: { arg: "RUN", schema: optionalText(), help: "only this run's" },
    job: { arg: "JOB", schema: optionalText(), help: "only this job's" },
    node: { arg: "NODE", schema: optionalText(), help: "only this node's" },
    ...LIST_FLAGS,
  },
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<EventRecord>>("/api/events", {
      severity: flags.severity,
      type: flags.type,
      run_id: flags.run,
      job_id: flags.job,
      node_id: flags.node,
      ...pageQuery(flags),
    });
    const now = ctx.now();
    printPage(
      ctx,
      flags.json,
      page,
      [
        { header: "ID", cell: (e) => String(e.id), right: true },
        { header: "WHEN", cell: (e) => ago(e.ts, now) },
        { header: "SEVERITY", cell: (e) => paintStatus(ctx, e.severity) },
        { header: "TYPE", cell: (e) => clean(e.type) },
        { header: "ON", cell: (e) => clean(e.run_id ?? e.job_id ?? e.node_id ?? ""), flex: true },
        { header: "MESSAGE", cell: (e) => clean(e.message), flex: true },
      ],
      "No events.",
      "gpuctl event list",
    );
    return EXIT_OK;
  },
});

/** `gpuctl event`. */
export const eventCommand = defineGroup(
  "event",
  "list events",
  [list],
  "gpuctl event list --severity critical",
);

/** The environment a hook's command gets for one event (besides the CLI's own). */
export function hookEnv(e: EventRecord): Record<string, string> {
  return {
    GPUCTL_EVENT_ID: String(e.id),
    GPUCTL_EVENT_TYPE: e.type,
    GPUCTL_EVENT_SEVERITY: e.severity,
    GPUCTL_EVENT_MESSAGE: e.message,
    GPUCTL_EVENT_RUN_ID: e.run_id ?? "",
    GPUCTL_EVENT_JOB_ID: e.job_id ?? "",
    GPUCTL_EVENT_NODE_ID: e.node_id ?? "",
  };
}

// Runs the hook's command for one event; its failure is reported, never thrown.
async function runHook(argv: string[], e: EventRecord, ctx: CommandContext): Promise<void> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.env)) if (v !== undefined) env[k] = v;
  const what = `event ${e.id} (${clean(e.type)})`;
  try {
    const child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd: ctx.cwd,
      env: { ...env, ...hookEnv(e) },
      clearEnv: true,
      stdin: "piped",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    const writer = child.stdin.getWriter();
    try {
      await writer.write(new TextEncoder().encode(JSON.stringify(e) + "\n"));
      await writer.close();
    } catch {
      // The command need not read its stdin.
    }
    const status = await child.status;
    if (!status.success) {
      ctx.io.err(
        `gpuctl event-hook: ${argv[0]} ${
          status.signal ? `was killed by ${status.signal}` : `exited ${status.code}`
        } for ${what}; going on with the next event`,
      );
    }
  } catch (err) {
    ctx.io.err(
      `gpuctl event-hook: cannot run ${argv[0]} for ${what}: ${(err as Error).message}; ` +
        "going on with the next event",
    );
  }
}

export const eventHookCommand = defineCommand({
  name: "event-hook",
  summary: "run a command once for each new event that matches",
  rest: "CMD…",
  description: `Follows the event stream and runs CMD once per matching event, one at a time,
with the event's JSON on its stdin and GPUCTL_EVENT_ID, GPUCTL_EVENT_TYPE,
GPUCTL_EVENT_SEVERITY, GPUCTL_EVENT_MESSAGE, GPUCTL_EVENT_RUN_ID, GPUCTL_EVENT_JOB_ID and
GPUCTL_EVENT_NODE_ID in its environment. It starts with the events after the newest one
(or after --after ID) and resumes where it stopped after a disconnect or a server restart
(Last-Event-ID), so no event is missed or handled twice. A CMD that fails is reported on
stderr and the hook goes on. Stop it with Ctrl-C.`,
  examples: [
    "gpuctl event-hook --severity critical -- notify-send gpuctl",
    `gpuctl event-hook --type RUN_FAILED --type OOM -- sh -c 'jq -r .message | mail -s "$GPUCTL_EVENT_TYPE" me'`,
  ],
  flags: {
    severity,
    type: { arg: "TYPE", schema: textList(), help: "only events of this type" },
    after: {
      arg: "ID",
      schema: optionalInt(0, Number.MAX_SAFE_INTEGER),
      help: "begin after this event id (default: the newest)",
    },
    ...CONNECTION_FLAGS,
  },
  async run({ flags, rest }, ctx) {
    if (rest.length === 0) throw new UsageError("CMD is required: put it after --");
    const client = await connect(flags, ctx);
    const after = flags.after ??
      ((await client.get<Page<EventRecord>>("/api/events", { limit: 1 })).items[0]?.id ?? 0);
    const types = new Set(flags.type);
    const path = withQuery("/api/events/stream", {
      severity: flags.severity,
      type: types.size === 1 ? flags.type[0] : undefined,
    });
    ctx.io.err(
      `gpuctl event-hook: running ${rest[0]} for each event after ${after}` +
        (flags.severity ? `, severity ${flags.severity} or worse` : "") +
        (types.size ? `, of type ${[...types].join(" or ")}` : ""),
    );
    for await (
      const m of followSse(client, path, {
        lastEventId: String(after),
        signal: ctx.signal,
        onDisconnect: (why) =>
          ctx.io.err(`gpuctl event-hook: lost the event stream (${why}); reconnecting`),
        onReconnect: () => ctx.io.err("gpuctl event-hook: reconnected"),
      })
    ) {
      if (m.event !== undefined) continue;
      const e = JSON.parse(m.data) as EventRecord;
      if (types.size && !types.has(e.type)) continue;
      await runHook(rest, e, ctx);
    }
    return EXIT_OK;
  },
});
