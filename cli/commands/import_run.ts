// `gpuctl import-run DIR --project P [--experiment E] [--name N] [--json]`

import { z } from "zod";
import { GpuctlClient } from "../client.ts";
import { type Command, type CommandContext, EXIT_OK, UsageError } from "../command.ts";
import { resolveConnection } from "../config.ts";
import {
  CONNECTION_OPTIONS,
  connectionFlags,
  optionalText,
  parseFlags,
  requiredText,
} from "../flags.ts";
import { importFolder, type ImportSummary, readImportSource } from "../import_folder.ts";

const HELP = `usage: gpuctl import-run DIR --project P [--experiment E] [--name N] [--json]

Turns an old experiment folder into an IMPORTED run: every scalar of its TensorBoard event
files (subfolders become tag prefixes: train/epoch_loss) with their wall times, and every
checkpoint under it (*.pt *.pth *.ckpt *.safetensors *.bin *.pkl, Hugging Face
checkpoint-<step>/ folders, TensorFlow <name>.ckpt-<n>.index), with the metrics at the
nearest step at or below each checkpoint's.

Importing the same folder again reuses its run and adds only what is new.

options:
  --project P      the project of the run (required)
  --experiment E   the experiment of the run
  --name N         the run's name (default: the folder's name)
  --json           print the summary as JSON
  --server URL     the gpuctl server (else GPUCTL_SERVER_URL, cli.yaml, server.yaml)
  --token TOKEN    a write-scope token (else GPUCTL_TOKEN, cli.yaml, server.yaml)
  -h, --help       this help`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  project: { type: "string" },
  experiment: { type: "string" },
  name: { type: "string" },
  json: { type: "boolean" },
} as const;

const flagsSchema = z.object({
  ...connectionFlags,
  project: requiredText(),
  experiment: optionalText(),
  name: optionalText(),
  json: z.boolean().optional(),
});

/** `gpuctl import-run`. */
export const importRunCommand: Command = {
  name: "import-run",
  summary: "import an old experiment folder (TensorBoard scalars, checkpoints) as a run",
  help: HELP,
  async run(args: string[], ctx: CommandContext): Promise<number> {
    const { flags, positionals } = parseFlags(args, OPTIONS, flagsSchema);
    if (positionals.length !== 1) {
      throw new UsageError(
        positionals.length === 0
          ? "DIR is required: the folder to import"
          : `expected one folder, got ${positionals.length}: ${positionals.join(" ")}`,
      );
    }
    const connection = await resolveConnection(flags, ctx.env);
    const source = await readImportSource(positionals[0]);
    const client = new GpuctlClient({ ...connection, fetch: ctx.fetch });
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
};

function describe(s: ImportSummary): string[] {
  const where = `project "${s.project}"` + (s.experiment ? `, experiment "${s.experiment}"` : "");
  const lines = [
    `${s.created ? "Imported" : "Re-imported"} ${s.dir} as run ${s.run_id} ("${s.name}", ${where})`,
    `  ${plural(s.points, "point")} under ${plural(s.keys.length, "key")}` +
    (s.keys.length ? `: ${listed(s.keys)}` : ""),
    `  ${plural(s.checkpoints, "checkpoint")}` +
    (s.created ? "" : ` (${s.new_checkpoints} new)`),
  ];
  if (s.skipped_points) {
    lines.push(
      `  left out ${plural(s.skipped_points, "scalar")} the server cannot store ` +
        "(negative step, or a tag over 200 characters)",
    );
  }
  return lines;
}

const KEYS_LISTED = 10;

function listed(keys: string[]): string {
  const more = keys.length - KEYS_LISTED;
  return keys.slice(0, KEYS_LISTED).join(", ") + (more > 0 ? ` and ${more} more` : "");
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
