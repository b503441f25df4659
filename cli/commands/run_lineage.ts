// `gpuctl run fork|mark|note|lineage|code|checkout`: the tree of runs and the code of each.

import { z } from "zod";
import type { ForkOverrides, Job, Run } from "../../protocol/objects.ts";
import type { Lineage, LineageNode, Note } from "../../protocol/lineage.ts";
import type { Provenance } from "../../protocol/provenance.ts";
import { EXIT_FAILURE, EXIT_OK, UsageError } from "../command.ts";
import type { CommandContext } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { DATA_FLAGS, optionalText } from "../flags.ts";
import { clean, metric, paint, printFields } from "../output.ts";

const pairs = (what: string) =>
  z.array(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]*=/s, `must be NAME=VALUE (${what})`),
  ).default([]);
const names = z.array(z.string().min(1).max(200)).default([]);

/** `K=V` → [K, V]. */
const split = (
  kv: string,
): [string, string] => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)];

/** A config value from the command line: JSON when it parses (`3`, `true`, `[1,2]`), else text. */
function configValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const fork = defineCommand({
  name: "run fork",
  summary: "submit a child of a run: its command and working dir, with changes",
  args: ["RUN"],
  examples: [
    "gpuctl run fork r-8c1d --arg lr=0.001 --arg warmup=100",
    "gpuctl run fork r-8c1d --config depth=12 --env SEED=2 --from-checkpoint c-41aa",
  ],
  description: "--arg NAME=VALUE sets --NAME VALUE in the parent's command (replaced in place, " +
    "or appended); --flag NAME adds a bare --NAME; --unset-arg NAME removes it. --config " +
    "NAME=VALUE is recorded on the run and passed as GPUCTL_PARAM_NAME (VALUE is JSON when it " +
    "parses). --from-checkpoint resumes from a checkpoint: its path is GPUCTL_RESUME_FROM.",
  flags: {
    arg: { arg: "NAME=VALUE", schema: pairs("an argument"), help: "set --NAME VALUE" },
    flag: { arg: "NAME", schema: names, help: "add the bare flag --NAME" },
    unsetArg: { arg: "NAME", schema: names, help: "remove --NAME (and its value)" },
    env: { arg: "NAME=VALUE", schema: pairs("a variable"), help: "set a variable" },
    unsetEnv: { arg: "NAME", schema: names, help: "remove a variable" },
    config: { arg: "KEY=VALUE", schema: pairs("a config value"), help: "set a config value" },
    fromCheckpoint: {
      arg: "CKPT",
      schema: optionalText(64),
      help: "the checkpoint id to resume from",
    },
    name: { short: "n", arg: "NAME", schema: optionalText(), help: "the child job's name" },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const overrides: ForkOverrides = {};
    const a: Record<string, string | boolean | null> = {};
    for (const kv of flags.arg) a[split(kv)[0]] = split(kv)[1];
    for (const n of flags.flag) a[n] = true;
    for (const n of flags.unsetArg) a[n] = null;
    if (Object.keys(a).length) overrides.args = a;
    const e: Record<string, string | null> = {};
    for (const kv of flags.env) e[split(kv)[0]] = split(kv)[1];
    for (const n of flags.unsetEnv) e[n] = null;
    if (Object.keys(e).length) overrides.env = e;
    const c: Record<string, unknown> = {};
    for (const kv of flags.config) c[split(kv)[0]] = configValue(split(kv)[1]);
    if (Object.keys(c).length) overrides.config = c;
    const client = await connect(flags, ctx);
    const job = await client.post<Job>(`/api/runs/${encodeURIComponent(args[0])}/fork`, {
      overrides,
      ...(flags.fromCheckpoint ? { from_checkpoint: flags.fromCheckpoint } : {}),
      ...(flags.name ? { name: flags.name } : {}),
    });
    if (flags.json) {
      ctx.io.out(JSON.stringify(job));
      return EXIT_OK;
    }
    ctx.io.out(`Job ${clean(job.id)} "${clean(job.name)}" queued as a child of ${clean(args[0])}.`);
    ctx.io.out(`Follow it: gpuctl logs --job ${clean(job.id)} -f`);
    return EXIT_OK;
  },
});

const mark = defineCommand({
  name: "run mark",
  summary: "mark a run kept (a line to follow) or discarded, with a one-line reason",
  args: ["RUN", "MARK", "REASON…"],
  examples: ['gpuctl run mark r-8c1d kept "eval/loss 0.31, parent 0.35"'],
  description: "MARK is kept or discarded; the latest mark of a run counts.",
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const [id, verdict, ...words] = args;
    if (verdict !== "kept" && verdict !== "discarded") {
      throw new UsageError(`MARK must be kept or discarded, got ${JSON.stringify(verdict)}`);
    }
    const client = await connect(flags, ctx);
    const run = await client.post<Run>(`/api/runs/${encodeURIComponent(id)}/mark`, {
      mark: verdict,
      reason: words.join(" "),
    });
    if (flags.json) ctx.io.out(JSON.stringify(run));
    else ctx.io.out(`Run ${clean(run.id)} marked ${verdict}: ${clean(run.mark?.reason)}`);
    return EXIT_OK;
  },
});

const note = defineCommand({
  name: "run note",
  summary: "add a note to a run, or to an experiment (PROJECT/EXPERIMENT)",
  args: ["TARGET", "TEXT…"],
  examples: [
    'gpuctl run note r-8c1d "warmup helps; try 200 next"',
    'gpuctl run note mnist/lr-sweep "lr above 1e-3 diverges"',
  ],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const [target, ...words] = args;
    const client = await connect(flags, ctx);
    const n = await client.post<Note>("/api/notes", {
      ...(target.includes("/") ? { experiment: target } : { run_id: target }),
      text: words.join(" "),
    });
    if (flags.json) ctx.io.out(JSON.stringify(n));
    else ctx.io.out(`Note ${clean(n.id)} added to ${clean(target)}.`);
    return EXIT_OK;
  },
});

/** The lines of a tree: `├─ r-2 lr=0.01  SUCCEEDED  kept  eval/loss 0.31`. */
export function treeLines(roots: LineageNode[], prefix = ""): string[] {
  const out: string[] = [];
  roots.forEach((n, i) => {
    const last = i === roots.length - 1;
    const branch = prefix === "" && roots.length === 1 ? "" : last ? "└─ " : "├─ ";
    const pm = n.primary_metric;
    const parts = [
      n.run_id,
      n.name,
      n.status,
      n.mark ? `${n.mark.mark}: ${n.mark.reason}` : "",
      pm ? `${pm.key} ${metric(pm.best ?? pm.latest)}` : "",
      n.resume_from ? `from ${n.resume_from}` : "",
    ].filter(Boolean).map(clean);
    out.push(prefix + branch + parts.join("  "));
    const next = prefix + (prefix === "" && roots.length === 1 ? "" : last ? "   " : "│  ");
    out.push(...treeLines(n.children, next));
  });
  return out;
}

const lineage = defineCommand({
  name: "run lineage",
  summary: "the tree of a run, or of an experiment (PROJECT/EXPERIMENT)",
  args: ["TARGET"],
  examples: ["gpuctl run lineage r-8c1d", "gpuctl run lineage mnist/lr-sweep --json"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const target = args[0];
    const tree = await client.get<Lineage>(
      "/api/lineage",
      target.includes("/") ? { experiment: target } : { run_id: target },
    );
    if (flags.json) {
      ctx.io.out(JSON.stringify(tree));
      return EXIT_OK;
    }
    ctx.io.out(
      `${tree.runs} runs, ${tree.kept} kept, ${tree.discarded} discarded` +
        (tree.best_kept ? `; best kept: ${clean(tree.best_kept)}` : ""),
    );
    for (const line of treeLines(tree.roots)) ctx.io.out(line);
    return EXIT_OK;
  },
});

/** A run's code in a few lines, for `run show`. */
export function codeFields(code: Provenance | null): [string, string][] {
  if (code === null) return [["code", "no snapshot"]];
  if (code.git) {
    const g = code.git;
    const changes = g.diff === null
      ? (g.diff_omitted ?? "no diff")
      : g.diff === ""
      ? "clean"
      : `${g.diff.split(/^diff --git /m).length - 1} files changed (${g.diff_bytes} bytes)`;
    return [
      ["commit", clean(`${g.commit ?? "none"}${g.branch ? ` (${g.branch})` : ""}`)],
      ["remote", clean(g.remote_url)],
      ["changes", clean(changes)],
      [
        "untracked",
        clean(
          g.untracked_count
            ? `${g.untracked_count}: ${g.untracked.slice(0, 5).join(", ")}`
            : "none",
        ),
      ],
    ];
  }
  return [[
    "code",
    clean(`not git: ${code.files?.files.length ?? 0} files, sha256 ${code.files?.sha256 ?? "-"}`),
  ]];
}

const code = defineCommand({
  name: "run code",
  summary: "a run's code: commit, remote, and its diff (pipe it to git apply)",
  args: ["RUN"],
  examples: ["gpuctl run code r-8c1d", "gpuctl run code r-8c1d --diff | git apply"],
  flags: {
    diff: { schema: z.boolean().optional(), help: "print the diff alone" },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const { code } = await client.get<{ code: Provenance | null }>(
      `/api/runs/${encodeURIComponent(args[0])}/code`,
    );
    if (flags.json) {
      ctx.io.out(JSON.stringify(code));
      return EXIT_OK;
    }
    if (!flags.diff) printFields(ctx, codeFields(code));
    const diff = code?.git?.diff;
    if (diff) {
      if (!flags.diff) ctx.io.out("");
      for (const line of diff.replace(/\n$/, "").split("\n")) {
        ctx.io.out(
          flags.diff
            ? line
            : line.startsWith("+") && !line.startsWith("+++")
            ? paint(ctx, "green", line)
            : line.startsWith("-") && !line.startsWith("---")
            ? paint(ctx, "red", line)
            : line,
        );
      }
    }
    return EXIT_OK;
  },
});

/** Runs git for `run checkout`; the user's own git config (credentials) applies. */
async function runGit(
  ctx: CommandContext,
  args: string[],
  stdin?: string,
): Promise<{ ok: boolean; stderr: string }> {
  const child = new Deno.Command("git", {
    args,
    cwd: ctx.cwd,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "null",
    stderr: "piped",
    env: { GIT_TERMINAL_PROMPT: "0" },
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  return { ok: out.success, stderr: new TextDecoder().decode(out.stderr).trim() };
}

async function isGitRepo(ctx: CommandContext, path: string): Promise<boolean> {
  try {
    if (!(await Deno.stat(path)).isDirectory) return false;
  } catch {
    return false;
  }
  return (await runGit(ctx, ["-C", path, "rev-parse", "--git-dir"])).ok;
}

const checkout = defineCommand({
  name: "run checkout",
  summary: "recreate a run's code in a new folder: its commit, then its diff applied",
  args: ["RUN", "DIR"],
  examples: [
    "gpuctl run checkout r-8c1d ./r-8c1d",
    "gpuctl run checkout r-8c1d /tmp/x --from git@github.com:lab/model.git",
  ],
  description: "The commit comes from --from, else the work tree the run ran in when it is on " +
    "this machine, else the run's remote. Untracked files were never recorded: they are listed, " +
    "not recreated.",
  flags: {
    from: { arg: "REPO", schema: optionalText(4096), help: "the repository to clone" },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const [id, given] = args;
    const dir = ctx.cwd && !given.startsWith("/") ? `${ctx.cwd}/${given}` : given;
    const client = await connect(flags, ctx);
    const { code } = await client.get<{ code: Provenance | null }>(
      `/api/runs/${encodeURIComponent(id)}/code`,
    );
    const g = code?.git;
    if (!code || !g) {
      ctx.io.err(
        code
          ? `Cannot check out run ${id}: it ran outside git; its files' hashes are all that was recorded (gpuctl run code ${id})`
          : `Cannot check out run ${id}: no code snapshot was taken for it`,
      );
      return EXIT_FAILURE;
    }
    if (g.commit === null) {
      ctx.io.err(`Cannot check out run ${id}: its repository had no commit`);
      return EXIT_FAILURE;
    }
    try {
      if ([...Deno.readDirSync(dir)].length > 0) {
        throw new UsageError(`DIR "${dir}" exists and is not empty: name a new folder`);
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
    }
    const source = flags.from ?? (await isGitRepo(ctx, g.root) ? g.root : g.remote_url);
    if (!source) {
      ctx.io.err(
        `Cannot check out run ${id}: its work tree ${g.root} is not on this machine and it has no remote; pass --from REPO`,
      );
      return EXIT_FAILURE;
    }
    const cloned = await runGit(ctx, ["clone", "--quiet", "--no-checkout", "--", source, dir]);
    if (!cloned.ok) {
      ctx.io.err(`Cannot clone ${source}: ${cloned.stderr}`);
      return EXIT_FAILURE;
    }
    const at = await runGit(ctx, ["-C", dir, "checkout", "--quiet", "--detach", g.commit]);
    if (!at.ok) {
      ctx.io.err(
        `Cannot check out commit ${g.commit} from ${source}: ${at.stderr} (push it, or pass --from a repository that has it)`,
      );
      return EXIT_FAILURE;
    }
    if (g.diff === null && g.diff_bytes > 0) {
      ctx.io.err(
        `${dir} holds commit ${g.commit.slice(0, 12)} only: the run's diff was not kept ` +
          `(${g.diff_omitted ?? "omitted"})`,
      );
      return EXIT_FAILURE;
    }
    if (g.diff) {
      const applied = await runGit(ctx, [
        "-C",
        dir,
        "apply",
        "--binary",
        "--whitespace=nowarn",
        "-",
      ], g.diff);
      if (!applied.ok) {
        ctx.io.err(`Cannot apply the run's diff on ${g.commit.slice(0, 12)}: ${applied.stderr}`);
        return EXIT_FAILURE;
      }
    }
    const where = g.subdir ? `${dir}/${g.subdir}` : dir;
    if (flags.json) {
      ctx.io.out(
        JSON.stringify({
          dir,
          working_dir: where,
          commit: g.commit,
          source,
          not_recovered: g.untracked,
        }),
      );
      return EXIT_OK;
    }
    ctx.io.out(
      `Run ${clean(id)}'s code is in ${clean(dir)}: commit ${g.commit.slice(0, 12)} from ${
        clean(source)
      }` + (g.diff ? ", its diff applied" : ""),
    );
    if (g.subdir) ctx.io.out(`It ran in ${clean(where)}.`);
    if (g.untracked_count > 0) {
      ctx.io.out(
        `Not recovered (untracked when it ran, never recorded): ${g.untracked_count} files`,
      );
      for (const f of g.untracked.slice(0, 50)) ctx.io.out(`  ${clean(f)}`);
    }
    return EXIT_OK;
  },
});

/** The lineage and code subcommands of `gpuctl run`. */
export const runLineageCommands = [fork, mark, note, lineage, code, checkout];
