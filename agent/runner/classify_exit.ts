// Decides how an attempt ended, from plain facts (DESIGN.md, "Scheduling": cancel, OOM).

import type { FailureClass } from "../../protocol/vocabulary.ts";
import type { JobRunner } from "../../protocol/vocabulary.ts";

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
  /**
   * The cgroup's OOM-kill counter rose while it ran (true), did not (false), unknown (null);
   * for Docker, the container's `OOMKilled` (its own cgroup, with its `--memory` limit).
   */
  oomKilled: boolean | null;
  /** Which runner ran it: Docker reports its own failures to start with exit code 125. */
  runner?: JobRunner;
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
  /command not found|executable file not found|No such file or directory|Permission denied/i;

/** Docker's exit status when the daemon could not create or start the container. */
const DOCKER_RUN_FAILED = 125;

/** What `docker run` prints when the image is neither on the host nor pullable. */
const DOCKER_NO_IMAGE = /^Unable to find image '([^']+)' locally$/;
const DOCKER_NO_IMAGE_ANY =
  /No such image: (\S+)|pull access denied for ([^,\s]+)|manifest for (\S+) not found/;

/**
 * The line that says why: the docker client's own error (`docker: Error response …`) when
 * there is one, not the usage hint it prints after it, else the last line.
 */
function lastSaid(tail: string[], runner: ExitFacts["runner"]): string {
  const lines = tail.map((line) => line.trim()).filter((line) => line !== "");
  if (runner === "docker") {
    const error = lines.findLast((line) => line.startsWith("docker: "));
    if (error !== undefined) return error;
    const hint = /^Run 'docker .*--help' for more information/;
    return lines.findLast((line) => !hint.test(line)) ?? "";
  }
  return lines.at(-1) ?? "";
}

/** The image docker could not find or pull, from its output; null when that was not it. */
function missingImage(tail: string[]): string | null {
  for (const line of tail.toReversed()) {
    const local = DOCKER_NO_IMAGE.exec(line.trim());
    if (local) return local[1];
    const other = DOCKER_NO_IMAGE_ANY.exec(line);
    if (other) return (other[1] ?? other[2] ?? other[3]).replace(/^"|"$/g, "");
  }
  return null;
}

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
    const where = facts.runner === "docker"
      ? " (docker inspect: OOMKilled): the container reached its memory limit"
      : "";
    return { failure_class: "OOM", reason: `killed by SIGKILL from the kernel OOM killer${where}` };
  }
  if (facts.oomKilled === true && facts.signal !== "SIGTERM" && facts.signal !== "SIGINT") {
    // The main process ended on its own, but the kernel OOM killer took one of the job's
    // processes (a DataLoader worker, a rank) in its memory cgroup meanwhile.
    return {
      failure_class: "OOM",
      reason: `the kernel OOM killer killed a process of the job (its memory cgroup's oom_kill ` +
        `count rose); ${end}`,
    };
  }

  const last = lastSaid(tail, facts.runner);
  if ((facts.exit_code === 126 || facts.exit_code === 127) && NOT_STARTED_PATTERN.test(last)) {
    return { failure_class: "DISPATCH_FAILED", reason: `could not start the program: ${last}` };
  }
  if (facts.runner === "docker" && facts.exit_code === DOCKER_RUN_FAILED) {
    const image = missingImage(tail);
    if (image !== null) {
      // Kept short: the failure card quotes the first 200 characters of the reason.
      return {
        failure_class: "DISPATCH_FAILED",
        reason: `image "${image}" is not on this node and could not be pulled: ` +
          `build it there (docker build -t ${image} .) or load it (docker load -i FILE)`,
      };
    }
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
