// A small typed HTTP client for the gpuctl API: bearer token, JSON both ways, and the
// server's `{error: {code, message}}` answers turned into errors that carry that message.

import type { z } from "zod";
import type { Checkpoint, Run } from "../protocol/objects.ts";
import type {
  checkpointIn,
  importRegistration,
  metricPoint,
  sdkLogBatch,
} from "../protocol/rest/sdk.ts";

/** How long one request may take before it is abandoned. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** An answer of the server that is not a 2xx. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The server could not be reached at all (nothing answered, or not in time). */
export class ConnectionError extends Error {
  override name = "ConnectionError";
}

/** Query parameters; undefined values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** `path?query` with the defined parameters. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const q = params.toString();
  return q ? `${path}?${q}` : path;
}

/** `POST /api/imports` (import_key ≤ 200 characters; the same key again: the same run). */
export type ImportRequest = z.input<typeof importRegistration>;

/** The answer of `POST /api/imports` (201 created, 200 when the key was known). */
export interface ImportResponse {
  run: Run;
  created: boolean;
}

/** A metric point on the wire: NaN and ±Infinity travel as the strings "NaN", "±Infinity". */
export type WirePoint = z.input<typeof metricPoint>;

/** A checkpoint on the wire; the server fills in the metrics at its step when none are sent. */
export type WireCheckpoint = z.input<typeof checkpointIn>;

/** `POST /api/sdk/runs/{id}/log`: one batch. */
export type LogBatch = z.input<typeof sdkLogBatch>;

/** What one log batch stored (new checkpoints only; points and lines as written). */
export interface Accepted {
  points: number;
  checkpoints: number;
  logs: number;
}

/** Options of `GpuctlClient`. */
export interface ClientOptions {
  serverUrl: string;
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default 60000 */
  timeoutMs?: number;
  /** The places looked at for the server URL (`Connection.tried`), named when it cannot be reached. */
  tried?: string[];
}

/** The gpuctl API, one method per call the CLI makes. */
export class GpuctlClient {
  readonly serverUrl: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #tried: string[];

  constructor(options: ClientOptions) {
    this.serverUrl = options.serverUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#tried = options.tried ?? [];
  }

  /** Sends one request; resolves to the status and the parsed JSON body of a 2xx answer. */
  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    options: { timeoutMs?: number } = {},
  ): Promise<{ status: number; body: T }> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const res = await this.#send(method, path, {
      body: body === undefined ? undefined : JSON.stringify(body),
      accept: "application/json",
      signal: AbortSignal.timeout(timeoutMs),
      timeoutMs,
    });
    const text = await res.text();
    let json: unknown = undefined;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: described below.
    }
    if (!res.ok) throw errorOf(res.status, method, path, json, text);
    if (json === undefined) {
      throw new ApiError(
        res.status,
        "BadResponse",
        `${method} ${path} answered ${res.status} without a JSON body: ${snippet(text)}`,
      );
    }
    return { status: res.status, body: json as T };
  }

  /** `GET path?query`: the JSON body; `timeoutMs` for a request that waits on purpose. */
  async get<T>(path: string, query?: Query, options: { timeoutMs?: number } = {}): Promise<T> {
    return (await this.request<T>("GET", withQuery(path, query), undefined, options)).body;
  }

  /** `POST path` with a JSON body: the JSON answer. */
  async post<T>(path: string, body: unknown = {}): Promise<T> {
    return (await this.request<T>("POST", path, body)).body;
  }

  /** `PUT path` with a JSON body: the JSON answer. */
  async put<T>(path: string, body: unknown): Promise<T> {
    return (await this.request<T>("PUT", path, body)).body;
  }

  /** `DELETE path`: the JSON answer. */
  async delete<T>(path: string): Promise<T> {
    return (await this.request<T>("DELETE", path)).body;
  }

  /**
   * Opens an SSE stream (`GET path` with Last-Event-ID when given): the response, once the
   * server answered 200. Not answered: ConnectionError; another status: ApiError.
   */
  async openStream(
    path: string,
    options: { lastEventId?: string; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const res = await this.#send("GET", path, {
      accept: "text/event-stream",
      lastEventId: options.lastEventId,
      signal: options.signal,
    });
    if (res.status !== 200) {
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      throw errorOf(res.status, "GET", path, json, text);
    }
    return res;
  }

  async #send(
    method: string,
    path: string,
    o: {
      body?: string;
      accept: string;
      lastEventId?: string;
      signal?: AbortSignal;
      timeoutMs?: number;
    },
  ): Promise<Response> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: o.accept,
    };
    if (o.body !== undefined) headers["content-type"] = "application/json";
    if (o.lastEventId !== undefined) headers["last-event-id"] = o.lastEventId;
    try {
      return await this.#fetch(`${this.serverUrl}${path}`, {
        method,
        headers,
        body: o.body,
        signal: o.signal,
      });
    } catch (err) {
      if (o.signal?.aborted && (o.signal.reason as Error)?.name !== "TimeoutError") throw err;
      const reason = (err as Error).name === "TimeoutError"
        ? `no answer within ${(o.timeoutMs ?? this.#timeoutMs) / 1000} s`
        : (err as Error).message;
      const tried = this.#tried.length ? ` (looked at ${this.#tried.join("; ")})` : "";
      throw new ConnectionError(
        `Cannot reach the gpuctl server at ${this.serverUrl}: ${reason}${tried}; ` +
          "is it running? (gpuctl server start) Or pass --server URL",
        { cause: err },
      );
    }
  }

  /** `POST /api/imports`: the run of an imported folder, created on first use of its key. */
  async createImport(body: ImportRequest): Promise<ImportResponse> {
    return (await this.request<ImportResponse>("POST", "/api/imports", body)).body;
  }

  /** `POST /api/sdk/runs`: registers a run under the id in `body` (again: the same run). */
  async registerSdkRun(body: Record<string, unknown>): Promise<{ run: Run; created: boolean }> {
    const { status, body: run } = await this.request<Run>("POST", "/api/sdk/runs", body);
    return { run, created: status === 201 };
  }

  /** `POST /api/sdk/runs/{id}/log`: one batch of points, checkpoints, logs or status. */
  async logBatch(runId: string, body: LogBatch | Record<string, unknown>): Promise<Accepted> {
    const path = `/api/sdk/runs/${encodeURIComponent(runId)}/log`;
    return (await this.request<{ accepted: Accepted }>("POST", path, body)).body.accepted;
  }

  /** `GET /api/runs/{id}`. */
  async getRun(id: string): Promise<Run> {
    return (await this.request<Run>("GET", `/api/runs/${encodeURIComponent(id)}`)).body;
  }

  /** How many metric points a run holds (`GET /api/runs/{id}/metrics`, summed over keys). */
  async countPoints(runId: string): Promise<number> {
    const path = `/api/runs/${encodeURIComponent(runId)}/metrics`;
    const keys = (await this.request<{ keys: { points: number }[] }>("GET", path)).body.keys;
    return keys.reduce((n, k) => n + k.points, 0);
  }

  /** `GET /api/runs/{id}/checkpoints`. */
  async listCheckpoints(runId: string): Promise<Checkpoint[]> {
    const path = `/api/runs/${encodeURIComponent(runId)}/checkpoints`;
    return (await this.request<{ items: Checkpoint[] }>("GET", path)).body.items;
  }
}

function errorOf(status: number, method: string, path: string, json: unknown, text: string) {
  const error = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (error && typeof error.message === "string") {
    return new ApiError(
      status,
      typeof error.code === "string" ? error.code : "Error",
      error.message,
    );
  }
  return new ApiError(
    status,
    "HttpError",
    `${method} ${path} failed with HTTP ${status}: ${snippet(text) || "(empty body)"}`,
  );
}

function snippet(text: string): string {
  const line = text.trim().replace(/\s+/g, " ");
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
