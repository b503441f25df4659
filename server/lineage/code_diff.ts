/**
 * How two runs' code differs, from their snapshots alone (the server has no repository): each
 * run's `git diff HEAD` split by file, and for a file both changed differently a line diff
 * from one patch to the other. Pure.
 *
 * @module
 */
import type { CodeComparison, FileCodeChange } from "../../protocol/lineage.ts";
import type { Provenance } from "../../protocol/provenance.ts";

/** Lines a patch-to-patch diff compares at most (per side); longer ones are summarised. */
export const MAX_DIFF_LINES = 20_000;
/** Edits the line diff looks for at most before it summarises instead. */
const MAX_EDITS = 4000;

/** A diff split by file: path → that file's patch (its `diff --git` header included). */
export function splitPatch(diff: string): Map<string, string> {
  const files = new Map<string, string>();
  const parts = diff.split(/^(?=diff --git )/m).filter((p) => p.startsWith("diff --git "));
  for (const part of parts) {
    const header = part.slice(0, part.indexOf("\n") >>> 0);
    // `diff --git a/<path> b/<path>`: the b side names the file as it is now.
    const m = / b\/(.*)$/.exec(header);
    files.set(m ? m[1] : header, part);
  }
  return files;
}

/**
 * A line diff from `a` to `b` (Myers): lines kept start with " ", removed "-", added "+".
 * Null when the texts are too long or too different to diff within the bounds.
 */
export function lineDiff(a: string[], b: string[]): string[] | null {
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) return null;
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDITS);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])
        ? v[offset + k + 1]
        : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    if (found >= 0) break;
  }
  if (found < 0) return null;
  // Walk back through the saved frontiers.
  const out: string[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1]) ? k + 1 : k - 1;
    const prevX = vd[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      y--;
      out.push(` ${a[--x]}`);
    }
    if (x === prevX) out.push(`+${b[--y]}`);
    else out.push(`-${a[--x]}`);
  }
  while (x > 0) out.push(` ${a[--x]}`);
  return out.reverse();
}

/** What code a snapshot names, for the comparison's problems. */
function usable(label: string, p: Provenance | null, problems: string[]): Map<string, string> {
  if (p === null) {
    problems.push(`run ${label} has no code snapshot`);
    return new Map();
  }
  if (p.git === null) {
    if (p.files) problems.push(`run ${label} ran outside git: only its files' hashes are known`);
    return new Map();
  }
  if (p.git.diff === null && p.git.diff_bytes > 0) {
    problems.push(
      `run ${label}'s diff was kept as its hash only (${p.git.diff_bytes} bytes, sha256 ` +
        `${p.git.diff_sha256.slice(0, 12)}): its files cannot be compared`,
    );
    return new Map();
  }
  return splitPatch(p.git.diff ?? "");
}

/** Compares the code of run `a` with run `b`. */
export function compareCode(
  a: { id: string; code: Provenance | null },
  b: { id: string; code: Provenance | null },
): CodeComparison {
  const problems: string[] = [];
  const pa = usable("a", a.code, problems);
  const pb = usable("b", b.code, problems);
  const commitA = a.code?.git?.commit ?? null;
  const commitB = b.code?.git?.commit ?? null;
  if (commitA && commitB && commitA !== commitB) {
    problems.push(
      `the runs are on different commits (${commitA.slice(0, 12)} and ${commitB.slice(0, 12)}): ` +
        "what changed between the commits is not shown; git diff in the repository shows it",
    );
  }
  const files: FileCodeChange[] = [];
  for (const path of [...new Set([...pa.keys(), ...pb.keys()])].sort()) {
    const x = pa.get(path);
    const y = pb.get(path);
    if (x === y) continue;
    const lines = (t: string | undefined) =>
      t === undefined ? [] : t.replace(/\n$/, "").split("\n");
    const d = lineDiff(lines(x), lines(y));
    files.push({
      path,
      change: x === undefined ? "only_b" : y === undefined ? "only_a" : "differs",
      diff: d === null ? "(too long to compare line by line)" : d.join("\n"),
    });
  }
  const filesA = a.code?.files?.sha256;
  const filesB = b.code?.files?.sha256;
  const same = commitA === commitB && files.length === 0 &&
    (a.code?.git?.diff_sha256 ?? filesA) === (b.code?.git?.diff_sha256 ?? filesB) &&
    a.code !== null && b.code !== null;
  return {
    a: a.id,
    b: b.id,
    same_code: same,
    commits: { a: commitA, b: commitB },
    problems,
    files,
  };
}
