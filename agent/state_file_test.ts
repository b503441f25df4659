import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { dispatchSpec } from "./_testing.ts";
import { type AgentState, loadState, type PersistedAttempt, StateWriter } from "./state_file.ts";

const attempt = (runId: string): PersistedAttempt => ({
  spec: dispatchSpec({ run_id: runId }),
  handle: { run_id: runId, runner: "process", wrapper_pid: 1 },
  state: "RUNNING",
  running_sent: true,
  last_line_seq: 12,
  tensorboard: { version: 1, files: {} },
  checkpoints: {
    version: 2,
    baseline: { "/ckpt/old.pt": { size: 10, mtime_ms: 1000, ino: 7 } },
    reported: { "/ckpt/a.pt": { size: 20, mtime_ms: 2000, ino: null } },
  },
  sys_step: 3,
  cancel_grace_s: null,
});

Deno.test("loadState() reads what StateWriter wrote, and a missing file holds nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assertEquals(await loadState(`${dir}/state.json`), { attempts: [], problems: [] });
    let state: AgentState = { version: 1, attempts: [attempt("r-1")] };
    const writer = new StateWriter(`${dir}/state.json`, () => state, (err) => {
      throw err;
    });
    const saves = [writer.save(), writer.save()];
    state = { version: 1, attempts: [attempt("r-1"), attempt("r-2")] };
    await Promise.all([...saves, writer.save()]);
    const loaded = await loadState(`${dir}/state.json`);
    assertEquals(loaded.attempts.map((a) => a.spec.run_id), ["r-1", "r-2"], "the newest state won");
    assertEquals(loaded.attempts[0], attempt("r-1"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadState() keeps the good attempts of a damaged file and says what was wrong", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/state.json`;
    await Deno.writeTextFile(path, "{not json");
    const torn = await loadState(path);
    assertEquals(torn.attempts, []);
    assertStringIncludes(torn.problems[0], "Cannot parse");
    const bad = { ...attempt("r-2"), last_line_seq: "many" };
    await Deno.writeTextFile(path, JSON.stringify({ version: 1, attempts: [attempt("r-1"), bad] }));
    const partial = await loadState(path);
    assertEquals(partial.attempts.map((a) => a.spec.run_id), ["r-1"]);
    assertStringIncludes(partial.problems[0], `field "last_line_seq"`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
