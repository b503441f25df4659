/**
 * The family second chance: when no catalogue entry recognised the deciding error (the last
 * traceback's exceptions, or the log's last error line) and the card would fall back to a
 * generic "Python exception" or "non-zero exit", the error's type and message are read once
 * more for the words of a family of causes ({@linkcode FAMILIES}): memory near GPU words or
 * host words, NaN with loss words, shapes, checkpoints, versions, the network… The card then
 * names that family's catalogue entry, whose fixes and retry verdict it keeps. A specific match
 * always wins: this only replaces the generic fallback.
 *
 * Words are matched as words, never as parts of words ("inf" is not in "info", "oom" not in
 * "room"); an exception's type is read as its modules' names and its CamelCase name's words
 * without the generic suffix (`tensorflow…ResourceExhaustedError`: "tensorflow … resource
 * exhausted"); `_` and punctuation between words are spaces; a path is read as the word
 * "path" and a URL as its host.
 */
import type { CauseEntry, CauseMatch } from "./cause.ts";
import { excerpt, exitCodeEvidence, logEvidence, present } from "./cause.ts";
import type { FailureFacts, LogLine } from "./facts.ts";
import { FAMILIES, type Family } from "./family_vocabulary.ts";

// Exceptions that name a mistake in the code itself: their message names identifiers (an
// attribute `OutOfMemoryError`, a name `nan_check`), not the failure's family.
const CODE_ERRORS = new Set([
  "AttributeError",
  "NameError",
  "SyntaxError",
  "IndentationError",
  "UnboundLocalError",
]);

/** A family's words compiled: whole words, any run of `_` or punctuation between them. */
function wordsRegex(words: readonly string[]): RegExp {
  const alternatives = words.map((w) =>
    w.split(/\s+/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\W_]+")
  );
  return new RegExp(`(?<![A-Za-z0-9])(?:${alternatives.join("|")})s?(?![A-Za-z0-9])`, "i");
}

interface Compiled {
  family: Family;
  any: RegExp | null;
  all: [string, RegExp][];
  unless: RegExp | null;
  types: ReadonlySet<string>;
}

const COMPILED: readonly Compiled[] = FAMILIES.map((family) => ({
  family,
  any: family.any ? wordsRegex(family.any) : null,
  all: Object.entries(family.all ?? {}).map(([name, words]) => [name, wordsRegex(words)]),
  unless: family.unless ? wordsRegex(family.unless) : null,
  types: new Set(family.types ?? []),
}));

const URL_TEXT = /\bhttps?:\/\/([^\s/'"`]+)[^\s'"`]*/g;
const PATH_TEXT =
  /(?<![\w.])(?:[A-Za-z]:\\|~?\.{0,2}\/)[^\s'"`,)\]]*|[\w.-]+(?:\/[\w.-]+){2,}|\b[\w-]+(?:\.[\w-]+)*\.(?:pt|pth|ckpt|bin|safetensors|json|ya?ml|txt|csv|h5|hdf5|npy|npz|pkl|pickle|jpe?g|png|tar|gz|zip|tfrecords?|onnx|py|wav|mp4|parquet|arrow|msgpack)\b/gi;

/**
 * The text a family's words are looked for in: CamelCase names as their words, a URL as its
 * host, a path as the word "path".
 */
export function familyText(text: string): string {
  return text
    .replace(URL_TEXT, " $1 ")
    .replace(PATH_TEXT, " path ")
    .replace(/NaNs?\b/g, " nan ")
    .replace(/\b[A-Z][A-Za-z0-9]*\b/g, camelWords);
}

// `OutOfMemoryError` → `Out Of Memory Error`, `DefaultCPUAllocator` → `Default CPU Allocator`;
// only names that start with a capital, so `cuDNN` stays one word, and a plural acronym
// (`GPUs`) stays one word.
function camelWords(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z]{2})/g, "$1 $2");
}

// A module or name part that only says "this is an error" (`errors_impl`, `exceptions`).
const GENERIC_PART = /error|exception|^_?utils$/i;

/**
 * An exception type as the words that tell something: its modules' names
 * (`huggingface_hub`) and its name without the generic suffix (`ResourceExhaustedError`:
 * `ResourceExhausted`), so that the suffix "Error" never counts as a family's word.
 */
function typeWords(type: string | null): string {
  if (!type) return "";
  const parts = type.split(".");
  const name = parts.pop()!.replace(/(?:Error|Exception|Warning)$/, "");
  return [...parts.filter((p) => !GENERIC_PART.test(p)), name].join(" ");
}

/** Which family a deciding error belongs to, and the words that showed it; null when none. */
export function familyOf(
  type: string | null,
  message: string,
): { family: Family; reasons: string[] } | null {
  const name = type?.split(".").pop() ?? null;
  if (name && CODE_ERRORS.has(name)) return null;
  const text = familyText(`${typeWords(type)} ${message}`);
  for (const c of COMPILED) {
    if (c.unless?.test(text)) continue;
    if (name && c.types.has(name)) return { family: c.family, reasons: [`type ${name}`] };
    const any = c.any?.exec(text);
    if (any) return { family: c.family, reasons: [`"${any[0]}"`] };
    if (c.all.length === 0) continue;
    const reasons: string[] = [];
    for (const [group, re] of c.all) {
      const m = re.exec(text);
      if (!m) break;
      reasons.push(`${group} word "${m[0]}"`);
    }
    if (reasons.length === c.all.length) return { family: c.family, reasons };
  }
  return null;
}

/** One error the card could rest on: its line, its type, and its whole message. */
interface DecidingError {
  line: LogLine;
  type: string | null;
  message: string;
}

// `SomeError: message` at the start of a line without a traceback.
const EXCEPTION_LINE = /^\W*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)):\s*(.*)$/;

/**
 * The errors the family second chance reads, the strongest first: the exceptions of the last
 * traceback chain (the final one first, each with the lines continuing its message), then the
 * line the fallback quoted, then the log's last error line. A launcher's report that a child
 * failed is not one: the child's own error is what counts.
 */
function decidingErrors(facts: FailureFacts, quoted: LogLine | null): DecidingError[] {
  const out: DecidingError[] = [];
  const seen = new Set<LogLine>();
  const add = (line: LogLine | null, type: string | null, message: string) => {
    if (!line || seen.has(line) || facts.child?.line === line) return;
    seen.add(line);
    out.push({ line, type, message });
  };
  const chain = facts.tracebacks.filter((tb) => tb.exception && facts.deciding.has(tb.exception));
  for (const tb of chain.toReversed()) {
    add(tb.exception, tb.type, [tb.message, ...tb.continuation.map((l) => l.text)].join(" "));
  }
  for (const line of [quoted, facts.lastError]) {
    if (!line) continue;
    const m = EXCEPTION_LINE.exec(line.text);
    const rest = linesAfter(facts, line).map((l) => l.text).join(" ");
    add(line, m ? m[1] : null, `${m ? m[2] : line.text} ${rest}`);
  }
  return out;
}

/** Lines after an error line without a traceback that a message may run on in. */
const MAX_RUN_ON = 4;
// A line that starts something else: a traceback, another exception, a logger's record.
const OWN_LINE =
  /^\s*(?:Traceback \(most recent call last\)|\[?\d{4}-\d\d-\d\d|[EWIF]\d{4} |\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b)/;

// The lines right after `line` that continue its message (`RuntimeError: tensor.h 168` then
// `cuda failed with error 2 out of memory`): up to the first blank line, a new record or
// another exception.
function linesAfter(facts: FailureFacts, line: LogLine): LogLine[] {
  const at = facts.lines.indexOf(line);
  const out: LogLine[] = [];
  for (const next of facts.lines.slice(at + 1, at + 1 + MAX_RUN_ON)) {
    if (next.text.trim() === "" || OWN_LINE.test(next.text) || EXCEPTION_LINE.test(next.text)) {
      break;
    }
    out.push(next);
  }
  return out;
}

/** A second chance's finding: the entry it names and its match. */
export interface FamilyFinding {
  entry: CauseEntry;
  match: CauseMatch;
}

/**
 * The family second chance for a run whose best match was a generic fallback: the first
 * deciding error whose words fit a family, as a match of that family's catalogue entry (its
 * fixes and retry verdict are the entry's), or null. `quoted` is the line the fallback quoted.
 */
export function familySecondChance(
  facts: FailureFacts,
  catalogue: readonly CauseEntry[],
  quoted: LogLine | null,
): FamilyFinding | null {
  for (const error of decidingErrors(facts, quoted)) {
    const found = familyOf(error.type, error.message);
    if (!found) continue;
    const entry = catalogue.find((e) => e.id === found.family.cause);
    if (!entry) continue;
    const why = `matched by family: ${found.reasons.join(", ")}`;
    return {
      entry,
      match: {
        confidence: 0.45,
        likely_cause: `By its words, ${found.family.says}: "${excerpt(error.line.raw, 200)}" ` +
          `(${why}; no specific pattern of the catalogue knows this message)`,
        evidence: present(logEvidence(error.line, why), exitCodeEvidence(facts)),
      },
    };
  }
  return null;
}
