// deno-lint-ignore-file no-console -- a scoring script reports on the console
/**
 * Scores the failure diagnosis on the real failure logs in tests/fixtures/failure_logs: for
 * each, what the agent would report (classifyExit) and what the server decides (the failure
 * card and the retry policy), against what the fixture's index expects.
 *
 *     deno run -A tests/failure_logs_score.ts
 *
 * A fixture is right when the card names the expected cause, quotes the expected line first,
 * and the scheduler requeues exactly when the cause is transient.
 */
import { classifyExit } from "../agent/runner/classify_exit.ts";
import { diagnoseFailure } from "../server/failure/mod.ts";
import type { FailureInput } from "../server/failure/mod.ts";
import { retryDecision } from "../server/scheduler/mod.ts";

/** One entry of tests/fixtures/failure_logs/index.json. */
export interface FailureLogFixture {
  file: string;
  source: string;
  die: { exit_code: number } | { signal: string };
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

/** The fixtures folder. */
export const FIXTURES = new URL("./fixtures/failure_logs/", import.meta.url);

/** The fixtures and their index. */
export async function loadFixtures(): Promise<FailureLogFixture[]> {
  return JSON.parse(await Deno.readTextFile(new URL("index.json", FIXTURES)));
}

/** A fixture's log lines. */
export async function fixtureLines(f: FailureLogFixture): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(f.file, FIXTURES));
  return text.replace(/\n$/, "").split("\n");
}

/** What is wrong with a card and a decision against the fixture; empty when right. */
export function misses(
  f: FailureLogFixture,
  card: { cause_id: string; evidence: { detail: string }[]; likely_cause: string },
  requeued: boolean,
  fixes: string[] = [],
): string[] {
  const out: string[] = [];
  const e = f.expect;
  if (card.cause_id !== e.cause) out.push(`cause ${card.cause_id}, expected ${e.cause}`);
  if (!card.evidence[0]?.detail.includes(e.line)) {
    out.push(`evidence "${card.evidence[0]?.detail.slice(0, 120)}", expected "${e.line}"`);
  }
  if (requeued !== e.requeue) out.push(`requeued ${requeued}, expected ${e.requeue}`);
  if (e.likely && !card.likely_cause.includes(e.likely)) {
    out.push(`likely cause "${card.likely_cause}" lacks "${e.likely}"`);
  }
  if (e.fix && !fixes.some((x) => x.includes(e.fix!))) out.push(`no fix with "${e.fix}"`);
  return out;
}

async function score(): Promise<void> {
  const fixtures = await loadFixtures();
  let right = 0;
  for (const f of fixtures) {
    const lines = await fixtureLines(f);
    const end = "signal" in f.die
      ? { exit_code: null, signal: f.die.signal }
      : { exit_code: f.die.exit_code, signal: null };
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
    // deno-lint-ignore no-explicit-any
    const decide = retryDecision as (...args: any[]) => { requeue: boolean };
    const decision = decide(job, verdict.failure_class, card);
    const wrong = misses(f, card, decision.requeue, card.suggested_fixes);
    if (wrong.length === 0) right++;
    console.log(`${wrong.length ? "MISS" : "ok  "} ${f.file}: ${wrong.join("; ")}`);
  }
  const causes = new Set(fixtures.map((f) => f.expect.cause)).size;
  console.log(`${right} of ${fixtures.length} right (${causes} causes)`);
}

if (import.meta.main) await score();
