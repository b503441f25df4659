/**
 * Distributed-training causes: NCCL timeouts and errors, a rendezvous port in use, a peer's
 * connection reset, DDP parameters unused in the forward pass.
 */
import {
  type CauseEntry,
  excerpt,
  exitCodeEvidence,
  findLine,
  logEvidence,
  present,
} from "./cause.ts";

const NCCL_TIMEOUT = [
  /Watchdog caught collective operation timeout/i,
  /collective operation timeout/i,
  /NCCL.*(?:timed out|timeout)/i,
  /ProcessGroupNCCL.*Timeout/i,
  /DistStoreError:.*Timed out/i,
  /RendezvousTimeoutError/,
  /Socket Timeout/i,
  // Gloo, the CPU backend: `[…/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting
  // 1800000ms for recv operation to complete`.
  /Timed out waiting \d+ms for (?:recv|send) operation/i,
  /Application timeout caused pair closure/,
];

/** A collective (all-reduce, broadcast, barrier) or the rendezvous timed out. */
export const NCCL_TIMEOUT_CAUSE: CauseEntry = {
  id: "nccl_timeout",
  title: "collective timeout (NCCL/Gloo)",
  retry: "may_help",
  retry_advice: "A retry may help: timeouts often come from a transient network problem, a slow " +
    "or restarted peer, or a rank that hung once. If it times out again at the same step, one " +
    "rank is skipping or blocking a collective and retrying will not help.",
  fixes: [
    "Set `NCCL_DEBUG=INFO` (and `TORCH_NCCL_ASYNC_ERROR_HANDLING=1`) in the job's env to see " +
    "which rank and operation stalled",
    "Check that every rank calls the same collectives in the same order (a rank that skips a " +
    "`barrier()`, or gets fewer batches from an unevenly sharded dataset, hangs the others)",
    "Make long rank-0-only work (evaluation, checkpoint saving) shorter, or raise the timeout: " +
    "`init_process_group(timeout=timedelta(minutes=30))`",
    "On a flaky interconnect try `NCCL_P2P_DISABLE=1` or `NCCL_IB_DISABLE=1` to isolate the link",
  ],
  match(facts) {
    const hit = findLine(facts, NCCL_TIMEOUT);
    if (!hit) return null;
    const op = /OpType=(\w+)/.exec(hit.line.text);
    const ran = /ran for (\d+) milliseconds/.exec(hit.line.text);
    const limit = /Timeout\(ms\)=(\d+)/.exec(hit.line.text);
    const after = ran
      ? ` after ${ran[1]} ms${limit ? ` (its timeout is ${limit[1]} ms)` : ""}`
      : "";
    return {
      confidence: 0.9,
      likely_cause: `A distributed collective${op ? ` (${op[1]})` : ""} timed out${after}: ` +
        `"${excerpt(hit.line.raw, 200)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const NCCL_ERROR = [
  /NCCL error/i,
  /nccl(?:SystemError|InternalError|UnhandledCudaError|InvalidUsage|InvalidArgument|RemoteError)/,
  /DistBackendError/,
  /NCCL communicator was aborted/,
  /NCCL WARN/,
  /ProcessGroupNCCL/,
];

// Two ranks on one GPU (`NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA
// device 40`): a launch configuration error, not a transient one.
const DUPLICATE_GPU = /Duplicate GPU detected\s*:\s*rank \d+ and rank \d+/;
// NCCL's shared-memory transport failing in /dev/shm (the shared-memory entry's cause).
const NCCL_SHM_FAILED =
  /NCCL WARN Error while creating shared memory segment|NCCL WARN Error: failed to extend \/dev\/shm\//;

/** NCCL failed outright: network, shared memory, mismatched versions or a crashed peer. */
export const NCCL_ERROR_CAUSE: CauseEntry = {
  id: "nccl_error",
  title: "NCCL error",
  retry: "may_help",
  retry_advice: "A retry may help when the error was transient (a peer crashed, a link " +
    "flapped); if the same NCCL error repeats at start-up it is a configuration problem and " +
    "retrying will not help.",
  fixes: [
    "Set `NCCL_DEBUG=INFO` in the job's env and read the first `NCCL WARN` line",
    "`ncclSystemError` in containers: give the container more shared memory (`--shm-size` or " +
    "`--ipc=host`)",
    "`ncclUnhandledCudaError`: look for a CUDA error (often out of memory) just before it",
    "Check that every rank uses the same PyTorch and NCCL versions",
    "On single-node jobs with broken peer-to-peer access try `NCCL_P2P_DISABLE=1`",
  ],
  match(facts) {
    const hit = findLine(facts, NCCL_ERROR);
    if (!hit) return null;
    // NCCL's shared-memory segment it could not create explains the error it raised: the
    // shared-memory entry decides.
    if (facts.lines.some((l) => NCCL_SHM_FAILED.test(l.text))) return null;
    // NCCL's own error strings read `NCCL Error 1: unhandled cuda error` in some versions.
    const specific = /NCCL error|nccl\w*Error|DistBackendError/i.test(hit.line.text);
    const duplicate = findLine(facts, [DUPLICATE_GPU]);
    if (duplicate) {
      return {
        confidence: 0.9,
        likely_cause: `Two ranks were given the same GPU, so NCCL refused to start: ` +
          `"${excerpt(duplicate.line.raw, 160)}"`,
        evidence: present(
          logEvidence(duplicate.line),
          logEvidence(hit.line),
          exitCodeEvidence(facts),
        ),
        fixes: [
          "Give each rank its own GPU: call `torch.cuda.set_device(local_rank)` (from " +
          "`LOCAL_RANK`) before creating the process group, and do not hard-code a device",
          "Check that `CUDA_VISIBLE_DEVICES` lists as many GPUs as the job starts processes " +
          "per node",
        ],
        retry: "fails_again",
        retry_advice: "A retry with the same launch configuration will fail the same way: the " +
          "ranks are mapped onto GPUs the same way each time. Fix the device assignment first.",
      };
    }
    return {
      confidence: specific ? 0.85 : 0.6,
      likely_cause: `NCCL (the GPU communication library) failed: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const PORT_IN_USE = [
  /Address already in use/i,
  /EADDRINUSE/,
  /server socket has failed to (?:listen|bind)/i,
  /\[Errno 98\]/,
];

/** The rendezvous port (MASTER_PORT) was taken by another process. */
export const PORT_IN_USE_CAUSE: CauseEntry = {
  id: "port_in_use",
  title: "port already in use",
  retry: "may_help",
  retry_advice: "A retry may help once the process holding the port has exited (a leftover " +
    "from an earlier run, or another job on the same node); a retry that uses the same fixed " +
    "port while that process lives fails the same way.",
  fixes: [
    "Let each job pick a free port: `torchrun --standalone` or `--rdzv-endpoint=localhost:0` " +
    "for single-node jobs",
    "Set a job-specific `MASTER_PORT` (or `--master_port`) instead of the default 29500",
    "Find and stop the leftover process holding the port: `ss -ltnp | grep <port>` on the node",
  ],
  match(facts) {
    // A bind the system refused (`errno: 13 - Permission denied`: a port below 1024) is no port
    // held by another process, nor is the `failed to listen` summary that follows it; the
    // permission entry reads it.
    if (findLine(facts, [/failed to bind to .*\(errno: 13\b/])) return null;
    const hit = findLine(facts, PORT_IN_USE);
    if (!hit) return null;
    const port = /port[:= ]\s*(\d{2,5})/i.exec(hit.line.text) ??
      /:(\d{4,5})\b/.exec(hit.line.text);
    return {
      confidence: 0.9,
      likely_cause: `The distributed rendezvous could not bind its port` +
        `${port ? ` ${port[1]}` : ""}: it is already in use: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const CONNECTION_LOST = [
  /Connection reset by peer/i,
  /Connection closed by peer/i,
  /\bECONNRESET\b/,
  /ConnectionResetError/,
  /RemoteDisconnected/,
  /requests\.exceptions\.(?:ConnectionError|ReadTimeout)/,
  /Max retries exceeded with url/,
  // The rendezvous store of a multi-node launch, unreachable or gone.
  /RendezvousConnectionError/,
  /The connection to the C10d store has failed/,
  /connect\(\) timed out\. Original timeout was \d+ ms/,
  /client socket has timed out after \d+ms while trying to connect/,
];
// multiprocessing talks to DataLoader workers over local sockets and pipes: a reset there is
// a dead worker, not the network.
const LOCAL_IPC = /multiprocessing[\\/]|resource_sharer|torch[\\/]utils[\\/]data/;

/** A connection to a peer rank or a remote service dropped. */
export const CONNECTION_RESET_CAUSE: CauseEntry = {
  id: "connection_reset",
  title: "connection lost or refused",
  retry: "may_help",
  retry_advice: "A retry may help: a network connection (to another rank, the rendezvous store " +
    "or a download server) dropped, which is often transient. If another rank failed first, " +
    "its error is the cause and a retry fails the same way.",
  fixes: [
    "Look for an earlier error of another rank in the log (an exception or an out-of-memory " +
    "before this line): a peer that crashed closes its connections",
    "Check the network between the nodes (firewall, MTU, a flapping link); with NCCL set " +
    "`NCCL_DEBUG=INFO` in the job's env",
    "For downloads: cache models and datasets on the node (`HF_HOME`) and set " +
    "`HF_HUB_OFFLINE=1` once they are there",
  ],
  match(facts) {
    const hit = findLine(facts, CONNECTION_LOST);
    if (!hit) return null;
    const tb = facts.tracebacks.find((t) => t.exception === hit.line);
    if (tb && tb.frames.slice(-3).some((f) => LOCAL_IPC.test(f.file))) return null;
    return {
      confidence: 0.8,
      likely_cause: `A network connection was lost: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const UNUSED_PARAMETERS = [
  /Expected to have finished reduction in the prior iteration before starting a new one/,
  /parameters that were not used in producing (?:the )?loss/,
  /Parameter indices which did not receive grad for rank/,
  /find_unused_parameters=True/,
];

/** DistributedDataParallel found parameters that took no part in the loss. */
export const DDP_UNUSED_PARAMETERS_CAUSE: CauseEntry = {
  id: "ddp_unused_parameters",
  title: "DDP: parameters unused in the loss",
  retry: "fails_again",
  retry_advice: "A retry with the same code will fail the same way: the same parameters take " +
    "no part in the loss at the same step. Change the model or the DDP setting first.",
  fixes: [
    "Pass `find_unused_parameters=True` to `DistributedDataParallel` (Lightning: " +
    '`strategy="ddp_find_unused_parameters_true"`; MMEngine/mmdet configs: ' +
    "`find_unused_parameters = True`); it costs some speed",
    "Set `TORCH_DISTRIBUTED_DEBUG=DETAIL` in the job's env to have DDP name the parameters " +
    "that got no gradient, then remove them or make every output the model returns part of " +
    "the loss",
    "If layers are frozen on purpose, set `requires_grad=False` on them before wrapping the " +
    "model in DDP",
  ],
  match(facts) {
    const hit = findLine(facts, UNUSED_PARAMETERS);
    if (!hit) return null;
    return {
      confidence: 0.93,
      likely_cause: "DistributedDataParallel found parameters that were not used to compute " +
        "the loss, so the gradient reduction of the previous step never finished",
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};
