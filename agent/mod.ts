/**
 * The gpuctl agent: runs jobs on a GPU host for the server, over one outbound WebSocket.
 *
 * @example Run an agent in-process (as tests do)
 * ```ts ignore
 * const config = resolveAgentConfig({}, { server: url, token, "fake-gpus": 2 }, { hostname: "h" }, home);
 * const agent = await startAgent(config, { log: createLogger(console.error) });
 * await agent.stop(); // jobs keep running; the next agent reattaches
 * ```
 * @module
 */

/** Starts the agent and returns a handle to stop it. */
export { type AgentDeps, type RunningAgent, startAgent } from "./start_agent.ts";
/** `agent.yaml` and flags → the resolved configuration. */
export {
  type AgentFlags,
  type AgentYaml,
  gpuctlHome,
  loadAgentConfig,
  parseAgentYaml,
  resolveAgentConfig,
  type ResolvedAgentConfig,
  serverUrls,
} from "./config.ts";
/** The numbered, acknowledged store of outgoing frames. */
export { Spool, type SpoolOptions, type SpoolStats } from "./spool.ts";
/** The WebSocket to the server, and its reconnect delay. */
export { backoffDelay, Connection, type ConnectionOptions } from "./connection.ts";
/** The environment of a job's process. */
export { buildJobEnv, ingestUrl, type JobEnvContext } from "./job_env.ts";
/** The attempts this agent runs. */
export { JobManager, type JobManagerOptions } from "./jobs.ts";
/** The local endpoint a job's SDK posts to. */
export { createIngestHandler, type IngestServer, startIngestServer } from "./ingest_server.ts";
/** Host and GPU sampling, and the alerts it raises. */
export { Telemetry, type TelemetryOptions, type TelemetrySnapshot } from "./telemetry.ts";
export { diskLevel, nextDiskAlerts } from "./disk_alerts.ts";
export { newForeignProcesses } from "./foreign_alerts.ts";
/** The agent's logger. */
export { createLogger, type Logger, memoryLogger } from "./log.ts";
