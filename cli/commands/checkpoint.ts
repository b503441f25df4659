// `gpuctl checkpoint list|recommend|evaluate`

import type {
  Checkpoint,
  CheckpointRecommendation,
  Evaluation,
  Job,
  Page,
} from "../../protocol/objects.ts";
import { evaluationRequest } from "../../protocol/rest/checkpoints.ts";
import { EXIT_OK, UsageError } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import { DATA_FLAGS, optionalInt, optionalText, requiredText } from "../flags.ts";
import { ago, clean, metric, printFields, printPage } from "../output.ts";
import { fmtBytes } from "../../lib/format.ts";

const list = defineCommand({
  name: "checkpoint list",
  summary: "a run's checkpoints, with the metrics at each one's step",
  args: ["RUN"],
  examples: ["gpuctl checkpoint list r-8c1d0e2f3a4b"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<Checkpoint>>(
      `/api/runs/${encodeURIComponent(args[0])}/checkpoints`,
    );
    const now = ctx.now();
    printPage(ctx, flags.json, page, [
      { header: "ID", cell: (c) => clean(c.id) },
      { header: "STEP", cell: (c) => c.step === null ? "" : String(c.step), right: true },
      {
        header: "PATH",
        cell: (c) => clean(c.path) + (c.state && c.state !== "valid" ? ` (${c.state})` : ""),
        flex: true,
      },
      {
        header: "SIZE",
        cell: (c) => c.size_bytes === null ? "" : fmtBytes(c.size_bytes),
        right: true,
      },
      {
        header: "METRICS",
        cell: (c) =>
          clean(Object.entries(c.metrics).map(([k, v]) => `${k}=${metric(v)}`).join(" ")),
        flex: true,
      },
      { header: "CREATED", cell: (c) => ago(c.created_at, now) },
    ], "No checkpoints.");
    return EXIT_OK;
  },
});

const recommend = defineCommand({
  name: "checkpoint recommend",
  summary: "the checkpoint to use, of a run or of an experiment, and why",
  examples: [
    "gpuctl checkpoint recommend --run r-8c1d0e2f3a4b",
    "gpuctl checkpoint recommend --experiment mnist/lr-sweep",
  ],
  flags: {
    run: { arg: "RUN", schema: optionalText(64), help: "among this run's checkpoints" },
    experiment: {
      arg: "P/E",
      schema: optionalText(401),
      help: "among an experiment's (project/experiment)",
    },
    ...DATA_FLAGS,
  },
  async run({ flags }, ctx) {
    if ((flags.run === undefined) === (flags.experiment === undefined)) {
      throw new UsageError("give one of --run RUN or --experiment PROJECT/EXPERIMENT");
    }
    const client = await connect(flags, ctx);
    const r = await client.get<CheckpointRecommendation>("/api/checkpoints:recommend", {
      run: flags.run,
      experiment: flags.experiment,
    });
    if (flags.json) {
      ctx.io.out(JSON.stringify(r));
      return EXIT_OK;
    }
    if (!r.checkpoint) {
      ctx.io.out(`No checkpoint to recommend: ${clean(r.reason)}`);
      return EXIT_OK;
    }
    printFields(ctx, [
      ["checkpoint", clean(r.checkpoint.checkpoint_id)],
      ["path", clean(r.checkpoint.path)],
      ["run", clean(r.checkpoint.run_id)],
      ["step", r.checkpoint.step === null ? "" : String(r.checkpoint.step)],
      [
        "score",
        r.metric ? `${clean(r.metric)} = ${metric(r.value)} (${r.direction}, ${r.basis})` : "",
      ],
      ["why", clean(r.reason)],
    ]);
    return EXIT_OK;
  },
});

const evaluate = defineCommand({
  name: "checkpoint evaluate",
  summary: "queue an evaluation job of a checkpoint with a suite",
  args: ["CHECKPOINT"],
  rest: "[CMD…]",
  description: `The job inherits the training job's settings; a run no job produced needs
--working-dir and a command (after --) unless its project has an eval_command.`,
  examples: [
    "gpuctl checkpoint evaluate c-1a2b3c4d5e6f --suite heldout",
    "gpuctl checkpoint evaluate c-1a2b3c4d5e6f --suite heldout -d ~/mnist -- python eval.py",
  ],
  flags: {
    suite: { arg: "SUITE", schema: requiredText(), help: "the evaluation suite's name (required)" },
    workingDir: {
      short: "d",
      arg: "DIR",
      schema: optionalText(65_536),
      help: "where it runs, on the agent's host",
    },
    gpus: { short: "g", arg: "N", schema: optionalInt(0, 64), help: "GPUs it needs" },
    node: { arg: "NODE", schema: optionalText(), help: "run only on this node" },
    priority: {
      short: "p",
      arg: "N",
      schema: optionalInt(-1_000_000, 1_000_000),
      help: "higher runs first",
    },
    ...DATA_FLAGS,
  },
  async run({ flags, args, rest }, ctx) {
    const body = evaluationRequest.parse({
      suite: flags.suite,
      command: rest.length ? rest : undefined,
      working_dir: flags.workingDir,
      gpus: flags.gpus,
      node: flags.node,
      priority: flags.priority,
    });
    const client = await connect(flags, ctx);
    const queued = await client.post<{ evaluation: Evaluation; job: Job }>(
      `/api/checkpoints/${encodeURIComponent(args[0])}/evaluations`,
      body,
    );
    if (flags.json) ctx.io.out(JSON.stringify(queued));
    else {
      ctx.io.out(
        `Queued evaluation ${clean(queued.evaluation.id)} of ${clean(args[0])} with suite ` +
          `"${clean(queued.evaluation.suite)}" as job ${clean(queued.job.id)}`,
      );
    }
    return EXIT_OK;
  },
});

/** `gpuctl checkpoint`. */
export const checkpointCommand = defineGroup(
  "checkpoint",
  "list, recommend and evaluate checkpoints",
  [list, recommend, evaluate],
  "gpuctl checkpoint recommend --experiment mnist/lr-sweep",
);
