import { assertEquals } from "../tests/assert.ts";
import { endFrame, endStateOf } from "./job_state.ts";
import type { ExitInfo } from "./runner/types.ts";

const exit = (overrides: Partial<ExitInfo>): ExitInfo => ({
  exit_code: 0,
  signal: null,
  failure_class: null,
  reason: "exited with code 0",
  log_tail: [],
  ...overrides,
});

Deno.test("endStateOf() reports the runner's verdict as the job_state the server expects", () => {
  assertEquals(endStateOf(exit({})), "EXITED");
  assertEquals(endStateOf(exit({ exit_code: 1, failure_class: "EXIT_CODE" })), "EXITED");
  assertEquals(
    endStateOf(exit({ exit_code: null, signal: "SIGKILL", failure_class: "OOM" })),
    "EXITED",
  );
  assertEquals(
    endStateOf(exit({ exit_code: null, failure_class: "DISPATCH_FAILED" })),
    "DISPATCH_FAILED",
  );
  assertEquals(
    endStateOf(exit({ exit_code: null, signal: "SIGTERM", failure_class: "CANCELLED" })),
    "CANCELLED",
  );
  assertEquals(endStateOf(exit({ exit_code: null, failure_class: "AGENT_RESTART" })), "GONE");
  // Found in the run dir after a restart: how it really ended is known.
  assertEquals(endStateOf(exit({ exit_code: 3, failure_class: "EXIT_CODE" })), "EXITED");
});

Deno.test("endFrame() keeps within the protocol's limits", () => {
  const frame = endFrame(
    { job_id: "j", attempt: 1, run_id: "r" },
    exit({
      reason: "x".repeat(5000),
      log_tail: Array.from({ length: 300 }, () => "y".repeat(5000)),
    }),
    1_700_000_000_000,
  );
  if (frame.type !== "job_state") throw new Error("unreachable");
  assertEquals(frame.reason?.length, 2000);
  assertEquals(frame.log_tail?.length, 200);
  assertEquals(frame.log_tail?.[0].length, 4096);
  assertEquals(frame.ts, 1_700_000_000);
});
