/**
 * The environment a job starts from. A job never inherits the agent's environment: that
 * holds the agent's token (`GPUCTL_AGENT_TOKEN`), its home (`GPUCTL_HOME`, where
 * `server.yaml` keeps the admin token on a server's host) and whatever else the agent was
 * started with. A job gets only the variables named here, taken from the agent's
 * environment, then its own `env` and the variables gpuctl injects (`GPUCTL_*`,
 * `CUDA_VISIBLE_DEVICES`, `PYTHONPATH`) on top.
 */

/** Variables a job takes from the agent's environment, by exact name. */
export const JOB_ENV_NAMES: readonly string[] = [
  // Finding programs, language and time, as a login would set them.
  "PATH",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TERM",
  "TMPDIR",
  // Who the job is: replaced by the job user's own when the agent switches users.
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  // What CUDA programs need to find the toolkit and driver on this host.
  "LD_LIBRARY_PATH",
  "CUDA_HOME",
  "CUDA_PATH",
];

/** Variables a job takes from the agent's environment, by prefix (`LC_ALL`, `NVIDIA_DRIVER_CAPABILITIES` …). */
export const JOB_ENV_PREFIXES: readonly string[] = ["LC_", "NVIDIA_"];

/** Whether a variable of the agent's environment passes to jobs. */
export function isJobEnvName(name: string): boolean {
  return JOB_ENV_NAMES.includes(name) || JOB_ENV_PREFIXES.some((p) => name.startsWith(p));
}

/** The user a job runs as: who its HOME, USER, LOGNAME and SHELL say it is. */
export interface JobIdentity {
  name: string;
  home: string;
  shell: string;
}

/**
 * The allowed part of the agent's environment; with `identity` (the agent switches to a
 * job user), that user's HOME, USER, LOGNAME and SHELL instead of the agent's.
 */
export function jobBaseEnv(
  agentEnv: Record<string, string>,
  identity: JobIdentity | null = null,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(agentEnv)) {
    if (isJobEnvName(name)) env[name] = value;
  }
  if (identity) {
    Object.assign(env, {
      HOME: identity.home,
      USER: identity.name,
      LOGNAME: identity.name,
      SHELL: identity.shell,
    });
  }
  return env;
}
