/**
 * How the process ended, from the runner and the log: cancelled, node lost, agent restart,
 * killed (host OOM killer, SIGKILL, a launcher's `-9`), segfault, abort, interrupt,
 * termination, command not found, a failed dispatch, a DataLoader worker killed.
 */
import {
  type CauseEntry,
  childName,
  excerpt,
  exitCodeEvidence,
  failureClassEvidence,
  findLine,
  killedBy,
  logEvidence,
  present,
  signalEvidence,
} from "./cause.ts";
import type { FailureFacts } from "./facts.ts";
import type { Evidence } from "./failure_types.ts";

/** A person (or agent) cancelled the job: not a failure. */
export const CANCELLED_CAUSE: CauseEntry = {
  id: "cancelled",
  title: "cancelled",
  retry: "not_a_failure",
  retry_advice: "Nothing failed: the run was stopped on purpose. Retry (`gpuctl job retry`) only " +
    "if the cancel was a mistake; the run restarts from scratch unless the script resumes from " +
    "its last checkpoint.",
  fixes: [],
  match(facts) {
    if (facts.failureClass !== "CANCELLED" && facts.status !== "CANCELLED") return null;
    const by = facts.input.cancelled_by;
    return {
      authoritative: true,
      confidence: 0.99,
      likely_cause: by ? `The run was cancelled by "${by}"` : "The run was cancelled by a user",
      evidence: present(
        facts.failureClass ? failureClassEvidence(facts) : null,
        facts.failureClass ? null : { kind: "failure_class", detail: `status ${facts.status}` },
        signalEvidence(facts),
      ),
    };
  },
};

/** The node stopped reporting, so the run's outcome is unknown. */
export const NODE_LOST_CAUSE: CauseEntry = {
  id: "node_lost",
  title: "node lost",
  retry: "may_help",
  retry_advice: "A retry may help: the node (or its agent) went silent, which says nothing " +
    "about the training code.",
  fixes: [
    "Check the node: `gpuctl nodes`, then on the host the agent's log " +
    "(`journalctl --user -u gpuctl-agent`) and `dmesg` for a crash, reboot or kernel OOM",
    "Check the network between the node and the server",
    "Save checkpoints regularly and resume from the latest one, so a lost node costs minutes",
  ],
  match(facts) {
    const lostClass = facts.failureClass === "NODE_LOST";
    if (!lostClass && facts.status !== "LOST") return null;
    return {
      authoritative: true,
      confidence: lostClass ? 0.98 : 0.9,
      likely_cause: "The node running the job stopped sending heartbeats, so the run was " +
        "marked lost; the training process itself may have been fine",
      evidence: [
        lostClass
          ? failureClassEvidence(facts, " (no heartbeat from the node for 90 s)")
          : { kind: "failure_class", detail: `status ${facts.status}` },
      ],
    };
  },
};

/** The agent restarted and could not reattach to the job's process. */
export const AGENT_RESTART_CAUSE: CauseEntry = {
  id: "agent_restart",
  title: "agent restarted",
  retry: "may_help",
  retry_advice: "A retry may help: the agent restarted and lost the process, which says " +
    "nothing about the training code.",
  fixes: [
    "Check why the agent restarted (`journalctl --user -u gpuctl-agent` on the node)",
    "Resume from the latest checkpoint",
  ],
  match(facts) {
    if (facts.failureClass !== "AGENT_RESTART") return null;
    return {
      // The control plane's own record: what the log tail says happened before is not final.
      authoritative: true,
      confidence: 0.98,
      likely_cause: "The gpuctl agent restarted and could not reattach to the job's process",
      evidence: [failureClassEvidence(facts)],
    };
  },
};

const HOST_OOM_LOG = [
  /Out of memory: Kill(?:ed)? process/i,
  /\boom-kill(?:er)?\b/i,
  /line \d+:\s+\d+ Killed\b/,
  // The shell's "Killed", alone or after a progress bar that left its line open
  // (`…| 331/1063 [01:06<03:59,  3.06it/s]Killed`).
  /^\s*Killed\s*$/,
  /\]\s*Killed\s*$/,
  // The same report from a shell in a Chinese locale.
  /^\s*已杀死\s*$/,
];

/**
 * Ray's memory monitor, which kills a task or actor when the node's RAM passes its threshold:
 * the raylet's report (`… Workers (tasks / actors) killed due to memory pressure (OOM)`) and
 * the exception the caller gets (`ray.exceptions.OutOfMemoryError: Task was killed due to the
 * node running low on memory`, `RayOutOfMemoryError` of older Ray). Host memory, not the GPU's.
 */
export const RAY_MEMORY_MONITOR =
  /killed due to memory pressure \(OOM\)|running low on memory|\bRayOutOfMemoryError\b|\bray\.exceptions\.OutOfMemoryError\b/;

/**
 * Windows out of commit memory (RAM plus the paging file) as processes start or load a library:
 * `OSError: [WinError 1455] The paging file is too small for this operation to complete`, in
 * English or in the system's language. Host memory, though nothing is killed.
 */
const PAGING_FILE = /\[WinError 1455\]|paging file is too small|页面文件太小/;

function who(facts: FailureFacts, text: string | undefined): string {
  if (findLine(facts, [WORKER_DIED])) return "A DataLoader worker was";
  if (text && /DataLoader worker/.test(text)) return "A DataLoader worker was";
  const child = childName(facts);
  return child ? `The training process of ${child} was` : "The process was";
}

/**
 * The kernel's OOM killer ended the process: the host ran out of RAM. Only the agent's
 * OOM-kill counter or a `Killed` line says so; a bare SIGKILL is {@linkcode KILLED_CAUSE}.
 */
export const HOST_OOM_CAUSE: CauseEntry = {
  id: "host_oom_killed",
  title: "killed by the host OOM killer",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will most likely be killed again: it " +
    "needs the same host memory. Reduce it first (if another process filled the memory, a " +
    "retry may succeed).",
  fixes: [
    "Lower the DataLoader's `num_workers` (each worker holds a copy of the dataset object) " +
    "and `prefetch_factor`",
    "Load data lazily (memory-map or stream it) instead of reading the whole dataset into RAM",
    "Check `dmesg` on the node for `Out of memory: Killed process` to confirm",
    "Pin the job to a node with more RAM, or run fewer jobs on the node at once",
  ],
  match(facts) {
    const ray = findLine(facts, [RAY_MEMORY_MONITOR]);
    if (ray) {
      return {
        confidence: 0.88,
        likely_cause: "Ray's memory monitor killed a task or actor: the node's RAM passed its " +
          `threshold (host memory, not the GPU's): "${excerpt(ray.line.raw, 160)}"`,
        evidence: present(logEvidence(ray.line), exitCodeEvidence(facts)),
        fixes: [
          "Request more memory per task (`memory=` in `@ray.remote`, or more CPUs per task) so " +
          "fewer run on a node at once",
          "`ray logs raylet.out -ip <node>` lists the top memory users at the kill",
        ],
      };
    }
    const paging = findLine(facts, [PAGING_FILE]);
    if (paging) {
      return {
        confidence: 0.88,
        likely_cause: "Windows ran out of memory for the process (RAM plus the paging file), " +
          `typically as DataLoader workers start, each loading PyTorch: "${
            excerpt(paging.line.raw, 160)
          }"`,
        evidence: present(logEvidence(paging.line), exitCodeEvidence(facts)),
        fixes: [
          "Lower the DataLoader's `num_workers` (on Windows each worker is a new process that " +
          "loads PyTorch's libraries again), or set it to 0",
          "Let Windows manage the paging file's size, or enlarge it on a drive with free space",
        ],
      };
    }
    const hit = findLine(facts, HOST_OOM_LOG);
    const counter = facts.oomKillCounterRose;
    if (!hit && !counter) return null;
    let confidence = counter ? 0.85 : 0.8;
    if (hit && counter) confidence += 0.05;
    if (hit && /Out of memory: Kill|oom-kill/i.test(hit.line.text)) confidence += 0.05;
    const evidence: Evidence[] = present(
      hit ? logEvidence(hit.line) : null,
      killedBy(facts, ["SIGKILL"]),
      counter
        ? failureClassEvidence(facts, " (the agent saw the cgroup's OOM-kill counter rise)")
        : null,
    );
    return {
      confidence: Math.min(0.92, confidence),
      likely_cause: `${who(facts, hit?.line.text)} killed (SIGKILL) by the kernel's OOM ` +
        "killer" + (counter ? "" : ", most likely") + ": the job reached its memory limit " +
        "(its cgroup's limit, or the host's RAM)",
      evidence,
    };
  },
};

// A worker process of the job died without saying why: torchrun's and DeepSpeed's reports of a
// child killed by -9, Ray's dead worker or actor (its message lists the possible causes, the
// OOM killer among them, without knowing which).
const WORKER_KILLED = [
  /failed \(exitcode: -9\)/,
  /Signal 9 \(SIGKILL\) received by PID/,
  /exits with return code = -9\b/,
  /A worker died or was killed while executing a task/,
  /The actor died unexpectedly before finishing this task/,
  /RayActorError|ActorDiedError/,
  /Worker exit type: SYSTEM_ERROR/,
];

/** SIGKILL with no sign of the OOM killer: someone or something killed the process. */
export const KILLED_CAUSE: CauseEntry = {
  id: "killed",
  title: "killed by a signal (SIGKILL)",
  retry: "may_help",
  retry_advice: "A retry may help: the process was killed from outside (a `kill -9`, a " +
    "watchdog, a preemption), and gpuctl saw no sign of the kernel's OOM killer. If it is " +
    "killed again at the same point, check `dmesg` on the node for the OOM killer.",
  fixes: [
    "Find who sent SIGKILL: another user, a node watchdog, a container or cluster runtime " +
    "enforcing a limit",
    "Check `dmesg` on the node for `Out of memory: Killed process` (the OOM killer of another " +
    "cgroup, or one gpuctl could not read)",
    "Resume from the latest checkpoint",
  ],
  match(facts) {
    if (facts.oomKillCounterRose || findLine(facts, HOST_OOM_LOG)) return null;
    if (findLine(facts, [WORKER_DIED])) return null;
    const killed = killedBy(facts, ["SIGKILL"]);
    const worker = findLine(facts, WORKER_KILLED);
    if (!killed && !worker) return null;
    const child = facts.child?.signal === "SIGKILL" ? childName(facts) : null;
    return {
      confidence: 0.62,
      likely_cause:
        (child
          ? `The training process of ${child} was`
          : worker
          ? "A worker process was"
          : "The process was") +
        " killed by SIGKILL from outside: gpuctl saw no sign of the kernel's OOM killer (no " +
        "rise of the job's OOM-kill counter, no `Killed` line in the log)",
      evidence: killed?.kind === "log"
        ? present(
          killed,
          worker && worker.line.seq !== killed.line_no ? logEvidence(worker.line) : null,
        )
        : present(worker ? logEvidence(worker.line) : null, killed),
    };
  },
};

const SEGFAULT_LOG = [
  /Segmentation fault/i,
  /Fatal Python error: Segmentation fault/,
  /\bSIGSEGV\b/,
  /Signal 11 \(SIGSEGV\) received by PID/,
];

/** The process crashed in native code (SIGSEGV). */
export const SEGFAULT_CAUSE: CauseEntry = {
  id: "segfault",
  title: "segmentation fault",
  retry: "fails_again",
  retry_advice: "A retry with the same code and environment will most likely crash the same " +
    "way: segfaults come from native code (an extension built against another version, a " +
    "library bug). Only a crash at random points on one node suggests hardware.",
  fixes: [
    "Reinstall compiled packages against the installed PyTorch (torchvision, torchaudio, " +
    "custom CUDA extensions must match its version)",
    "Set the DataLoader's `num_workers=0` to see whether a worker (OpenCV, h5py with fork) " +
    "crashes",
  ],
  match(facts) {
    const killed = killedBy(facts, ["SIGSEGV"]);
    // Ray lists SIGSEGV among the causes a dead worker may have had: a guess, not a report.
    const hit = findLine(facts, SEGFAULT_LOG, {
      unless: /potential root causes|or other unexpected/,
    });
    if (!killed && !hit) return null;
    if (hit && WORKER_DIED.test(hit.line.text)) return null;
    // With faulthandler on, the log already holds the Python stack at the crash.
    const faulthandler = findLine(facts, [
      /^\s*Fatal Python error: Segmentation fault/,
      /^\s*Current thread 0x[0-9a-f]+ \(most recent call first\)/,
    ]);
    const child = facts.child?.signal === "SIGSEGV" ? childName(facts) : null;
    return {
      confidence: killed && hit ? 0.87 : hit ? 0.8 : 0.75,
      likely_cause: (child ? `The training process of ${child}` : "The process") +
        " crashed with a segmentation fault in native code" +
        (hit ? `: "${excerpt(hit.line.raw, 160)}"` : ""),
      evidence: present(hit ? logEvidence(hit.line) : null, killed),
      fixes: faulthandler
        ? [
          `faulthandler was on: the Python stack it printed at the crash (from line ` +
          `${faulthandler.line.seq}) names the call that entered native code`,
        ]
        : [
          "Run with `python -X faulthandler` (or `PYTHONFAULTHANDLER=1` in the job's env) to " +
          "get the Python stack at the crash",
        ],
    };
  },
};

const ABORT_LOG = [/terminate called after throwing an instance of/, /Aborted \(core dumped\)/];

/** The process aborted itself (SIGABRT), usually from an uncaught C++ exception. */
export const ABORTED_CAUSE: CauseEntry = {
  id: "aborted",
  title: "aborted (SIGABRT)",
  retry: "fails_again",
  retry_advice: "A retry with the same code and environment will most likely abort the same " +
    "way: an abort is a native library giving up on an error of its own; read the message " +
    "above it (a transient cause there, such as a collective timeout, is diagnosed as such).",
  fixes: [
    "Read the `what():` line after `terminate called after throwing` for the real error",
    "Run with `PYTHONFAULTHANDLER=1` to see the Python stack at the abort",
  ],
  match(facts) {
    const killed = killedBy(facts, ["SIGABRT"]);
    const hit = findLine(facts, ABORT_LOG);
    if (!killed && !hit) return null;
    const what = findLine(facts, [/^\s*what\(\):\s*(.+)$/]);
    const child = facts.child?.signal === "SIGABRT" ? childName(facts) : null;
    return {
      confidence: hit ? 0.7 : 0.6,
      likely_cause: (child ? `The training process of ${child} aborted` : "The process aborted") +
        (what ? `: "${excerpt(what.match[1], 160)}"` : " (SIGABRT) in native code"),
      evidence: present(
        hit ? logEvidence(hit.line) : null,
        what ? logEvidence(what.line) : null,
        killed,
      ),
    };
  },
};

// A launcher reporting a stop signal of its own (not one it sent to its workers).
const STOPPED_LOG = [
  /Received (?:Signals\.)?(?:SIGTERM|15) death signal/,
  /SignalException: Process \d+ got signal: (?:15|1|2)\b/,
  /DUE TO PREEMPTION/,
  /\bpreempted\b/i,
];

/**
 * Something outside gpuctl interrupted the process (SIGINT; a KeyboardInterrupt). A job runs in
 * a process group of its own with no terminal, so no Ctrl-C typed anywhere reaches it, and a
 * gpuctl cancel is recorded as `cancelled`: the interrupt came from a `kill -INT`, a shutdown
 * or a scheduler's stop, like a SIGTERM, and says nothing about the training code.
 */
export const INTERRUPTED_CAUSE: CauseEntry = {
  id: "interrupted",
  title: "interrupted (SIGINT)",
  retry: "may_help",
  retry_advice: "A retry may help: the process was interrupted from outside gpuctl (SIGINT), " +
    "not by an error of its own; a gpuctl cancel would have been recorded as cancelled and is " +
    "never retried. To stop the job for good, cancel it (`gpuctl job cancel`).",
  fixes: [
    "Find who sent SIGINT: a `kill -INT` by another user or script, a node shutdown, a " +
    "cluster scheduler stopping the job; use `gpuctl job cancel` to stop a job on purpose",
    "Resume from the latest checkpoint",
  ],
  match(facts) {
    const killed = killedBy(facts, ["SIGINT"]);
    const interrupt = facts.traceback?.type === "KeyboardInterrupt"
      ? facts.traceback.exception
      : null;
    if (!killed && !interrupt) return null;
    return {
      confidence: 0.7,
      likely_cause: "The process was interrupted from outside gpuctl (SIGINT, as Ctrl-C " +
        "sends; a gpuctl cancel sends SIGTERM), so the run ended FAILED",
      evidence: present(killed, interrupt ? logEvidence(interrupt) : null),
    };
  },
};

/** Something outside gpuctl stopped the process (SIGTERM, SIGHUP), a preemption. */
export const TERMINATED_CAUSE: CauseEntry = {
  id: "terminated",
  title: "terminated by a signal",
  retry: "may_help",
  retry_advice: "A retry may help: the process was stopped from outside (a manual kill, a " +
    "shutdown, a time limit), not by an error of its own.",
  fixes: [
    "Find who sent the signal: another user, a shutdown or reboot of the node, a container " +
    "runtime's stop",
    "Resume from the latest checkpoint",
  ],
  match(facts) {
    const killed = killedBy(facts, ["SIGTERM", "SIGHUP"]);
    // A launcher that was stopped says so and exits with a code of its own (torchrun: 1).
    const stopped = killed ? null : findLine(facts, STOPPED_LOG, { last: true });
    if (!killed && !stopped) return null;
    const interrupt = findLine(facts, [/^KeyboardInterrupt\b/, /^\s*Terminated\s*$/], {
      last: true,
    });
    if (stopped) {
      return {
        confidence: 0.66,
        likely_cause: `The job was stopped from outside: "${excerpt(stopped.line.raw, 160)}"`,
        evidence: present(logEvidence(stopped.line), exitCodeEvidence(facts)),
      };
    }
    return {
      confidence: interrupt ? 0.7 : 0.6,
      likely_cause: `The process was stopped from outside by ${facts.signal}`,
      evidence: present(killed, interrupt ? logEvidence(interrupt.line) : null),
    };
  },
};

const NOT_FOUND = [
  /(?:^|:\s)([^\s:]+): command not found/,
  // dash (`/bin/sh` on Debian and Ubuntu), as a script or `os.system()` starts a program:
  // `sh: 1: /opt/conda/bin/torchrun: not found`, `./run.sh: 24: ./run.sh: th: not found`.
  /^(?:\S*\/)?(?:sh|dash|bash)(?:: line \d+)?: (?:\d+: )?([^\s:]+): not found\s*$/,
  /^\S+: \d+: \S+: ([^\s:]+): not found\s*$/,
  /exec: "?([^":\s]+)"?: executable file not found in \$PATH/,
  /Failed to spawn '([^']+)'/,
  // nohup (inside a launch script) starting a program that is not there:
  // `nohup: failed to run command 'accelerate': No such file or directory`.
  /nohup: failed to run command ['‘"]([^'’"]+)['’"]: No such file or directory/,
];

/** The command's program is not installed or not on PATH. */
export const COMMAND_NOT_FOUND_CAUSE: CauseEntry = {
  id: "command_not_found",
  title: "command not found",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way: the program is still not on the job's PATH.",
  fixes: [
    "Use the program's absolute path (e.g. `/opt/conda/envs/train/bin/python`) in the command",
    "Jobs run under `bash -lc` with the agent's environment: PATH additions made only in your " +
    "interactive shell (`.bashrc` after the non-interactive guard, an activated venv) are missing",
  ],
  match(facts) {
    const hit = findLine(facts, NOT_FOUND);
    const exit127 = facts.exitCode === 127;
    if (!hit && !exit127) return null;
    const program = hit?.match[1];
    return {
      confidence: hit && exit127 ? 0.93 : hit ? 0.85 : 0.65,
      likely_cause: program
        ? `The program "${program}" was not found on the job's PATH`
        : "The command was not found (exit code 127)",
      evidence: present(
        hit ? logEvidence(hit.line) : null,
        exit127 ? exitCodeEvidence(facts) : null,
      ),
    };
  },
};

/** The agent could not start the job's command at all. */
export const DISPATCH_FAILED_CAUSE: CauseEntry = {
  id: "dispatch_failed",
  title: "could not start",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way until the node can start the command: the " +
    "working directory, program or image it names is missing there.",
  fixes: [
    "Check that the job's working_dir exists on the node and the program is installed there",
    "With Docker, check the image name and that the Docker daemon runs on the node",
  ],
  match(facts) {
    if (facts.failureClass !== "DISPATCH_FAILED") return null;
    const said = facts.input.events.findLast((e) => e.type === "RUN_FAILED")?.message;
    const why = said ? /ended FAILED: (.*)$/.exec(said)?.[1] ?? said : null;
    return {
      confidence: 0.7,
      likely_cause: "The agent could not start the job's command" +
        (why ? `: ${excerpt(why, 200)}` : ""),
      evidence: [failureClassEvidence(facts)],
    };
  },
};

// PyTorch's report of a dead DataLoader worker: `DataLoader worker (pid 1817) is killed by
// signal: Killed.`, `… (pid(s) 3216) exited unexpectedly`.
const WORKER_DIED =
  /DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\) (?:is killed by signal: ([\w ]+?)\.?\s*(?:It is|$)|exited unexpectedly)/;
const WORKER_SIGNALLED =
  /DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\) is killed by signal: ([\w ]+?)\.?\s*(?:It is|$)/;
const WORKER_SIGNALS: Readonly<Record<string, string>> = {
  "Killed": "SIGKILL",
  "Terminated": "SIGTERM",
  "Segmentation fault": "SIGSEGV",
  "Aborted": "SIGABRT",
  "Floating point exception": "SIGFPE",
  "Illegal instruction": "SIGILL",
};
// A worker killed from outside may come back on a retry; one that crashed will crash again.
const FROM_OUTSIDE = new Set(["SIGKILL", "SIGTERM", "SIGHUP", "SIGINT"]);

/**
 * A DataLoader worker process died of a signal: its own cause. A SIGKILL is the host's OOM
 * killer only when the job's OOM-kill counter rose ({@linkcode HOST_OOM_CAUSE}); a bus error
 * is shared memory (`shm_exhausted`); the reset of multiprocessing's local socket that may
 * follow is not a network failure.
 */
export const DATALOADER_WORKER_KILLED_CAUSE: CauseEntry = {
  id: "dataloader_worker_killed",
  title: "DataLoader worker killed",
  retry: "may_help",
  retry_advice: "A retry may help: a DataLoader worker was killed from outside the training " +
    "code (a SIGKILL with no rise of the job's OOM-kill counter, or a SIGTERM). If it is " +
    "killed again at the same point, look for a memory limit gpuctl could not see.",
  fixes: [
    "Find who killed the worker: `dmesg` on the node for the OOM killer of another cgroup, a " +
    "container or cluster runtime enforcing a memory limit",
    "Lower the DataLoader's `num_workers` and `prefetch_factor` (each worker holds its own " +
    "copy of the dataset object) to use less memory",
    "Set `num_workers=0` to reproduce in the main process, where the real error is raised",
  ],
  match(facts) {
    if (facts.oomKillCounterRose) return null;
    // The report that names the signal, before the `exited unexpectedly` that may follow it.
    const hit = findLine(facts, [WORKER_SIGNALLED, WORKER_DIED]);
    if (!hit) return null;
    const said = hit.match[2]?.trim();
    if (said === "Bus error") return null;
    const signal = said ? WORKER_SIGNALS[said] ?? `signal "${said}"` : null;
    const outside = signal !== null && FROM_OUTSIDE.has(signal);
    const pid = hit.match[1].trim();
    return {
      confidence: 0.9,
      likely_cause: `A DataLoader worker (pid ${pid}) ` +
        (signal ? `died of ${signal}` : "exited unexpectedly") +
        (signal === "SIGKILL" ? ", and the job's OOM-kill counter did not rise" : "") +
        `: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
      ...(outside ? {} : {
        retry: "fails_again" as const,
        retry_advice: "A retry with the same code and data will most likely fail the same way: " +
          "the worker crashed on its own (" + (signal ?? "it exited unexpectedly") + "), in " +
          "the dataset code or a native library it calls.",
        fixes: [
          "Set `num_workers=0` to run the dataset in the main process, where the crash raises " +
          "a readable error (or `PYTHONFAULTHANDLER=1` to get its stack)",
        ],
      }),
    };
  },
};
