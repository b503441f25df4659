// Reading what Slurm's commands print (pure): `scontrol show job -d -o`, `sacct -P`, `sinfo`
// and the GRES strings inside them.

/** One job as `scontrol show job -o` (or sacct) describes it: field name → value. */
export type SlurmRecord = Record<string, string>;

/**
 * Parses one `scontrol show … -o` line into its `Name=value` fields. Values may hold spaces
 * (`Command=/x/train.sh --lr 1`): a token without `=` belongs to the value before it. With
 * `-d`, the per-node details (`Nodes=… GRES=…`) of the first node are kept.
 */
export function parseScontrolLine(line: string): SlurmRecord {
  const record: SlurmRecord = {};
  let last: string | null = null;
  for (const token of line.trim().split(/\s+/)) {
    if (token === "") continue;
    const eq = token.indexOf("=");
    const name = eq > 0 ? token.slice(0, eq) : "";
    if (eq > 0 && /^[A-Za-z][A-Za-z0-9_/:.]*$/.test(name)) {
      // A repeated name (the second node's `Nodes=` with -d) is not the first one's.
      if (name in record) last = null;
      else {
        record[name] = token.slice(eq + 1);
        last = name;
      }
    } else if (last !== null) {
      record[last] += ` ${token}`;
    }
  }
  return record;
}

/**
 * The job records of `sacct -n -P -X -o <fields>` output (one `|`-separated line per job),
 * keyed by the field names asked for.
 */
export function parseSacct(text: string, fields: readonly string[]): SlurmRecord[] {
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => {
    const values = line.split("|");
    return Object.fromEntries(fields.map((field, i) => [field, (values[i] ?? "").trim()]));
  });
}

/**
 * `squeue -h -o '%i|%T|%r|%N'` lines → each job's record, with scontrol's field names
 * (`JobState`, `Reason`, `NodeList`), by job id.
 */
export function parseSqueue(text: string): Map<string, SlurmRecord> {
  const jobs = new Map<string, SlurmRecord>();
  for (const line of text.split("\n")) {
    const [id, state, reason, nodes] = line.split("|").map((v) => v.trim());
    if (!id || !state) continue;
    jobs.set(id, { JobId: id, JobState: state, Reason: reason ?? "", NodeList: nodes ?? "" });
  }
  return jobs;
}

/** `ExitCode=3:0` (code:signal) → the exit code and the number of the signal (0: none). */
export function parseExitCode(text: string | undefined): { code: number; signal: number } | null {
  const match = /^(\d+):(\d+)$/.exec((text ?? "").trim());
  return match ? { code: Number(match[1]), signal: Number(match[2]) } : null;
}

/**
 * GPUs in a GRES string: `gpu:4`, `gpu:a100:4(S:0-1)`, `gpu:2,gpu:v100:1,mps:100` → the sum of
 * the `gpu` entries (null and `(null)` → 0).
 */
export function gresGpuCount(gres: string): number {
  let total = 0;
  for (const entry of splitGres(gres)) {
    const parts = entry.replace(/\(.*$/, "").split(":");
    if (parts[0] !== "gpu") continue;
    const count = Number(parts.at(-1));
    total += Number.isInteger(count) && parts.length > 1 ? count : 1;
  }
  return total;
}

/**
 * The GPU indices a job's detailed GRES names: `gpu:2(IDX:0-1)` → [0, 1],
 * `gpu:a100:3(IDX:0,2-3)` → [0, 2, 3]; null when it names none.
 */
export function gresGpuIndices(gres: string | undefined): number[] | null {
  const match = /gpu[^,(]*\(IDX:([0-9,-]+)\)/.exec(gres ?? "");
  return match ? parseIndexList(match[1]) : null;
}

/** `0,2-3` → [0, 2, 3]; null when it is not such a list. */
export function parseIndexList(text: string): number[] | null {
  const trimmed = text.trim();
  if (trimmed === "") return [];
  const out: number[] = [];
  for (const part of trimmed.split(",")) {
    const range = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!range) return null;
    const from = Number(range[1]);
    const to = range[2] === undefined ? from : Number(range[2]);
    if (to < from || to - from > 1024) return null;
    for (let i = from; i <= to; i++) out.push(i);
  }
  return out;
}

/**
 * The GPUs of a partition from `sinfo -h -N -p P -o '%N|%G'`: each node counted once; null
 * when it lists no node (no such partition).
 */
export function partitionGpuCount(sinfoText: string): number | null {
  const perNode = new Map<string, number>();
  for (const line of sinfoText.split("\n")) {
    const [node, gres] = line.split("|");
    if (!node?.trim() || gres === undefined) continue;
    perNode.set(node.trim(), gresGpuCount(gres.trim()));
  }
  if (perNode.size === 0) return null;
  return [...perNode.values()].reduce((sum, n) => sum + n, 0);
}

/** `KEY=value` lines (the file the batch script writes when the job starts). */
export function parseKeyValueLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

/** Splits a GRES list at the commas between entries, not those inside `(S:0,1)`. */
function splitGres(gres: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of gres.trim()) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(current);
      current = "";
    } else current += ch;
  }
  if (current !== "") out.push(current);
  return out.map((e) => e.trim()).filter((e) => e !== "" && e !== "(null)");
}
