/**
 * The code of a run, taken from its working dir just before the process starts (so files the
 * job writes are not part of it): in a git work tree, the commit, branch, remote (no
 * credentials), `git diff --binary HEAD` (bounded) and the untracked files; elsewhere, the
 * SHA-256 of each file the command names.
 *
 * Git runs in a folder the job's user may own, whose `.git/config` that user controls. So:
 * - under `job_user`, git and sha256sum run as the job user (`setpriv`), never as root, so a
 *   planted filter, fsmonitor or hook command gains nothing the job itself has not;
 * - `-c core.fsmonitor=false -c core.hooksPath=/dev/null -c diff.external=` and
 *   `--no-ext-diff --no-textconv` keep repo-configured helpers from running at all (clean
 *   filters named in `.gitattributes` cannot be switched off wholesale: the first point covers
 *   them); `-c safe.directory=*` lets an agent read a tree another user owns, which is safe
 *   because of the first point;
 * - `GIT_OPTIONAL_LOCKS=0` keeps git from rewriting the job's index; the global and system
 *   configs are left out (`GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM=1`), so the
 *   agent's own settings (a diff prefix, a pager) cannot change the patch;
 * - every command has a deadline (the whole snapshot at most {@linkcode SNAPSHOT_TIMEOUT_MS}),
 *   and output past the bound is hashed, not kept.
 *
 * Never throws: what could not be learnt is listed in `problems`.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  MAX_DIFF_BYTES,
  MAX_HASHED_FILES,
  MAX_UNTRACKED_FILES,
  type Provenance,
  stripCredentials,
} from "../protocol/provenance.ts";
import { type JobUser, switchUserArgv } from "./runner/job_user.ts";
import { resolveProgram } from "./runner/mod.ts";

/** Where git and sha256sum are looked for when the agent was given no PATH. */
export const DEFAULT_TOOL_PATH = "/usr/local/bin:/usr/bin:/bin";

/**
 * The agent's snapshot function: as the job user when there is one (through `setpriv`; with
 * none on the host no snapshot is taken, and its problem says why).
 */
export function codeSnapshotter(
  path: string,
  jobUser: JobUser | null,
): (job: SnapshotJob) => Promise<Provenance> {
  let setpriv: Promise<string | null> | null = null;
  return async (job) => {
    if (jobUser === null) return await snapshotCode(job, { env: { PATH: path }, prefix: [] });
    setpriv ??= resolveProgram("setpriv", path, "/");
    const found = await setpriv;
    if (found === null) {
      return {
        kind: "files",
        working_dir: job.working_dir,
        captured_at: new Date().toISOString(),
        git: null,
        files: null,
        problems: [`no snapshot: setpriv was not found to read the code as "${jobUser.name}"`],
      };
    }
    return await snapshotCode(job, {
      env: { PATH: path, HOME: jobUser.home },
      prefix: switchUserArgv(found, jobUser),
    });
  };
}

/** The longest a whole snapshot may take; the job starts after it either way. */
export const SNAPSHOT_TIMEOUT_MS = 15_000;

/** The folder under a working dir where job-user runs keep their files (never code). */
const RUNS_FOLDER = ".gpuctl-runs/";

/** What a snapshot needs besides the job. */
export interface SnapshotOptions {
  /** PATH and the like for git and sha256sum (the rest of the environment is cleared). */
  env: Record<string, string>;
  /** The argv prefix that runs a program as the job user (`setpriv …`), or [] to run as is. */
  prefix: string[];
  /** @default SNAPSHOT_TIMEOUT_MS */
  timeoutMs?: number;
  /** Unix ms. @default Date.now */
  now?: () => number;
  /** @default "git" */
  git?: string;
}

/** The job fields a snapshot reads. */
export interface SnapshotJob {
  working_dir: string;
  command: string[] | string;
}

/** Takes the snapshot of `job`'s working dir. */
export async function snapshotCode(job: SnapshotJob, o: SnapshotOptions): Promise<Provenance> {
  const now = o.now ?? Date.now;
  const deadline = now() + (o.timeoutMs ?? SNAPSHOT_TIMEOUT_MS);
  const problems: string[] = [];
  const base = {
    working_dir: job.working_dir,
    captured_at: new Date(now()).toISOString(),
    problems,
  };
  const tool = new Tool(o, job.working_dir, deadline, now);
  const git = await gitSnapshot(tool, o.git ?? "git", problems);
  if (git !== null) return { kind: "git", ...base, git, files: null };
  const files = await filesSnapshot(tool, job.command, problems);
  return { kind: "files", ...base, git: null, files };
}

/** How a bounded command ended. */
interface ToolResult {
  ok: boolean;
  /** The first `keep` bytes of stdout. */
  head: Uint8Array;
  /** All of stdout's bytes and their SHA-256. */
  bytes: number;
  sha256: string;
  stderr: string;
  timedOut: boolean;
}

const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_OPTIONAL_LOCKS: "0",
  GIT_TERMINAL_PROMPT: "0",
  GIT_PAGER: "cat",
  LC_ALL: "C",
};

/** Runs programs in the working dir, as the job user, before a shared deadline. */
class Tool {
  constructor(
    readonly o: SnapshotOptions,
    readonly cwd: string,
    readonly deadline: number,
    readonly now: () => number,
  ) {}

  async run(argv: string[], keep: number): Promise<ToolResult> {
    const left = this.deadline - this.now();
    const hash = createHash("sha256");
    const empty = { head: new Uint8Array(), bytes: 0, sha256: EMPTY_SHA256 };
    if (left <= 0) return { ok: false, ...empty, stderr: "no time left", timedOut: true };
    const [program, ...args] = [...this.o.prefix, ...argv];
    const signal = AbortSignal.timeout(left);
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(program, {
        args,
        cwd: this.cwd,
        env: { ...this.o.env, ...GIT_ENV },
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal,
      }).spawn();
    } catch (err) {
      return { ok: false, ...empty, stderr: (err as Error).message, timedOut: false };
    }
    const chunks: Uint8Array[] = [];
    let kept = 0;
    let bytes = 0;
    const stderr = new Response(child.stderr).text();
    for await (const chunk of child.stdout) {
      hash.update(chunk);
      bytes += chunk.length;
      if (kept < keep) {
        const part = chunk.subarray(0, keep - kept);
        chunks.push(part);
        kept += part.length;
      }
    }
    const status = await child.status;
    const head = new Uint8Array(kept);
    let at = 0;
    for (const c of chunks) {
      head.set(c, at);
      at += c.length;
    }
    return {
      ok: status.success,
      head,
      bytes,
      sha256: hash.digest("hex"),
      stderr: (await stderr).trim().slice(0, 500),
      timedOut: signal.aborted,
    };
  }
}

const EMPTY_SHA256 = createHash("sha256").digest("hex");

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** `git <hardening> -C <dir> args…` */
function gitArgv(git: string, args: string[]): string[] {
  return [
    git,
    "-c",
    "safe.directory=*",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "diff.external=",
    "-c",
    "protocol.allow=never",
    "--no-pager",
    ...args,
  ];
}

async function gitSnapshot(
  tool: Tool,
  git: string,
  problems: string[],
): Promise<Provenance["git"]> {
  const top = await tool.run(
    gitArgv(git, ["rev-parse", "--show-toplevel", "--show-prefix"]),
    65536,
  );
  if (!top.ok) {
    // "not a git repository" is the common answer; anything else is worth saying.
    if (top.timedOut) problems.push("git rev-parse timed out: the working dir is taken as not git");
    else if (!/not a git repository/i.test(top.stderr) && top.stderr !== "") {
      problems.push(`git: ${top.stderr}`);
    }
    return null;
  }
  const [root, prefix = ""] = text(top.head).split("\n");
  const run = (args: string[], keep = 65536) => tool.run(gitArgv(git, ["-C", root, ...args]), keep);
  // Read-only and lock-free, so they run side by side: the job waits for the slowest only.
  const [head, branchOut, remote_url, d, u] = await Promise.all([
    run(["rev-parse", "--verify", "-q", "HEAD^{commit}"]),
    run(["symbolic-ref", "-q", "--short", "HEAD"]),
    remoteUrl(run),
    // In a repository with no commit, HEAD names nothing and the diff fails: no diff then.
    run([
      "diff",
      "--binary",
      "--no-ext-diff",
      "--no-textconv",
      "--no-color",
      "--no-renames",
      "--no-relative",
      "--submodule=short",
      "--src-prefix=a/",
      "--dst-prefix=b/",
      "HEAD",
      "--",
    ], MAX_DIFF_BYTES + 1),
    run(["ls-files", "--others", "--exclude-standard", "-z", "--", "."], 1 << 20),
  ]);
  const commit = head.ok ? text(head.head).trim() : null;
  if (commit === null) problems.push("the repository has no commit yet: no diff was taken");
  const branch = branchOut.ok ? text(branchOut.head).trim().slice(0, 255) || null : null;
  let diff: string | null = null;
  let diff_bytes = 0;
  let diff_sha256 = EMPTY_SHA256;
  let diff_omitted: string | null = null;
  if (commit !== null) {
    diff_bytes = d.bytes;
    diff_sha256 = d.sha256;
    if (!d.ok) {
      diff_omitted = d.timedOut ? "git diff timed out" : `git diff failed: ${d.stderr}`;
      problems.push(diff_omitted);
    } else if (d.bytes > MAX_DIFF_BYTES) {
      diff_omitted = `the diff is ${d.bytes} bytes, more than the ${MAX_DIFF_BYTES} kept: ` +
        "only its size and SHA-256 are recorded";
    } else {
      try {
        diff = new TextDecoder("utf-8", { fatal: true }).decode(d.head);
      } catch {
        diff_omitted = "the diff is not UTF-8 text: only its size and SHA-256 are recorded";
      }
    }
  }
  const untracked: string[] = [];
  let untracked_count = 0;
  if (u.ok || u.head.length > 0) {
    const names = text(u.head).split("\0").filter((n) => n !== "" && !n.startsWith(RUNS_FOLDER));
    untracked_count = names.length;
    untracked.push(...names.slice(0, MAX_UNTRACKED_FILES).map((n) => n.slice(0, 4096)));
    if (u.bytes > u.head.length) {
      problems.push(`the list of untracked files is longer than ${u.head.length} bytes: cut`);
    }
  }
  if (!u.ok) problems.push(u.timedOut ? "git ls-files timed out" : `git ls-files: ${u.stderr}`);
  return {
    root,
    subdir: prefix.replace(/\/$/, ""),
    commit,
    branch,
    remote_url,
    diff,
    diff_bytes,
    diff_sha256,
    diff_omitted,
    untracked,
    untracked_count,
  };
}

/** The URL of `origin`, else of the first remote, without credentials; null without one. */
async function remoteUrl(
  run: (args: string[]) => Promise<ToolResult>,
): Promise<string | null> {
  const remotes = await run(["remote"]);
  if (!remotes.ok) return null;
  const names = text(remotes.head).split("\n").map((s) => s.trim()).filter(Boolean);
  const name = names.includes("origin") ? "origin" : names[0];
  if (!name) return null;
  const url = await run(["remote", "get-url", "--", name]);
  if (!url.ok) return null;
  return stripCredentials(text(url.head).trim())?.slice(0, 2000) ?? null;
}

/**
 * The words of a command that may name files: argv items (or a shell string's words) that
 * are not options, and the values of `--opt=value`; only those with a "." or "/" (a script,
 * a config), so `python` or `42` are not looked for.
 */
export function namedFiles(command: string[] | string): string[] {
  const words = typeof command === "string"
    ? command.split(/\s+/).map((w) => w.replace(/^['"]|['"]$/g, ""))
    : command;
  const out = new Set<string>();
  for (const w of words) {
    const value = w.startsWith("-") ? (w.includes("=") ? w.slice(w.indexOf("=") + 1) : "") : w;
    if (value === "" || value.length > 4096 || !/[./]/.test(value)) continue;
    if (/^[0-9.eE+-]+$/.test(value)) continue; // a number such as 3e-4 or 0.1
    out.add(value);
    if (out.size >= MAX_HASHED_FILES) break;
  }
  return [...out];
}

async function filesSnapshot(
  tool: Tool,
  command: string[] | string,
  problems: string[],
): Promise<Provenance["files"]> {
  const names = namedFiles(command);
  const files: { path: string; sha256: string }[] = [];
  if (names.length > 0) {
    // sha256sum names each file it cannot read on stderr and goes on with the rest.
    const out = await tool.run(["sha256sum", "--", ...names], 1 << 20);
    if (out.timedOut) problems.push("sha256sum timed out");
    for (const line of text(out.head).split("\n")) {
      const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
      if (m) files.push({ path: m[2], sha256: m[1] });
    }
  }
  if (files.length === 0) problems.push("the command names no file that could be read");
  files.sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  const all = createHash("sha256");
  for (const f of files) all.update(`${f.sha256}  ${f.path}\n`);
  return { sha256: all.digest("hex"), files };
}
