// `gpuctl backup` (the server's database) and `gpuctl backup-agent` (an agent host's files)

import { join, resolve } from "node:path";
import { z } from "zod";
import { parseYamlConfig } from "../../lib/config_files.ts";
import { EXIT_OK } from "../command.ts";
import { connect, gpuctlHome } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { DATA_FLAGS, JSON_FLAG, optionalText } from "../flags.ts";
import { clean } from "../output.ts";

export const backupCommand = defineCommand({
  name: "backup",
  summary: "have the server write a consistent copy of its database",
  description: `The copy goes to the server's backups folder (<data_dir>/backups, on the
server's host); its path is printed. Needs an admin token.`,
  examples: ["gpuctl backup"],
  flags: DATA_FLAGS,
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const b = await client.post<{ path: string; bytes: number; integrity: string }>(
      "/api/admin/backup",
    );
    if (flags.json) ctx.io.out(JSON.stringify(b));
    else ctx.io.out(`${clean(b.path)} (${b.bytes} bytes, integrity ${clean(b.integrity)})`);
    return EXIT_OK;
  },
});

// Only the field this command needs; the agent validates the rest of its own file.
const agentYamlDataDir = z.object({ data_dir: z.string().min(1).optional() });

/** The agent's data folder as the agent resolves it: --data-dir, agent.yaml, `<home>/agent`. */
export async function agentDataDir(flag: string | undefined, home: string): Promise<string> {
  if (flag) return flag;
  const path = join(home, "agent.yaml");
  let text: string | null = null;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`Cannot read "${path}": ${(err as Error).message}`, { cause: err });
    }
  }
  const file = text === null ? {} : parseYamlConfig(text, path, agentYamlDataDir);
  return file.data_dir ?? join(home, "agent");
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
}

export const backupAgentCommand = defineCommand({
  name: "backup-agent",
  summary: "pack this agent host's job logs, state and spool into a .tar.gz",
  description: `Run it on a GPU host: it packs the agent's data folder (the full output of
every job it ran, state.json and lease.json for reattaching, and the spool of frames the
server has not yet acknowledged), leaving out the ingest socket. The folder is the agent's:
--data-dir, else data_dir: in $GPUCTL_HOME/agent.yaml, else $GPUCTL_HOME/agent. Safe while
the agent runs (a file written meanwhile is packed as it was when read).`,
  examples: [
    "gpuctl backup-agent",
    "gpuctl backup-agent --data-dir /srv/gpuctl/agent -o agent.tar.gz",
  ],
  flags: {
    dataDir: { arg: "DIR", schema: optionalText(4096), help: "the agent's data folder" },
    output: {
      short: "o",
      arg: "FILE",
      schema: optionalText(4096),
      help: "where to write (default: gpuctl-agent-<time>.tar.gz here)",
    },
    ...JSON_FLAG,
  },
  async run({ flags }, ctx) {
    const dataDir = await agentDataDir(flags.dataDir, gpuctlHome(ctx.env));
    try {
      if (!(await Deno.stat(dataDir)).isDirectory) throw new Error("not a folder");
    } catch (err) {
      throw new Error(
        `Cannot back up the agent's data folder "${dataDir}": ${(err as Error).message}; ` +
          "pass --data-dir DIR, or run it where the agent runs",
        { cause: err },
      );
    }
    const cwd = ctx.cwd ?? Deno.cwd();
    const output = resolve(cwd, flags.output ?? `gpuctl-agent-${stamp(ctx.now())}.tar.gz`);
    const tar = await new Deno.Command("tar", {
      args: [
        "--create",
        "--gzip",
        `--file=${output}`,
        "--exclude=./ingest",
        "--ignore-failed-read",
        "--warning=no-file-changed",
        "--warning=no-file-removed",
        `--directory=${dataDir}`,
        ".",
      ],
      stdout: "null",
      stderr: "piped",
    }).output().catch((err) => {
      throw new Error(`Cannot run tar to pack "${dataDir}": ${(err as Error).message}`, {
        cause: err,
      });
    });
    // GNU tar: 1 is "some file changed while being read", which a live agent's files may.
    if (tar.code !== 0 && tar.code !== 1) {
      const why = new TextDecoder().decode(tar.stderr).trim().split("\n").at(-1);
      throw new Error(`Cannot pack "${dataDir}" into "${output}": tar exited ${tar.code}: ${why}`);
    }
    const bytes = (await Deno.stat(output)).size;
    if (flags.json) ctx.io.out(JSON.stringify({ path: output, data_dir: dataDir, bytes }));
    else ctx.io.out(`${output} (${bytes} bytes, from ${dataDir})`);
    return EXIT_OK;
  },
});
