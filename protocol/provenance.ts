/**
 * A run's provenance: the code it ran, as its agent saw the working dir just before the
 * process started. In a git work tree: the commit, branch, remote (no credentials), the diff
 * of tracked files against HEAD and the names of untracked files. Elsewhere: a content hash of
 * the files the command names. Kept apart from `rest/sdk.ts` (which imports it) so the schema has
 * no dependency of its own.
 *
 * @module
 */
import { z } from "zod";

/** The largest diff kept as text; a larger one is kept as its hash and size only. */
export const MAX_DIFF_BYTES = 1024 * 1024;
/** Untracked file names kept (the count covers all of them). */
export const MAX_UNTRACKED_FILES = 1000;
/** Files of a non-git working dir hashed at most (those the command names). */
export const MAX_HASHED_FILES = 50;

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 in hex");
const path = z.string().min(1).max(4096);

/** What git says about the working dir's work tree. */
export const gitProvenance = z.strictObject({
  /** The work tree's top folder on the agent host. */
  root: path,
  /** The working dir relative to `root` ("" when it is the root). */
  subdir: z.string().max(4096),
  /** HEAD's commit; null in a repository without a commit yet. */
  commit: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/).nullable(),
  /** The checked-out branch; null for a detached HEAD. */
  branch: z.string().max(255).nullable(),
  /** The remote's URL, user name, password and query left out; null without a remote. */
  remote_url: z.string().max(2000).nullable(),
  /**
   * `git diff --binary HEAD`: every change of a tracked file, staged or not. Null when it is
   * larger than MAX_DIFF_BYTES (then `diff_omitted` says so) or there is no commit.
   */
  diff: z.string().max(MAX_DIFF_BYTES).nullable(),
  /** The diff's size in bytes and its SHA-256, also when the text was left out. */
  diff_bytes: z.number().int().min(0),
  diff_sha256: sha256,
  /** Why the diff's text is not kept (over the bound, not UTF-8), or null. */
  diff_omitted: z.string().max(500).nullable(),
  /** Files git does not track nor ignore, relative to `root`; not part of the diff. */
  untracked: z.array(path).max(MAX_UNTRACKED_FILES),
  /** How many untracked files there are (the list keeps the first MAX_UNTRACKED_FILES). */
  untracked_count: z.number().int().min(0),
});
export type GitProvenance = z.infer<typeof gitProvenance>;

/** The files a command names in a working dir that is not a git work tree. */
export const filesProvenance = z.strictObject({
  /** SHA-256 over the sorted `sha256  path` lines of the files. */
  sha256,
  files: z.array(z.strictObject({ path, sha256 })).max(MAX_HASHED_FILES),
});
export type FilesProvenance = z.infer<typeof filesProvenance>;

/** The code of a run. */
export const provenance = z.strictObject({
  kind: z.enum(["git", "files"]),
  /** The working dir it describes, on the agent host. */
  working_dir: path,
  /** When the agent looked (ISO 8601). */
  captured_at: z.string().max(40),
  git: gitProvenance.nullable(),
  files: filesProvenance.nullable(),
  /** What the agent could not learn (git timed out, a file unreadable …). */
  problems: z.array(z.string().max(1000)).max(20),
});
export type Provenance = z.infer<typeof provenance>;

/**
 * A remote URL without credentials: `https://user:token@host/x.git?token=…` →
 * `https://host/x.git`; scp-like `git@host:x.git` keeps its (ssh) user name. Null when the
 * text is not a URL git would take.
 *
 * @example
 * ```ts
 * import { assertEquals } from "../tests/assert.ts";
 * assertEquals(stripCredentials("https://me:ghp_x@github.com/a/b.git"), "https://github.com/a/b.git");
 * ```
 */
export function stripCredentials(url: string): string | null {
  const trimmed = url.trim();
  if (trimmed === "") return null;
  // scp-like syntax: [user@]host:path, with no "://" (the user is an ssh login, not a secret).
  if (!trimmed.includes("://")) {
    // A local path or scp-like form never carries a password; anything after a "?" goes.
    return trimmed.split("?")[0];
  }
  try {
    const u = new URL(trimmed);
    u.username = "";
    u.password = "";
    u.search = "";
    u.hash = "";
    return u.toString();
  } catch {
    // Not a URL the WHATWG parser takes: keep only what follows the last "@" of the authority.
    const m = /^([a-z][a-z0-9+.-]*:\/\/)(?:[^/@]*@)?(.*)$/i.exec(trimmed);
    return m ? `${m[1]}${m[2].split("?")[0]}` : null;
  }
}
