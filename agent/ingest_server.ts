/**
 * The local endpoint a job's SDK posts to (`GPUCTL_INGEST_URL`): `POST /runs/<run_id>/log`
 * with an `sdkLogBatch`. The batch is spooled as an `sdk` frame and answered at once, so a
 * training script never waits on the server (red line 2).
 */
import type { z } from "zod";
import { sdkLogBatch } from "../protocol/rest.ts";
import type { AttemptRef, NewDataFrame } from "./frames.ts";
import type { Logger } from "./log.ts";

type SdkBatchIn = z.input<typeof sdkLogBatch>;

/** The largest batch body accepted. */
export const MAX_INGEST_BODY_BYTES = 32 * 1024 * 1024;

/** What the endpoint needs from the agent. */
export interface IngestDeps {
  /** The attempt of a run this agent runs, or null. */
  findRun(runId: string): AttemptRef | null;
  emit(frame: NewDataFrame): Promise<unknown>;
  log: Logger;
}

/** A request handler for the ingest endpoint (tests call it directly). */
export function createIngestHandler(deps: IngestDeps): (req: Request) => Promise<Response> {
  return async (req) => {
    const match = /^\/runs\/([^/]+)\/log$/.exec(new URL(req.url).pathname);
    if (!match) {
      return error(404, "not_found", "Not found: the ingest endpoint is POST /runs/<run_id>/log");
    }
    if (req.method !== "POST") {
      return error(405, "method_not_allowed", `Method ${req.method} not allowed: use POST`);
    }
    const runId = decodeURIComponent(match[1]);
    const ref = deps.findRun(runId);
    if (!ref) {
      return error(404, "not_found", `Run "${runId}" is not running on this agent`);
    }
    const declared = Number(req.headers.get("content-length") ?? "0");
    if (declared > MAX_INGEST_BODY_BYTES) return tooLarge();
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.length > MAX_INGEST_BODY_BYTES) return tooLarge();
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch (err) {
      return error(
        400,
        "invalid_json",
        `Cannot read the batch: not UTF-8 JSON (${(err as Error).message})`,
      );
    }
    const parsed = sdkLogBatch.safeParse(body);
    if (!parsed.success) {
      const details = parsed.error.issues.map((i) => ({
        path: i.path.join("."),
        message: i.message,
      }));
      const first = details[0];
      return error(
        400,
        "validation",
        `Invalid batch: ${first.path || "body"}: ${first.message}`,
        details,
      );
    }
    try {
      // The body as sent, not as parsed: parsing turns "NaN" into NaN, which JSON cannot carry.
      await deps.emit({ type: "sdk", stream: "data", ...ref, batch: body as SdkBatchIn });
    } catch (err) {
      deps.log.error("cannot spool an SDK batch", { run_id: runId, error: String(err) });
      // A full disk or an agent shutting down: the SDK keeps the batch and sends it again.
      return error(
        503,
        "unavailable",
        `Cannot store the batch now (${String(err)}); send it again`,
      );
    }
    const batch = parsed.data;
    return Response.json({
      accepted: {
        points: batch.points?.length ?? 0,
        checkpoints: batch.checkpoints?.length ?? 0,
        logs: batch.logs?.length ?? 0,
        evaluation: batch.evaluation ? 1 : 0,
      },
    });
  };
}

/** A listening ingest endpoint. */
export interface IngestServer {
  readonly port: number;
  stop(): Promise<void>;
}

/** Serves the ingest endpoint on 127.0.0.1 at a random port. */
export function startIngestServer(deps: IngestDeps): IngestServer {
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen: () => {} },
    createIngestHandler(deps),
  );
  return {
    port: server.addr.port,
    async stop() {
      abort.abort();
      await server.finished;
    },
  };
}

function tooLarge(): Response {
  return error(413, "too_large", `Batch too large: at most ${MAX_INGEST_BODY_BYTES} bytes`);
}

function error(status: number, code: string, message: string, details?: unknown): Response {
  return Response.json({ error: { code, message, ...(details ? { details } : {}) } }, { status });
}
