/**
 * The MCP face of gpuctl: 29 tools over the same service functions the REST routes call —
 * observe, control, semantic, and `wait_for_run` — served at `/mcp` (streamable HTTP, stateless)
 * and, through `gpuctl mcp stdio` / `gpuctl mcp serve`, by a process of its own.
 *
 * @module
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Principal } from "../server/auth/service.ts";
import type { Context } from "../server/context.ts";
import { registerTools, type ToolDef } from "./_tool.ts";
import { getStatusTool } from "./tools/get_status.ts";
import { listNodesTool } from "./tools/list_nodes.ts";
import { listJobsTool } from "./tools/list_jobs.ts";
import { getJobTool } from "./tools/get_job.ts";
import { listRunsTool } from "./tools/list_runs.ts";
import { getRunTool } from "./tools/get_run.ts";
import { getMetricsTool } from "./tools/get_metrics.ts";
import { getLogsTool } from "./tools/get_logs.ts";
import { listEventsTool } from "./tools/list_events.ts";
import { listCheckpointsTool } from "./tools/list_checkpoints.ts";
import { listExperimentsTool } from "./tools/list_experiments.ts";
import { submitJobTool } from "./tools/submit_job.ts";
import { cancelJobTool } from "./tools/cancel_job.ts";
import { retryJobTool } from "./tools/retry_job.ts";
import { evaluateCheckpointTool } from "./tools/evaluate_checkpoint.ts";
import { setPrimaryMetricTool } from "./tools/set_primary_metric.ts";
import { diagnoseRunTool } from "./tools/diagnose_run.ts";
import { compareRunsTool } from "./tools/compare_runs.ts";
import { compareCheckpointsTool } from "./tools/compare_checkpoints.ts";
import { getBestCheckpointTool } from "./tools/get_best_checkpoint.ts";
import { explainFailureTool } from "./tools/explain_failure.ts";
import { waitForRunTool } from "./tools/wait_for_run.ts";
import { createSweepTool } from "./tools/create_sweep.ts";
import { getSweepTool } from "./tools/get_sweep.ts";
import { forkRunTool } from "./tools/fork_run.ts";
import { markRunTool } from "./tools/mark_run.ts";
import { addNoteTool } from "./tools/add_note.ts";
import { getLineageTool } from "./tools/get_lineage.ts";
import { queryRunsTool } from "./tools/query_runs.ts";

/** The server's name and version in the MCP handshake. */
export const MCP_SERVER_INFO = { name: "gpuctl", version: "0.1.0" } as const;

/** What the server tells a client in the handshake: how the tools fit together. */
export const MCP_INSTRUCTIONS =
  "gpuctl runs training jobs on GPU hosts and records every run's metrics, logs, checkpoints " +
  "and anomalies. The loop: submit_job (project/experiment named, checkpoint_dir set) → " +
  "wait_for_run {job_id} (never poll or sleep: it wakes on finish, a step, or an anomaly such " +
  "as LOSS_NAN or OOM) → compare_runs → evaluate_checkpoint → get_best_checkpoint. Follow the " +
  "next_actions the answers carry. Control tools need a write token.";

/** Every tool, in the order tools/list gives them. */
export const TOOLS: readonly ToolDef[] = [
  getStatusTool,
  listNodesTool,
  listJobsTool,
  getJobTool,
  listRunsTool,
  getRunTool,
  getMetricsTool,
  getLogsTool,
  listEventsTool,
  listCheckpointsTool,
  listExperimentsTool,
  submitJobTool,
  cancelJobTool,
  retryJobTool,
  evaluateCheckpointTool,
  setPrimaryMetricTool,
  diagnoseRunTool,
  compareRunsTool,
  compareCheckpointsTool,
  getBestCheckpointTool,
  explainFailureTool,
  waitForRunTool,
  createSweepTool,
  getSweepTool,
  forkRunTool,
  markRunTool,
  addNoteTool,
  getLineageTool,
  queryRunsTool,
];

/** What an MCP server is told beyond the context and principal; every field optional. */
export interface McpOptions {
  /** How often a long call (wait_for_run) sends progress to a client that asked. @default 15000 */
  progressEveryMs?: number;
  /** Where wait_for_run calls take their slot (a request's reservation). */
  takeWaitSlot?: () => () => void;
}

/** An MCP server with every tool, acting for `principal` (its scope decides what it may do). */
export function createMcpServer(
  ctx: Context,
  principal: Principal,
  options: McpOptions = {},
): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: MCP_INSTRUCTIONS,
  });
  registerTools(server, ctx, principal, TOOLS, options.progressEveryMs, options.takeWaitSlot);
  return server;
}

export { callTool, scopeOf } from "./_tool.ts";
export type { ToolDef } from "./_tool.ts";
