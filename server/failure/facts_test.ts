import assert from "node:assert/strict";
import { buildFacts, cleanLines, normalizeSignal } from "./facts.ts";
import { failed } from "./_test_input.ts";

Deno.test("normalizeSignal() accepts names, bare names and numbers", () => {
  const cases: [string, string][] = [
    ["SIGKILL", "SIGKILL"],
    ["kill", "SIGKILL"],
    ["9", "SIGKILL"],
    ["Killed", "SIGKILL"],
    ["sigsegv", "SIGSEGV"],
    ["15", "SIGTERM"],
    ["64", "signal 64"],
  ];
  for (const [given, want] of cases) assert.equal(normalizeSignal(given), want, given);
});

Deno.test("buildFacts() reads a signal off 128 + n and -n exit codes, not off ordinary ones", () => {
  const cases: [number, string | null][] = [
    [137, "SIGKILL"],
    [-9, "SIGKILL"],
    [139, "SIGSEGV"],
    [1, null],
    [255, null],
    [0, null],
  ];
  for (const [code, signal] of cases) {
    const facts = buildFacts(failed("", { exit_code: code }));
    assert.equal(facts.signal, signal, String(code));
    assert.equal(facts.signalFromExitCode, signal !== null, String(code));
  }
  assert.equal(buildFacts(failed("", { exit_code: 137, signal: "SIGTERM" })).signal, "SIGTERM");
});

Deno.test("cleanLines() strips colours and launcher prefixes, splits entries and keeps seq", () => {
  const lines = cleanLines([
    { seq: 7, text: "\x1b[31m[rank3]: RuntimeError: boom\x1b[0m" },
    { seq: 8, text: "[default0]:first\r\nsecond" },
  ]);
  assert.deepEqual(lines.map((l) => [l.seq, l.text]), [[7, "RuntimeError: boom"], [8, "first"], [
    8,
    "second",
  ]]);
  assert.equal(lines[0].raw, "[rank3]: RuntimeError: boom");
});
