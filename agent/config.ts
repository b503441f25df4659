/**
 * The agent's configuration: `$GPUCTL_HOME/agent.yaml`, overridden by flags, resolved once
 * (in `main.ts`) into a {@linkcode ResolvedAgentConfig}. Errors name the field.
 */
import { z } from "zod";
import { parse as parseYaml } from "yaml";
import { gpuctlHome } from "../lib/config_files.ts";
import { MAX_NAME_LENGTH } from "../protocol/rest/fields.ts";
import { type JobUser, userSwitch } from "./runner/job_user.ts";
import type { SlurmSettings } from "./runner/slurm/sbatch.ts";
import { NODE_RUNNERS, type NodeRunner } from "../protocol/vocabulary.ts";

/** CPU-only jobs this node runs at once. */
export const DEFAULT_CPU_SLOTS = 2;
/** Seconds between heartbeats. */
export const DEFAULT_HEARTBEAT_S = 10;
/** Seconds between telemetry samples. */
export const DEFAULT_SAMPLE_S = 10;
/** Spool size cap; system metrics are dropped first when it is reached. */
export const DEFAULT_SPOOL_MAX_MB = 512;
/**
 * Seconds out of contact with the server after which the agent stops its jobs (its lease).
 * Below the server's default node_timeout_s (90): by the time a silent node is declared
 * OFFLINE, its jobs have usually stopped and the next attempts start at once.
 */
export const DEFAULT_FENCE_AFTER_S = 60;
/** The port of a Slurm agent's ingest endpoint (`ingest_port`), where compute nodes reach it. */
export const DEFAULT_INGEST_PORT = 8601;
/** Seconds between polls of Slurm (`slurm.poll_s`): one squeue call for all the agent's jobs. */
export const DEFAULT_SLURM_POLL_S = 2;
/** Where the agent connects on the server. */
export const AGENT_WS_PATH = "/api/agent/ws";

const positiveSeconds = z.number().positive().max(3600);

/** `agent.yaml`: every field optional here; `server_url` and `token` must come from somewhere. */
export const agentYaml = z.strictObject({
  /** `http(s)://host:port` of the server (a `ws(s)://` URL is accepted too). */
  server_url: z.string().min(1).optional(),
  /** An agent-scope token. */
  token: z.string().min(1).optional(),
  /** @default the hostname */
  node_id: z.string().min(1).max(MAX_NAME_LENGTH).optional(),
  /** @default `$GPUCTL_HOME/agent` */
  data_dir: z.string().min(1).optional(),
  /** @default 2 */
  cpu_slots: z.number().int().min(0).max(256).optional(),
  /** Free-form node labels, shown by the server and usable as constraints. */
  labels: z.record(z.string().min(1).max(100), z.string().max(200)).optional(),
  /** Ask the scheduler to keep off GPUs that hold processes gpuctl does not own. @default false */
  avoid_foreign_gpus: z.boolean().optional(),
  /** @default 10 */
  heartbeat_s: positiveSeconds.optional(),
  /** @default 10 */
  sample_s: positiveSeconds.optional(),
  /** @default 512 */
  spool_max_mb: z.number().positive().max(1_048_576).optional(),
  /** Path or name of libnvidia-ml. @default "libnvidia-ml.so.1" */
  nvml_library: z.string().min(1).optional(),
  /** Run jobs as this user (the agent must run as root). @default the agent's own user */
  job_user: z.string().min(1).max(64).optional(),
  /**
   * More `docker run` options for `runner: docker` jobs, each one argv item, before the image
   * (`["--shm-size", "16g", "-v", "/data:/data:ro"]`). @default []
   */
  docker_run_args: z.array(z.string().min(1).max(1000)).max(100).optional(),
  /** The lease: seconds out of contact before the agent stops its jobs; 0 = never. @default 60 */
  fence_after_s: z.number().min(0).max(86_400).optional(),
  /** `process` runs jobs on this host; `slurm` hands them to Slurm (see `slurm`). @default "process" */
  runner: z.enum(NODE_RUNNERS).optional(),
  /** The Slurm pool this agent reports (with `runner: slurm`). */
  slurm: z.strictObject({
    /** The partition jobs go to, reported as one pool. */
    partition: z.string().min(1).max(200).regex(/^[^\s,]+$/, "a partition name"),
    /** `--account`. @default the user's default account */
    account: z.string().min(1).max(200).optional(),
    /** `--qos`. @default the account's default QOS */
    qos: z.string().min(1).max(200).optional(),
    /** `--time` (`HH:MM:SS`, `D-HH:MM`, minutes). @default the partition's default */
    time_limit: z.string().regex(/^[0-9:-]+$/, "a Slurm time like 04:00:00 or 1-00:00").optional(),
    /** More sbatch arguments, each one item (`--constraint=a100`, `--mem=64G`). @default [] */
    extra_args: z.array(z.string().min(1).max(1000)).max(100).optional(),
    /** Report at most this many GPUs of the partition. @default all of them */
    max_gpus: z.number().int().min(0).max(64).optional(),
    /** Seconds between polls of Slurm (one squeue call for all the agent's jobs). @default 2 */
    poll_s: z.number().min(0.1).max(600).optional(),
  }).optional(),
  /**
   * With `runner: slurm`: the address jobs on compute nodes post SDK batches to (this host's
   * name or address on the cluster network). @default the hostname
   */
  ingest_host: z.string().min(1).max(255).regex(/^[A-Za-z0-9.:_-]+$/, "a host name or address")
    .optional(),
  /** With `runner: slurm`: the port of that endpoint. @default 8601 */
  ingest_port: z.number().int().min(0).max(65535).optional(),
});
export type AgentYaml = z.infer<typeof agentYaml>;

/** Command-line flags (already parsed from strings); they win over `agent.yaml`. */
export const agentFlags = z.strictObject({
  server: z.string().min(1).optional(),
  token: z.string().min(1).optional(),
  "token-file": z.string().min(1).optional(),
  "node-id": z.string().min(1).max(MAX_NAME_LENGTH).optional(),
  "fake-gpus": z.coerce.number().int().min(0).max(64).optional(),
  "data-dir": z.string().min(1).optional(),
  "heartbeat-s": z.coerce.number().positive().max(3600).optional(),
  "sample-s": z.coerce.number().positive().max(3600).optional(),
  "fence-after-s": z.coerce.number().min(0).max(86_400).optional(),
  runner: z.enum(NODE_RUNNERS).optional(),
});
export type AgentFlags = z.input<typeof agentFlags>;

/** Everything the agent needs, fully resolved. */
export interface ResolvedAgentConfig {
  /** The gpuctl home folder. */
  home: string;
  /** `<home>/agent.yaml` (it need not exist). */
  configPath: string;
  /** The server's base URL as `http(s)://…`, without a trailing slash (jobs get it as GPUCTL_SERVER_URL). */
  serverUrl: string;
  /** `ws(s)://…/api/agent/ws`. */
  wsUrl: string;
  token: string;
  /** Where the token came from; a `--token` flag is visible to every user in `ps`. */
  tokenSource: "--token" | "--token-file" | "GPUCTL_AGENT_TOKEN" | "agent.yaml";
  /** The user jobs run as, when the agent switches to one; null: the agent's own user. */
  jobUser: JobUser | null;
  nodeId: string;
  hostname: string;
  dataDir: string;
  cpuSlots: number;
  labels: Record<string, string>;
  avoidForeignGpus: boolean;
  heartbeatMs: number;
  sampleMs: number;
  spoolMaxBytes: number;
  /** Path or name of libnvidia-ml; null means the binding's default. */
  nvmlLibrary: string | null;
  /** Simulated GPUs instead of NVML (`--fake-gpus N`); null for real ones. */
  fakeGpus: number | null;
  /** The agent's own PYTHONPATH, kept after the SDK folder in jobs; null when unset. */
  pythonPath: string | null;
  /** `docker_run_args`: more `docker run` options for Docker jobs. */
  dockerRunArgs: string[];
  /** The lease in seconds; null: the agent never stops its jobs for lack of contact. */
  fenceAfterS: number | null;
  /** Where jobs run: on this host, or handed to Slurm. */
  runner: NodeRunner;
  /** With `runner: slurm`: the sbatch settings and how often Slurm is asked; else null. */
  slurm: (SlurmSettings & { pollMs: number }) | null;
  /**
   * With `runner: slurm`: the TCP ingest endpoint compute nodes post to (port 0: any free
   * one, for tests); null: the Unix socket only.
   */
  ingest: { host: string; port: number } | null;
}

/** What the entry point read from its surroundings, passed in so nothing else reads `Deno.env`. */
export interface ConfigSurroundings {
  /** `GPUCTL_NVML_LIBRARY`. */
  nvmlLibrary?: string;
  /** `PYTHONPATH`. */
  pythonPath?: string;
  /** `Deno.hostname()`. */
  hostname: string;
  /** `GPUCTL_AGENT_TOKEN`. */
  agentToken?: string;
  /** The contents of the `--token-file` file (read by `loadAgentConfig`). */
  tokenFileText?: string;
  /** Finds a user of this host by name (for `job_user`). @default none: job_user is refused */
  lookupUser?: (name: string) => JobUser | null;
  /** The agent's user id (`Deno.uid()`). */
  uid?: number | null;
}

export { gpuctlHome };

/** Reads `<home>/agent.yaml` (a missing file is an empty one) and resolves it with the flags. */
export async function loadAgentConfig(
  home: string,
  flags: AgentFlags,
  surroundings: ConfigSurroundings,
): Promise<ResolvedAgentConfig> {
  const configPath = `${home}/agent.yaml`;
  let text = "";
  try {
    text = await Deno.readTextFile(configPath);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`Cannot read ${configPath}: ${(err as Error).message}`, { cause: err });
    }
  }
  const tokenFile = flags["token-file"];
  let tokenFileText = surroundings.tokenFileText;
  if (tokenFile !== undefined && tokenFileText === undefined) {
    try {
      tokenFileText = await Deno.readTextFile(tokenFile);
    } catch (err) {
      throw new Error(`Invalid --token-file "${tokenFile}": ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  return resolveAgentConfig(
    parseAgentYaml(text, configPath),
    flags,
    { ...surroundings, tokenFileText },
    home,
  );
}

/** Parses and validates the text of `agent.yaml`. */
export function parseAgentYaml(text: string, path = "agent.yaml"): AgentYaml {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new Error(`Cannot parse ${path}: ${(err as Error).message}`, { cause: err });
  }
  const result = agentYaml.safeParse(raw);
  if (!result.success) throw new Error(`Invalid ${path}: ${describeIssues(result.error)}`);
  return result.data;
}

/** Merges file, flags and surroundings into the resolved config; throws naming the field. */
export function resolveAgentConfig(
  file: AgentYaml,
  rawFlags: AgentFlags,
  surroundings: ConfigSurroundings,
  home: string,
): ResolvedAgentConfig {
  const parsedFlags = agentFlags.safeParse(rawFlags);
  if (!parsedFlags.success) {
    throw new Error(`Invalid flags: ${describeIssues(parsedFlags.error, "--", rawFlags)}`);
  }
  const flags = parsedFlags.data;
  const serverText = flags.server ?? file.server_url;
  if (!serverText) {
    throw new Error(
      `Missing server_url: pass --server URL or set server_url in ${home}/agent.yaml`,
    );
  }
  const { token, tokenSource } = resolveToken(file, flags, surroundings, home);
  const jobUser = resolveJobUser(file.job_user, surroundings, `${home}/agent.yaml`);
  const { serverUrl, wsUrl } = serverUrls(serverText);
  const nodeId = flags["node-id"] ?? file.node_id ?? surroundings.hostname;
  if (!nodeId || nodeId.length > MAX_NAME_LENGTH) {
    throw new Error(`Invalid node_id "${nodeId}": must be 1 to ${MAX_NAME_LENGTH} characters`);
  }
  const runner = resolveRunner(file, flags, jobUser, `${home}/agent.yaml`);
  return {
    ...runner,
    ingest: runner.runner === "slurm"
      ? {
        host: file.ingest_host ?? surroundings.hostname,
        port: file.ingest_port ?? DEFAULT_INGEST_PORT,
      }
      : null,
    home,
    configPath: `${home}/agent.yaml`,
    serverUrl,
    wsUrl,
    token,
    tokenSource,
    jobUser,
    nodeId,
    hostname: surroundings.hostname || nodeId,
    dataDir: flags["data-dir"] ?? file.data_dir ?? `${home}/agent`,
    cpuSlots: file.cpu_slots ?? DEFAULT_CPU_SLOTS,
    labels: file.labels ?? {},
    avoidForeignGpus: file.avoid_foreign_gpus ?? false,
    heartbeatMs: (flags["heartbeat-s"] ?? file.heartbeat_s ?? DEFAULT_HEARTBEAT_S) * 1000,
    sampleMs: (flags["sample-s"] ?? file.sample_s ?? DEFAULT_SAMPLE_S) * 1000,
    spoolMaxBytes: Math.round((file.spool_max_mb ?? DEFAULT_SPOOL_MAX_MB) * 1024 * 1024),
    nvmlLibrary: surroundings.nvmlLibrary || file.nvml_library || null,
    fakeGpus: flags["fake-gpus"] ?? null,
    pythonPath: surroundings.pythonPath || null,
    dockerRunArgs: file.docker_run_args ?? [],
    fenceAfterS: (flags["fence-after-s"] ?? file.fence_after_s ?? DEFAULT_FENCE_AFTER_S) || null,
  };
}

/** `runner` and `slurm` checked together: a Slurm agent needs its partition, and nothing else does. */
function resolveRunner(
  file: AgentYaml,
  flags: z.infer<typeof agentFlags>,
  jobUser: JobUser | null,
  path: string,
): Pick<ResolvedAgentConfig, "runner" | "slurm"> {
  const runner = flags.runner ?? file.runner ?? "process";
  if (runner === "process") {
    const stray = (["slurm", "ingest_host", "ingest_port"] as const).find((k) =>
      file[k] !== undefined
    );
    if (stray) {
      throw new Error(
        `Invalid ${stray} in ${path}: it is for runner slurm, and this agent's runner is process ` +
          "(set runner: slurm, or remove it)",
      );
    }
    return { runner, slurm: null };
  }
  const slurm = file.slurm;
  if (!slurm) {
    throw new Error(
      `Missing slurm.partition in ${path}: runner slurm needs the partition to submit to ` +
        "(slurm: {partition: gpu})",
    );
  }
  if (jobUser !== null) {
    throw new Error(
      `Invalid job_user in ${path}: with runner slurm, jobs run as the user that submits them ` +
        "(run the agent as that user instead)",
    );
  }
  return {
    runner,
    slurm: {
      partition: slurm.partition,
      account: slurm.account ?? null,
      qos: slurm.qos ?? null,
      time_limit: slurm.time_limit ?? null,
      extra_args: slurm.extra_args ?? [],
      max_gpus: slurm.max_gpus ?? null,
      pollMs: (slurm.poll_s ?? DEFAULT_SLURM_POLL_S) * 1000,
    },
  };
}

/**
 * The agent token: `--token`, else `--token-file`, else `GPUCTL_AGENT_TOKEN`, else
 * `token:` in agent.yaml. Only the flag puts it on a command line.
 */
function resolveToken(
  file: AgentYaml,
  flags: z.infer<typeof agentFlags>,
  surroundings: ConfigSurroundings,
  home: string,
): Pick<ResolvedAgentConfig, "token" | "tokenSource"> {
  if (flags.token) return { token: flags.token, tokenSource: "--token" };
  if (flags["token-file"] !== undefined) {
    const token = (surroundings.tokenFileText ?? "").trim();
    if (token === "" || /\s/.test(token)) {
      throw new Error(
        `Invalid --token-file "${flags["token-file"]}": it must hold the agent token alone`,
      );
    }
    return { token, tokenSource: "--token-file" };
  }
  if (surroundings.agentToken) {
    return { token: surroundings.agentToken.trim(), tokenSource: "GPUCTL_AGENT_TOKEN" };
  }
  if (file.token) return { token: file.token, tokenSource: "agent.yaml" };
  throw new Error(
    `Missing token: set token in ${home}/agent.yaml, or GPUCTL_AGENT_TOKEN, or pass ` +
      "--token-file PATH",
  );
}

/** `job_user` checked against this host: a user that exists and that the agent can become. */
function resolveJobUser(
  name: string | undefined,
  surroundings: ConfigSurroundings,
  path: string,
): JobUser | null {
  if (name === undefined) return null;
  const user = surroundings.lookupUser?.(name) ?? null;
  if (user === null) {
    throw new Error(`Invalid job_user "${name}" in ${path}: there is no such user on this host`);
  }
  const decision = userSwitch(user, surroundings.uid ?? null);
  if (decision.problem !== null) {
    throw new Error(`Invalid job_user "${name}" in ${path}: ${decision.problem}`);
  }
  return decision.switch ? user : null;
}

/** `http://h:p/` or `ws://h:p` → the HTTP base URL and the agent WebSocket URL. */
export function serverUrls(text: string): { serverUrl: string; wsUrl: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`Invalid server_url "${text}": expected a URL like http://gpu-server:8600`);
  }
  const httpProtocol = { "http:": "http:", "https:": "https:", "ws:": "http:", "wss:": "https:" }[
    url.protocol
  ];
  if (!httpProtocol) {
    throw new Error(`Invalid server_url "${text}": the scheme must be http, https, ws or wss`);
  }
  const base = url.pathname.replace(/\/+$/, "");
  const serverUrl = `${httpProtocol}//${url.host}${base}`;
  const wsProtocol = httpProtocol === "https:" ? "wss:" : "ws:";
  return { serverUrl, wsUrl: `${wsProtocol}//${url.host}${base}${AGENT_WS_PATH}` };
}

function describeIssues(error: z.ZodError, prefix = "", input?: Record<string, unknown>): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length > 0 ? `${prefix}${issue.path.join(".")}` : "(root)";
      const given = input?.[String(issue.path[0])];
      return `${path}: ${issue.message}${given === undefined ? "" : ` (got "${given}")`}`;
    })
    .join("; ");
}
