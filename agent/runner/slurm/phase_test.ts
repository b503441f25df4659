import { assert, assertEquals } from "../../../tests/assert.ts";
import { cancelledByUid, classifySlurmEnd, type SlurmEndFacts, slurmPhase } from "./phase.ts";

Deno.test("slurmPhase() reads Slurm's states as pending, running or ended", () => {
  const cases: [Record<string, string>, unknown][] = [
    [{ JobState: "PENDING", Reason: "Resources" }, {
      phase: "pending",
      reason: "Slurm: pending (Resources)",
    }],
    [{ JobState: "PENDING", Reason: "QOSMaxGRESPerUser" }, {
      phase: "pending",
      reason: "Slurm: pending (QOSMaxGRESPerUser)",
    }],
    [{ JobState: "PENDING", Reason: "None" }, {
      phase: "pending",
      reason: "Slurm: pending (not yet scheduled)",
    }],
    [{ JobState: "CONFIGURING", Reason: "None" }, {
      phase: "pending",
      reason: "Slurm: pending (not yet scheduled)",
    }],
    [{ JobState: "RUNNING", NodeList: "gpu-07" }, { phase: "running", node: "gpu-07" }],
    [{ JobState: "COMPLETING", NodeList: "gpu-07" }, { phase: "running", node: "gpu-07" }],
    [{ JobState: "FAILED", ExitCode: "3:0" }, {
      phase: "ended",
      state: "FAILED",
      reason: "FAILED",
      exit_code: 3,
      signal: null,
    }],
    [{ JobState: "CANCELLED", ExitCode: "0:15" }, {
      phase: "ended",
      state: "CANCELLED",
      reason: "CANCELLED",
      exit_code: null,
      signal: "SIGTERM",
    }],
    // sacct spells it with who did it, and marks requeued states with "+".
    [{ State: "CANCELLED by 1000", ExitCode: "0:0" }, {
      phase: "ended",
      state: "CANCELLED",
      reason: "CANCELLED by 1000",
      exit_code: 0,
      signal: null,
    }],
    [{ State: "NODE_FAIL+", ExitCode: "0:0" }, {
      phase: "ended",
      state: "NODE_FAIL",
      reason: "NODE_FAIL+",
      exit_code: 0,
      signal: null,
    }],
    [{}, null],
  ];
  for (const [record, want] of cases) {
    assertEquals(slurmPhase(record), want, JSON.stringify(record));
  }
});

const base: SlurmEndFacts = {
  state: "COMPLETED",
  state_text: "COMPLETED",
  exit_code: 0,
  signal: null,
  cancelled: false,
  cancelled_by: null,
  log_tail: [],
  time_limit: null,
  node: "gpu-07",
};

Deno.test("classifySlurmEnd() maps Slurm's end states to gpuctl's failure classes", () => {
  const cases: [string, Partial<SlurmEndFacts>, string | null, RegExp][] = [
    ["COMPLETED with exit 0 succeeds", {}, null, /exited with code 0/],
    ["FAILED with exit 3 is EXIT_CODE", { state: "FAILED", exit_code: 3 }, "EXIT_CODE", /code 3/],
    [
      "a CUDA OOM traceback is OOM",
      {
        state: "FAILED",
        exit_code: 1,
        log_tail: ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"],
      },
      "OOM",
      /ran out of GPU memory/,
    ],
    [
      "OUT_OF_MEMORY is OOM",
      { state: "OUT_OF_MEMORY", exit_code: null, signal: "SIGKILL" },
      "OOM",
      /OUT_OF_MEMORY/,
    ],
    [
      "NODE_FAIL is a lost node",
      { state: "NODE_FAIL" },
      "NODE_LOST",
      /gpu-07 failed \(NODE_FAIL\)/,
    ],
    ["PREEMPTED is a lost node", { state: "PREEMPTED" }, "NODE_LOST", /preempted/],
    ["BOOT_FAIL is a lost node", { state: "BOOT_FAIL" }, "NODE_LOST", /BOOT_FAIL/],
    [
      "TIMEOUT names the time limit",
      { state: "TIMEOUT", exit_code: null, signal: "SIGTERM", time_limit: "00:10:00" },
      "SIGNAL",
      /time limit of 00:10:00 .*\(TIMEOUT\)/,
    ],
    [
      "CANCELLED by someone else says who",
      { state: "CANCELLED", cancelled_by: "alice (uid 1000)", exit_code: null, signal: "SIGTERM" },
      "CANCELLED",
      /cancelled in Slurm by alice \(uid 1000\), not by gpuctl/,
    ],
    [
      "CANCELLED without accounting does not guess who",
      { state: "CANCELLED" },
      "CANCELLED",
      /^cancelled in Slurm, not by gpuctl$/,
    ],
    [
      "the agent's own cancel is CANCELLED whatever Slurm says",
      { state: "FAILED", exit_code: 143, cancelled: true },
      "CANCELLED",
      /^cancelled; exited with code 143/,
    ],
    [
      "killed by a signal is SIGNAL",
      { state: "FAILED", exit_code: null, signal: "SIGSEGV" },
      "SIGNAL",
      /SIGSEGV/,
    ],
    [
      "command not found is DISPATCH_FAILED",
      { state: "FAILED", exit_code: 127, log_tail: ["bash: trian.py: command not found"] },
      "DISPATCH_FAILED",
      /could not start/,
    ],
    [
      "forgotten by Slurm with no exit status is AGENT_RESTART",
      { state: null, state_text: "", exit_code: null },
      "AGENT_RESTART",
      /no longer knows the job/,
    ],
    [
      "forgotten by Slurm but the script's exit status is read",
      { state: null, state_text: "", exit_code: 2 },
      "EXIT_CODE",
      /code 2/,
    ],
  ];
  for (const [name, facts, failureClass, reason] of cases) {
    const verdict = classifySlurmEnd({ ...base, ...facts });
    assertEquals(verdict.failure_class, failureClass, name);
    assert(reason.test(verdict.reason), `${name}: ${verdict.reason}`);
  }
});

Deno.test("cancelledByUid() reads sacct's CANCELLED by UID", () => {
  assertEquals(cancelledByUid("CANCELLED by 1000"), "1000");
  assertEquals(cancelledByUid("CANCELLED"), null);
  assertEquals(cancelledByUid("COMPLETED"), null);
});
