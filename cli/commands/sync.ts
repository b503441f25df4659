// `gpuctl sync [--force] [--json]`

import { join, relative } from "node:path";
import { z } from "zod";
import { EXIT_FAILURE, EXIT_OK } from "../command.ts";
import { connect, gpuctlHome } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { CONNECTION_FLAGS } from "../flags.ts";
import { listSpoolFiles, type SyncResult, syncSpool } from "../sync_spool.ts";

/** `gpuctl sync`. */
export const syncCommand = defineCommand({
  name: "sync",
  summary: "upload runs the Python SDK spooled while the server was away",
  description: `Uploads the runs that the Python SDK spooled while no server was reachable:
$GPUCTL_HOME/spool/<run id>.jsonl. Each file's run is registered and its batches are sent
in order; a file sent whole moves to spool/synced/. A file that fails stays where it is;
running sync again resumes it, and nothing is stored twice.

A file changed in the last 5 s is skipped: its training process may still be writing it.`,
  examples: ["gpuctl sync", "gpuctl sync --force --json"],
  flags: {
    force: { schema: z.boolean().optional(), help: "sync recently changed files too" },
    json: { schema: z.boolean().optional(), help: "print the results as JSON" },
    ...CONNECTION_FLAGS,
  },
  async run({ flags }, ctx) {
    const spoolDir = join(gpuctlHome(ctx.env), "spool");
    if ((await listSpoolFiles(spoolDir)).length === 0) {
      if (flags.json) ctx.io.out(JSON.stringify({ spool_dir: spoolDir, results: [] }));
      else ctx.io.out(`Nothing to sync: no spool files in ${spoolDir}`);
      return EXIT_OK;
    }
    const client = await connect(flags, ctx);
    const results = await syncSpool(client, {
      spoolDir,
      force: flags.force,
      now: ctx.now,
      onResult: flags.json ? undefined : (r) => ctx.io.out(describe(r, spoolDir)),
    });
    const failed = results.filter((r) => r.status === "failed").length;
    if (flags.json) {
      ctx.io.out(JSON.stringify({ spool_dir: spoolDir, results }));
    } else {
      const synced = results.filter((r) => r.status === "synced").length;
      const skipped = results.length - synced - failed;
      ctx.io.out(
        `Synced ${synced} of ${results.length} spool file${results.length === 1 ? "" : "s"} ` +
          `to ${client.serverUrl}` +
          (skipped ? `, skipped ${skipped}` : "") + (failed ? `, ${failed} failed` : ""),
      );
    }
    return failed ? EXIT_FAILURE : EXIT_OK;
  },
});

function describe(r: SyncResult, spoolDir: string): string {
  switch (r.status) {
    case "synced":
      return `${r.file}: synced run ${r.run_id}` +
        (r.registered ? "" : " (log lines only; the run was registered before)") +
        `: ${count(r.batches, "batch", "batches")}, ${count(r.points, "point")}, ` +
        `${count(r.checkpoints, "checkpoint")}; moved to ${relative(spoolDir, r.moved_to)}` +
        (r.torn_last_line ? " (a torn last line was left out)" : "") +
        r.warnings.map((w) => `; warning: ${w}`).join("");
    case "skipped":
      return `${r.file}: skipped: ${r.reason}`;
    case "failed":
      return `${r.file}: FAILED` + (r.run_id ? ` (run ${r.run_id})` : "") +
        `: ${r.error}; the file stays in the spool`;
  }
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
