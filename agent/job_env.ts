/** The environment a job's process gets: its own variables plus what gpuctl injects. */
import type { DispatchSpec } from "../protocol/agent.ts";

/** What the environment depends on besides the job. */
export interface JobEnvContext {
  /** The server's base URL (GPUCTL_SERVER_URL). */
  serverUrl: string;
  /** The Unix socket of the agent's local ingest endpoint. */
  ingestSocket: string;
  /** `<data_dir>/runs`: each run gets `<runsDir>/<run_id>/files` as GPUCTL_RUN_DIR. */
  runsDir: string;
  /**
   * Jobs run as another user (`job_user`), who cannot enter the agent's private data dir:
   * the run's folder is `<working_dir>/.gpuctl-runs/<run_id>` instead. @default false
   */
  runDirInWorkingDir?: boolean;
  /** `<repo>/sdk/python`, so `from gpuctl import run` works without installing anything. */
  sdkDir: string | null;
  /** The agent's own PYTHONPATH, kept after the SDK folder when the job sets none. */
  pythonPath: string | null;
}

/**
 * The job's `env` plus the gpuctl variables. GPU assignment and the GPUCTL_* variables win
 * over the job's own (the scheduler's slots are exclusive); PYTHONPATH is extended, not replaced.
 */
export function buildJobEnv(spec: DispatchSpec, ctx: JobEnvContext): Record<string, string> {
  const env: Record<string, string> = { ...spec.env };
  const basePath = spec.env.PYTHONPATH ?? ctx.pythonPath ?? "";
  const pythonPath = [ctx.sdkDir ?? "", basePath].filter((part) => part !== "").join(":");
  Object.assign(env, {
    CUDA_VISIBLE_DEVICES: spec.gpu_indices.join(","),
    CUDA_DEVICE_ORDER: "PCI_BUS_ID",
    GPUCTL_SERVER_URL: ctx.serverUrl,
    GPUCTL_RUN_ID: spec.run_id,
    GPUCTL_JOB_ID: spec.job_id,
    GPUCTL_ATTEMPT: String(spec.attempt),
    GPUCTL_PROJECT: spec.project,
    GPUCTL_EXPERIMENT: spec.experiment ?? "",
    GPUCTL_INGEST_URL: ingestUrl(ctx.ingestSocket, spec.run_id),
    GPUCTL_RUN_DIR: jobRunDir(spec, ctx),
    PYTHONUNBUFFERED: "1",
  });
  if (pythonPath !== "") env.PYTHONPATH = pythonPath;
  // Python would write the SDK's bytecode into the checkout (`sdk/python/gpuctl/__pycache__`),
  // which may be shared, read-only or another user's. There is no switch for one package, so
  // the job writes none: installed packages keep the bytecode pip compiled (it is still read),
  // and only the job's own modules are compiled again at each start, in milliseconds. A job
  // that sets PYTHONDONTWRITEBYTECODE itself (an empty value writes bytecode) decides.
  if (ctx.sdkDir !== null && spec.env.PYTHONDONTWRITEBYTECODE === undefined) {
    env.PYTHONDONTWRITEBYTECODE = "1";
  }
  if (spec.resume_from) {
    env.GPUCTL_RESUME_FROM = spec.resume_from.path;
    env.GPUCTL_RESUME_FROM_ID = spec.resume_from.checkpoint_id;
  }
  return env;
}

/**
 * Where a job's SDK posts its batches (it appends `/log`): HTTP over the agent's Unix socket,
 * written the way requests-unixsocket and Docker's clients do, `http+unix://<socket path,
 * percent-encoded>/<path>`.
 */
export function ingestUrl(socketPath: string, runId: string): string {
  return `http+unix://${encodeURIComponent(socketPath)}/runs/${encodeURIComponent(runId)}`;
}

/** The run's folder a job gets as GPUCTL_RUN_DIR. */
export function jobRunDir(
  spec: Pick<DispatchSpec, "run_id" | "working_dir">,
  ctx: Pick<JobEnvContext, "runsDir" | "runDirInWorkingDir">,
): string {
  return ctx.runDirInWorkingDir
    ? `${spec.working_dir.replace(/\/+$/, "")}/.gpuctl-runs/${spec.run_id}`
    : runFilesDir(ctx.runsDir, spec.run_id);
}

/**
 * A run's own folder (GPUCTL_RUN_DIR): for its checkpoints and outputs, so runs of one
 * working dir never write over each other, and for what the SDK keeps until it is sent.
 */
export function runFilesDir(runsDir: string, runId: string): string {
  return `${runsDir}/${runId}/files`;
}

/** `<repo>/sdk/python` from a module URL in `<repo>/agent/`; null when not on a file system. */
export function sdkDirFrom(moduleUrl: string): string | null {
  const url = new URL("../sdk/python", moduleUrl);
  return url.protocol === "file:" ? decodeURIComponent(url.pathname) : null;
}

/** This checkout's SDK folder. */
export const SDK_DIR: string | null = sdkDirFrom(import.meta.url);
