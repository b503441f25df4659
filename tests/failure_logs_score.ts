// deno-lint-ignore-file no-console -- a scoring script reports on the console
/**
 * Scores the failure diagnosis on real failure logs from public issue threads: the 41 logs of
 * tests/fixtures/failure_logs (all in the development half) and the corpus of
 * tests/fixtures/failure_corpus, split by source thread into a development half and a
 * held-out half, plus sets collected after the patterns were frozen (`fresh`, `blind2`,
 * `blind3`, `blind4`, `blind5`, `blind6`). For each log: what the agent would report (classifyExit) and
 * what the server decides (the failure card and the retry policy), against what the log's entry
 * expects.
 *
 *     deno run -A tests/failure_logs_score.ts               # every set
 *     deno run -A tests/failure_logs_score.ts --split=dev   # the development half only
 *
 * A log is right ("exact") when the card names the expected cause. A retry contradiction is a
 * card that says "fails again" for a transient failure or "may help" for a deterministic one;
 * an undecided card ("unknown") is counted apart. The misses are listed with the confusion
 * (expected cause → given cause).
 */
import { classifyExit } from "../agent/runner/classify_exit.ts";
import { diagnoseFailure } from "../server/failure/mod.ts";
import type { Diagnosis, FailureInput } from "../server/failure/mod.ts";
import { retryDecision } from "../server/scheduler/mod.ts";

/** How the original process ended. */
export type Die = { exit_code: number } | { signal: string };

/** One entry of tests/fixtures/failure_logs/index.json. */
export interface FailureLogFixture {
  file: string;
  source: string;
  die: Die;
  /** 1-based line ranges the original printed on stdout; the rest went to stderr. */
  stdout_lines: [number, number][];
  expect: {
    cause: string;
    /** Text the card's first evidence quotes. */
    line: string;
    retry: string;
    requeue: boolean;
    /** Text one of the suggested fixes holds. */
    fix?: string;
    /** Text the likely cause holds. */
    likely?: string;
  };
}

/** The sets, in the order they were collected and are reported. */
export const SPLITS = [
  "dev",
  "heldout",
  "fresh",
  "blind2",
  "blind3",
  "blind4",
  "blind5",
  "blind6",
  "blind7",
  "blind8",
] as const;
/** One of {@linkcode SPLITS}. */
export type Split = typeof SPLITS[number];

/** One entry of tests/fixtures/failure_corpus/manifest.json. */
export interface CorpusEntry {
  id: string;
  source: string;
  /** The framework or launcher the log comes from. */
  stack: string;
  die: Die;
  expect: { cause: string; retry: string };
  /**
   * What the thread shows where it differs from what the log alone shows (`expect` is the log's
   * reading in sets labelled from the log).
   */
  thread_label?: { cause: string; retry: string };
  split: Split;
  /** False: scored by this script only, not replayed by tests/failure_logs_e2e_test.ts. */
  replay?: boolean;
}

/** A log of either set, in one shape. */
export interface FailureCase {
  name: string;
  /** The log file. */
  url: URL;
  source: string;
  stack: string;
  die: Die;
  stdout_lines: [number, number][];
  split: Split;
  expect: { cause: string; retry: string; line?: string; fix?: string; likely?: string };
  /** The thread's reading where it differs from the log's (see CorpusEntry). */
  thread_label?: { cause: string; retry: string };
  /** False: scored only, not replayed through the process runner. */
  replay: boolean;
}

/** The fixtures folder of the first 41 logs. */
export const FIXTURES = new URL("./fixtures/failure_logs/", import.meta.url);
/** The corpus folder. */
export const CORPUS = new URL("./fixtures/failure_corpus/", import.meta.url);

/** The first 41 logs and their index. */
export async function loadFixtures(): Promise<FailureLogFixture[]> {
  return JSON.parse(await Deno.readTextFile(new URL("index.json", FIXTURES)));
}

/** Every log of both sets: the first 41 (development half) and the corpus. */
export async function loadCases(): Promise<FailureCase[]> {
  const old = (await loadFixtures()).map((f): FailureCase => ({
    name: f.file.replace(/\.log$/, ""),
    url: new URL(f.file, FIXTURES),
    source: f.source,
    stack: "mixed",
    die: f.die,
    stdout_lines: f.stdout_lines,
    split: "dev",
    expect: f.expect,
    replay: true,
  }));
  const manifest: CorpusEntry[] = JSON.parse(
    await Deno.readTextFile(new URL("manifest.json", CORPUS)),
  );
  const corpus = manifest.map((e): FailureCase => ({
    name: e.id,
    url: new URL(`logs/${e.id}.log`, CORPUS),
    source: e.source,
    stack: e.stack,
    die: e.die,
    stdout_lines: [],
    split: e.split,
    expect: e.expect,
    thread_label: e.thread_label,
    replay: e.replay !== false,
  }));
  return [...old, ...corpus];
}

/** A log's lines. */
export async function caseLines(url: URL): Promise<string[]> {
  const text = await Deno.readTextFile(url);
  return text.replace(/\n$/, "").split("\n");
}

/** What is wrong with a card and a decision against a fixture's full expectation; empty when right. */
export function misses(
  expect: FailureCase["expect"],
  card: { cause_id: string; evidence: { detail: string }[]; likely_cause: string },
  requeued: boolean,
  fixes: string[] = [],
): string[] {
  const out: string[] = [];
  const e = expect;
  if (card.cause_id !== e.cause) out.push(`cause ${card.cause_id}, expected ${e.cause}`);
  if (e.line && !card.evidence[0]?.detail.includes(e.line)) {
    out.push(`evidence "${card.evidence[0]?.detail.slice(0, 120)}", expected "${e.line}"`);
  }
  if (requeued !== (e.retry === "may_help")) {
    out.push(`requeued ${requeued}, expected ${e.retry === "may_help"}`);
  }
  if (e.likely && !card.likely_cause.includes(e.likely)) {
    out.push(`likely cause "${card.likely_cause}" lacks "${e.likely}"`);
  }
  if (e.fix && !fixes.some((x) => x.includes(e.fix!))) out.push(`no fix with "${e.fix}"`);
  return out;
}

/** Whether a card's verdict contradicts the expected one (transient against deterministic). */
export function contradicts(given: string, expected: string): boolean {
  return (given === "fails_again" && expected === "may_help") ||
    (given === "may_help" && expected === "fails_again");
}

/** The card and the scheduler's decision for a log, without processes. */
export async function diagnoseCase(
  c: FailureCase,
): Promise<{ card: Diagnosis; requeue: boolean }> {
  const lines = await caseLines(c.url);
  const end = "signal" in c.die
    ? { exit_code: null, signal: c.die.signal }
    : { exit_code: c.die.exit_code, signal: null };
  const verdict = classifyExit({ ...end, cancelled: false, log_tail: lines, oomKilled: false });
  const input: FailureInput = {
    status: "FAILED",
    ...end,
    failure_class: verdict.failure_class,
    events: [{ type: "RUN_FAILED", message: `ended FAILED: ${verdict.reason}` }],
    log_tail: lines.map((text, i) => ({ seq: i + 1, text })),
  };
  const card = diagnoseFailure(input);
  const job = { attempt: 1, max_attempts: 3, infra_attempts: 0 };
  const decision = retryDecision(job, verdict.failure_class ?? "EXIT_CODE", card);
  return { card, requeue: decision.requeue };
}

async function score(only: string | undefined): Promise<void> {
  const cases = (await loadCases()).filter((c) => !only || c.split === only);
  for (const split of SPLITS) {
    const mine = cases.filter((c) => c.split === split);
    if (mine.length === 0) continue;
    let exact = 0, contradictions = 0, undecided = 0, detail = 0;
    // Against the threads' readings: the thread's label where the entry has one, else its own.
    let threadExact = 0, threadContradictions = 0;
    const threadLabelled = mine.filter((c) => c.thread_label).length;
    const lines: string[] = [];
    for (const c of mine) {
      const { card, requeue } = await diagnoseCase(c);
      const right = card.cause_id === c.expect.cause;
      const thread = c.thread_label ?? c.expect;
      if (card.cause_id === thread.cause) threadExact++;
      if (contradicts(card.retry, thread.retry)) threadContradictions++;
      if (right) exact++;
      if (contradicts(card.retry, c.expect.retry)) contradictions++;
      if (card.retry === "unknown") undecided++;
      const other = misses(c.expect, card, requeue, card.suggested_fixes)
        .filter((m) => !m.startsWith("cause "));
      if (right && other.length > 0) detail++;
      if (!right || contradicts(card.retry, c.expect.retry) || other.length > 0) {
        lines.push(
          `  ${c.name} [${c.stack}]: ${c.expect.cause} → ${card.cause_id}` +
            ` (retry ${card.retry}, expected ${c.expect.retry})` +
            (other.length ? `; ${other.join("; ")}` : ""),
        );
      }
    }
    const pct = (100 * exact / mine.length).toFixed(1);
    console.log(
      `${split}: ${exact} of ${mine.length} exact (${pct} %), ${contradictions} retry ` +
        `contradictions, ${undecided} undecided, ${detail} right cause with a wrong detail`,
    );
    if (threadLabelled > 0) {
      console.log(
        `${split} against the threads' readings (${threadLabelled} entries differ from the log's): ` +
          `${threadExact} of ${mine.length} exact, ${threadContradictions} retry contradictions`,
      );
    }
    for (const l of lines) console.log(l);
  }
}

if (import.meta.main) {
  const only = Deno.args.find((a) => a.startsWith("--split="))?.slice("--split=".length);
  await score(only);
}
