// `gpuctl import-run DIR --project P [--experiment E] [--name N] [--json]`

import { z } from "zod";
import { EXIT_OK } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { CONNECTION_FLAGS, optionalText, requiredText } from "../flags.ts";
import { importFolder, type ImportSummary, readImportSource } from "../import_folder.ts";

/** `gpuctl import-run`. */
export const importRunCommand = defineCommand({
  name: "import-run",
  summary: "import an old experiment folder (TensorBoard scalars, checkpoints) as a run",
  args: ["DIR"],
  description:
    `Turns an old experiment folder into an IMPORTED run: every scalar of its TensorBoard event
files (subfolders become tag prefixes: train/epoch_loss) with their wall times, and every
checkpoint under it (*.pt *.pth *.ckpt *.safetensors *.bin *.pkl, Hugging Face
checkpoint-<step>/ folders, TensorFlow <name>.ckpt-<n>.index), with the metrics at the
nearest step at or below each checkpoint's.

The TensorBoard hparams plugin's session values (Keras hp.KerasCallback, PyTorch
add_hparams) become the run's config. Histograms, images, audio, text, graphs and
incomplete records at the end of a file are left out, and counted by kind.

Importing the same folder again reuses its run and adds only what is new (the summary
says how many points and checkpoints were new).`,
  examples: ["gpuctl import-run ~/old/exp42 --project mnist --experiment baseline"],
  flags: {
    project: { arg: "P", schema: requiredText(), help: "the project of the run (required)" },
    experiment: { arg: "E", schema: optionalText(), help: "the experiment of the run" },
    name: { arg: "N", schema: optionalText(), help: "the run's name (default: the folder's name)" },
    json: { schema: z.boolean().optional(), help: "print the summary as JSON" },
    ...CONNECTION_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const source = await readImportSource(args[0]);
    const summary = await importFolder(client, source, {
      project: flags.project,
      experiment: flags.experiment,
      name: flags.name,
    });
    if (flags.json) {
      ctx.io.out(JSON.stringify(summary));
    } else {
      for (const line of describe(summary)) ctx.io.out(line);
    }
    return EXIT_OK;
  },
});

function describe(s: ImportSummary): string[] {
  const where = `project "${s.project}"` + (s.experiment ? `, experiment "${s.experiment}"` : "");
  const lines = [
    `${s.created ? "Imported" : "Re-imported"} ${s.dir} as run ${s.run_id} ("${s.name}", ${where})`,
    `  ${plural(s.points, "point")} under ${plural(s.keys.length, "key")}` +
    (s.keys.length ? `: ${listed(s.keys)}` : "") +
    (s.created || s.new_points === null ? "" : ` (${s.new_points} new)`),
    `  ${plural(s.checkpoints, "checkpoint")}` +
    (s.created ? "" : ` (${s.new_checkpoints} new)`),
  ];
  if (s.config_keys.length) {
    lines.push(`  config from the hparams plugin: ${listed(s.config_keys)}`);
  }
  const leftOut = Object.entries(s.left_out).filter(([, n]) => n);
  if (leftOut.length) {
    lines.push(`  left out: ${leftOut.map(([kind, n]) => kindCount(kind, n!)).join(", ")}`);
  }
  if (s.skipped_points) {
    lines.push(
      `  left out ${plural(s.skipped_points, "scalar")} the server cannot store ` +
        "(negative step, or a tag over 200 characters)",
    );
  }
  return lines;
}

/** How each left-out kind reads, singular and plural. */
const KIND_WORDS: Record<string, [string, string]> = {
  histograms: ["histogram", "histograms"],
  images: ["image", "images"],
  audio: ["audio clip", "audio clips"],
  text: ["text summary", "text summaries"],
  graphs: ["graph", "graphs"],
  run_metadata: ["run metadata record", "run metadata records"],
  other: ["other non-scalar value", "other non-scalar values"],
  truncated_tails: ["file cut off mid-record", "files cut off mid-record"],
  corrupt_records: ["corrupt record", "corrupt records"],
};

function kindCount(kind: string, n: number): string {
  const [one, many] = KIND_WORDS[kind] ?? [kind, kind];
  return `${n} ${n === 1 ? one : many}`;
}

const KEYS_LISTED = 10;

function listed(keys: string[]): string {
  const more = keys.length - KEYS_LISTED;
  return keys.slice(0, KEYS_LISTED).join(", ") + (more > 0 ? ` and ${more} more` : "");
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
