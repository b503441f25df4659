import assert from "node:assert/strict";
import { counterFiles } from "./_oom_counter.ts";
import { parseStat, readStat } from "./_proc.ts";
import { decodeExitStatus, signalName } from "./signals.ts";

Deno.test("parseStat() reads fields after a command name with spaces and parentheses", () => {
  const rest = Array.from({ length: 30 }, (_, i) => String(i + 7)).join(" ");
  const stat = parseStat(`4242 (a) b (c)) S 1 4242 4242 ${rest}`);
  assert.deepEqual(stat, {
    pid: 4242,
    state: "S",
    ppid: 1,
    pgrp: 4242,
    session: 4242,
    startTime: 22,
  });
});

Deno.test("parseStat() needs every field up to the start time", () => {
  const fields = (n: number) => Array.from({ length: n }, (_, i) => String(i + 3)).join(" ");
  assert.equal(parseStat(`7 (x) ${fields(19)}\n`), null);
  assert.equal(parseStat(`7 (x) ${fields(20)}`)?.startTime, 22);
  assert.equal(parseStat(`7 (x) ${fields(21)}\n`)?.startTime, 22);
  assert.equal(parseStat("not a stat line"), null);
});

Deno.test("readStat() sees this process and nothing for a pid that does not exist", () => {
  assert.equal(readStat(Deno.pid)?.pid, Deno.pid);
  assert.equal(readStat(2 ** 22 + 1), null);
});

Deno.test("counterFiles() names the v1 memory counter first, then the v2 ones", () => {
  const text = "4:memory:/job/a\n1:cpu:/x\n0::/user.slice/s\n";
  assert.deepEqual(counterFiles(text, "/cg"), [
    "/cg/memory/job/a/memory.oom_control",
    "/cg/user.slice/s/memory.events",
    "/cg/unified/user.slice/s/memory.events",
  ]);
});

Deno.test("decodeExitStatus() reads 128 + N as signal N, like a shell", () => {
  assert.deepEqual(decodeExitStatus(0), { exit_code: 0, signal: null });
  assert.deepEqual(decodeExitStatus(128), { exit_code: 128, signal: null });
  assert.deepEqual(decodeExitStatus(137), { exit_code: null, signal: "SIGKILL" });
  assert.deepEqual(decodeExitStatus(143), { exit_code: null, signal: "SIGTERM" });
  assert.deepEqual(decodeExitStatus(255), { exit_code: 255, signal: null });
  assert.equal(signalName(36), "SIGRTMIN+2");
});
