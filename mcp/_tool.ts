/**
 * The shape of one MCP tool and the one place tools meet the SDK: the scope check, the call of
 * the service, the answer as `structuredContent` plus a short text, and domain errors mapped to
 * tool errors (`isError`) whose text starts with the error's code.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type {
  CallToolResult,
  ServerNotification,
  ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Principal } from "../server/auth/service.ts";
import { requireScope } from "../server/auth/require_scope.ts";
import type { Context } from "../server/context.ts";
import { ServiceError } from "../server/errors.ts";

/** What a tool's handler is given besides its arguments. */
export interface ToolCall {
  principal: Principal;
  /** Aborted when the client cancels the call or goes away. */
  signal: AbortSignal;
  /**
   * Tells the client the call is still going (`notifications/progress`), when it asked for
   * progress; a client that resets its timeout on progress then waits as long as the tool does.
   */
  progress?: (p: { progress: number; total?: number; message?: string }) => Promise<void>;
  /** How often a long call sends progress. @default 15000 */
  progressEveryMs?: number;
  /**
   * Takes the call's wait slot from what its request reserved (see mcp/wait_slots.ts); absent:
   * the call takes one of its own.
   */
  takeWaitSlot?: () => () => void;
}

/** A tool's answer: the structured result and a one-paragraph summary for the model. */
export interface ToolAnswer {
  data: Record<string, unknown>;
  summary: string;
}

/** The tool's kind; it decides the annotations and the scope a token needs. */
export type ToolKind = "observe" | "control" | "semantic" | "wait";

// deno-lint-ignore no-explicit-any -- each tool narrows its own input type
export interface ToolDef<I extends z.ZodObject<any> = z.ZodObject<any>> {
  name: string;
  title: string;
  description: string;
  kind: ToolKind;
  input: I;
  output: z.ZodObject;
  /** Overrides of the kind's annotations (a control tool that is idempotent, …). */
  annotations?: Partial<ToolAnnotations>;
  run(ctx: Context, args: z.output<I>, call: ToolCall): ToolAnswer | Promise<ToolAnswer>;
}

/** Declares a tool, its input type inferred from its schema. */
// deno-lint-ignore no-explicit-any -- see ToolDef
export function defineTool<I extends z.ZodObject<any>>(def: ToolDef<I>): ToolDef {
  return def as unknown as ToolDef;
}

const KIND_ANNOTATIONS: Record<ToolKind, ToolAnnotations> = {
  observe: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  semantic: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  wait: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  control: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  },
};

/** The scope a tool of this kind needs. */
export const scopeOf = (kind: ToolKind) => kind === "control" ? "write" : "read";

/** The tool's annotations: its kind's, with its own overrides. */
export function annotationsOf(def: ToolDef): ToolAnnotations {
  return { title: def.title, ...KIND_ANNOTATIONS[def.kind], ...def.annotations };
}

/** A tool error result whose text names the error's code first (`WriteScopeError: …`). */
export function toolError(code: string, message: string, details?: unknown): CallToolResult {
  const more = details === undefined ? "" : `\ndetails: ${JSON.stringify(details)}`;
  return { isError: true, content: [{ type: "text", text: `${code}: ${message}${more}` }] };
}

/** How long calls may run back to back before they let the event loop take its turn. */
export const CALL_TURN_MS = 10;
let lastYield = 0;

/**
 * Lets the event loop run what it has queued (an agent's heartbeat, another request) when
 * calls have run back to back for {@linkcode CALL_TURN_MS}: the calls of a batch, and of
 * concurrent batches, are chained promises that would otherwise hold the loop until the
 * last one is done.
 */
export async function yieldWhenBusy(): Promise<void> {
  if (performance.now() - lastYield < CALL_TURN_MS) return;
  await new Promise((resolve) => setTimeout(resolve, 0));
  lastYield = performance.now();
}

/**
 * Runs a tool for a principal: the scope check first (so a read token's control call changes
 * nothing), then the handler. A domain error becomes a tool error; anything else is logged and
 * becomes an `InternalError` tool error.
 */
export async function callTool(
  ctx: Context,
  def: ToolDef,
  args: unknown,
  call: ToolCall,
): Promise<CallToolResult> {
  await yieldWhenBusy();
  try {
    requireScope(call.principal, scopeOf(def.kind), `tool ${def.name}`);
    const answer = await def.run(ctx, args as z.output<typeof def.input>, call);
    // The summary for the model, then the data itself for clients that read only text
    // (as the MCP spec recommends when a tool returns structured content).
    return {
      structuredContent: answer.data,
      content: [
        { type: "text", text: answer.summary },
        { type: "text", text: JSON.stringify(answer.data) },
      ],
    };
  } catch (err) {
    if (err instanceof ServiceError) return toolError(err.code, err.message, err.details);
    ctx.log.error("MCP tool failed", {
      tool: def.name,
      error: String((err as Error)?.stack ?? err),
    });
    return toolError("InternalError", `The server failed to run ${def.name}; see its log`);
  }
}

/** What the SDK hands a tool handler besides its arguments (the part the tools use). */
interface ToolExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: ServerNotification) => Promise<void>;
}

/** Registers each tool on an MCP server, for one principal. */
export function registerTools(
  server: McpServer,
  ctx: Context,
  principal: Principal,
  tools: readonly ToolDef[],
  progressEveryMs?: number,
  takeWaitSlot?: () => () => void,
): void {
  for (const def of tools) {
    server.registerTool(
      def.name,
      {
        title: def.title,
        description: def.description,
        inputSchema: def.input,
        outputSchema: def.output,
        annotations: annotationsOf(def),
      },
      (args: unknown, extra: ToolExtra) => {
        const token = extra._meta?.progressToken;
        return callTool(ctx, def, args, {
          principal,
          signal: extra.signal,
          progressEveryMs,
          takeWaitSlot,
          progress: token === undefined ? undefined : (p) =>
            extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, ...p },
            }),
        });
      },
    );
  }
}

/** How many items a list tool returns unless `limit` says otherwise: small, for a context. */
export const TOOL_PAGE_SIZE = 20;

/** `limit` and `cursor` of a list tool, described. */
export const pageFields = {
  limit: z.number().int().min(1).max(1000).optional().describe(
    `How many items to return (default ${TOOL_PAGE_SIZE}, at most 1000)`,
  ),
  cursor: z.string().regex(/^[0-9]{1,18}$/).optional().describe(
    "The next_cursor of the previous page, to get the page after it",
  ),
};

/** The sentence that tells the model how to get the next page of a list. */
export function moreHint(tool: string, nextCursor: string | null, args: Record<string, unknown>) {
  if (!nextCursor) return "This is the last page.";
  return `More: call ${tool} with ${JSON.stringify({ ...args, cursor: nextCursor })}.`;
}
