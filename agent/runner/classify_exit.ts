// Decides how an attempt ended, from plain facts (DESIGN.md, "Scheduling": cancel, OOM).

import type { FailureClass } from "../../protocol/rest.ts";

/** What is known when an attempt has ended. */
export interface ExitFacts {
  /** Exit code of the job, null when it died of a signal or nothing was recorded. */
  exit_code: number | null;
  /** Signal name (`"SIGKILL"`) that ended the job, or null. */
  signal: string | null;
  /** The agent cancelled the attempt before it ended. */
  cancelled: boolean;
  /** The last lines of output, oldest first. */
  log_tail: string[];
  /** The cgroup's OOM-kill counter rose while it ran (true), did not (false), unknown (null). */
  oomKilled: boolean | null;
  /** Which runner ran it: Docker reports its own failures to start with exit code 125. */
  runner?: "process" | "docker";
}

/** The failure class (null: success) and a sentence for people. */
export interface ExitVerdict {
  failure_class: FailureClass | null;
  reason: string;
}

/** Lines that mean the GPU ran out of memory (PyTorch, cuBLAS, the CUDA runtime). */
export const CUDA_OOM_PATTERN =
  /CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation/;

/** A last line that says the program could not be found or executed at all. */
const NOT_STARTED_PATTERN =
  /command not found|executable file not found|No such file or directory|Permission denied/;

/** Docker's exit status when the daemon could not create or start the container. */
const DOCKER_RUN_FAILED = 125;

function describeEnd(facts: ExitFacts): string {
  if (facts.signal !== null) return `killed by ${facts.signal}`;
  if (facts.exit_code !== null) return `exited with code ${facts.exit_code}`;
  return "ended with no exit status";
}

/** Classifies an ended attempt; see the table in `classify_exit_test.ts`. */
export function classifyExit(facts: ExitFacts): ExitVerdict {
  const end = describeEnd(facts);
  if (facts.cancelled) return { failure_class: "CANCELLED", reason: `cancelled; ${end}` };
  if (facts.exit_code === null && facts.signal === null) {
    return {
      failure_class: "AGENT_RESTART",
      reason: "the process ended while the agent was away and left no exit status",
    };
  }
  if (facts.exit_code === 0) return { failure_class: null, reason: end };

  const tail = facts.log_tail.slice(-100);
  const oomLine = tail.findLast((line) => CUDA_OOM_PATTERN.test(line));
  if (oomLine !== undefined) {
    return { failure_class: "OOM", reason: `ran out of GPU memory ("${oomLine.trim()}"); ${end}` };
  }
  if (facts.signal === "SIGKILL" && facts.oomKilled === true) {
    return { failure_class: "OOM", reason: "killed by SIGKILL from the kernel OOM killer" };
  }

  const last = (tail.at(-1) ?? "").trim();
  if ((facts.exit_code === 126 || facts.exit_code === 127) && NOT_STARTED_PATTERN.test(last)) {
    return { failure_class: "DISPATCH_FAILED", reason: `could not start the program: ${last}` };
  }
  if (facts.runner === "docker" && facts.exit_code === DOCKER_RUN_FAILED) {
    const said = last === "" ? "" : `: ${last}`;
    return {
      failure_class: "DISPATCH_FAILED",
      reason: `docker could not run the container (exit code 125)${said}`,
    };
  }

  if (facts.signal !== null) {
    const reason = facts.signal === "SIGKILL" && facts.oomKilled === null
      ? "killed by SIGKILL, possibly the kernel OOM killer"
      : end;
    return { failure_class: "SIGNAL", reason };
  }
  return { failure_class: "EXIT_CODE", reason: end };
}
