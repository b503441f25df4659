/**
 * The local endpoint a job's SDK posts to (`GPUCTL_INGEST_URL`): `POST /runs/<run_id>/log`
 * with an `sdkLogBatch`. The batch is spooled as an `sdk` frame and answered at once, so a
 * training script never waits on the server (red line 2).
 *
 * It listens on a Unix socket at a path that depends only on the agent's data dir, so a job
 * started by one agent process still reaches the next one after `deno task start` (or the
 * agent) is restarted under it: a random TCP port would change at each start, and a fixed
 * one would collide between agents on one host. The socket's folder is 0700, so only the
 * agent's user (and its jobs) can post.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { tmpdir } from "node:os";
import type { z } from "zod";
import type { sdkLogBatch } from "../protocol/rest/sdk.ts";
import { partitionSdkBatch } from "../protocol/sdk_batch.ts";
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
  /** Resolves once the runs this agent reattached to are known. @default already */
  ready?: Promise<void>;
}

/**
 * A request handler for the ingest endpoint (tests call it directly). With `runKey` (the TCP
 * endpoint of a Slurm agent, which anyone on the network can reach) a path must carry the
 * run's key, `/k/<key>/runs/<run_id>/log`, which only the run's own environment holds.
 */
export function createIngestHandler(
  deps: IngestDeps,
  runKey: ((runId: string) => string) | null = null,
): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = new URL(req.url).pathname;
    const match = runKey
      ? /^\/k\/([0-9a-f]+)\/runs\/([^/]+)\/log$/.exec(path)
      : /^()\/runs\/([^/]+)\/log$/.exec(path);
    if (!match) {
      return error(404, "not_found", "Not found: the ingest endpoint is POST /runs/<run_id>/log");
    }
    if (req.method !== "POST") {
      return error(405, "method_not_allowed", `Method ${req.method} not allowed: use POST`);
    }
    const runId = decodeURIComponent(match[2]);
    if (runKey && !sameText(match[1], runKey(runId))) {
      return error(404, "not_found", `Run "${runId}" is not running on this agent`);
    }
    await deps.ready;
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
    // The valid part goes on and the rest is named, as the server does with a batch.
    const parts = partitionSdkBatch(body);
    if (parts === null) {
      return error(400, "validation", "Invalid batch: a JSON object expected");
    }
    try {
      // The body as sent, not as parsed: parsing turns "NaN" into NaN, which JSON cannot carry.
      if (Object.keys(parts.raw).length) {
        await deps.emit({ type: "sdk", stream: "data", ...ref, batch: parts.raw as SdkBatchIn });
      }
    } catch (err) {
      deps.log.error("cannot spool an SDK batch", { run_id: runId, error: String(err) });
      // A full disk or an agent shutting down: the SDK keeps the batch and sends it again.
      return error(
        503,
        "unavailable",
        `Cannot store the batch now (${String(err)}); send it again`,
      );
    }
    const { batch, refused } = parts;
    const accepted = {
      points: batch.points?.length ?? 0,
      checkpoints: batch.checkpoints?.length ?? 0,
      logs: batch.logs?.length ?? 0,
      evaluation: batch.evaluation ? 1 : 0,
    };
    return Response.json(refused.count ? { accepted, refused } : { accepted });
  };
}

/** A listening ingest endpoint. */
export interface IngestServer {
  /** The Unix socket it listens on. */
  readonly socketPath: string;
  stop(): Promise<void>;
}

/** Longest socket path kept in the data dir (the kernel's limit is 107 bytes). */
export const MAX_SOCKET_PATH = 100;

/**
 * `<dataDir>/ingest/ingest.sock`; for a data dir too deep for a socket path, or with
 * `outside` (jobs run as another user, who cannot enter the data dir), a folder in the temp
 * dir named after the data dir (as stable across restarts, and as private).
 */
export function ingestSocketPath(dataDir: string, tempDir = tmpdir(), outside = false): string {
  const inDataDir = `${dataDir}/ingest/ingest.sock`;
  if (!outside && new TextEncoder().encode(inDataDir).length <= MAX_SOCKET_PATH) return inDataDir;
  const digest = createHash("sha256").update(dataDir).digest("hex").slice(0, 16);
  return `${tempDir}/gpuctl-ingest-${digest}/ingest.sock`;
}

/**
 * Serves the ingest endpoint on the Unix socket `socketPath`, in a 0700 folder (0750 and the
 * group `jobGroup`, with the socket 0660, when jobs run as another user). A socket left by
 * an agent that was killed is replaced; one that still answers belongs to a live agent on
 * the same data dir, and starting is refused.
 */
export async function startIngestServer(
  deps: IngestDeps,
  socketPath: string,
  jobGroup: number | null = null,
): Promise<IngestServer> {
  const folder = socketPath.slice(0, socketPath.lastIndexOf("/"));
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  await checkOwnFolder(folder);
  await Deno.chmod(folder, jobGroup === null ? 0o700 : 0o750);
  if (jobGroup !== null) await Deno.chown(folder, null, jobGroup);
  if (await answers(socketPath)) {
    throw new Error(
      `Cannot serve the ingest endpoint at ${socketPath}: another agent is serving it ` +
        "(two agents cannot share a data dir; give this one its own --data-dir)",
    );
  }
  await Deno.remove(socketPath).catch(() => {});
  const abort = new AbortController();
  const server = Deno.serve(
    { path: socketPath, signal: abort.signal, onListen: () => {} },
    createIngestHandler(deps),
  );
  if (jobGroup !== null) {
    await Deno.chown(socketPath, null, jobGroup);
    await Deno.chmod(socketPath, 0o660);
  }
  return {
    socketPath,
    async stop() {
      abort.abort();
      await server.finished;
    },
  };
}

/**
 * The socket's folder may be in the shared temp dir, where its name is known in advance: any
 * user (a job user, between two agent starts) could have made it first, as a folder of their
 * own or a link to another folder, which the chmod and chown that follow would then change.
 * It must be a real folder owned by the agent's user. In a sticky temp dir no other user can
 * replace it after this check.
 */
async function checkOwnFolder(folder: string): Promise<void> {
  const info = await Deno.lstat(folder);
  const uid = Deno.uid();
  if (info.isSymlink || !info.isDirectory || (uid !== null && info.uid !== uid)) {
    throw new Error(
      `Cannot serve the ingest endpoint in ${folder}: it is ${
        info.isSymlink
          ? "a symbolic link"
          : info.isDirectory
          ? `owned by uid ${info.uid}`
          : "not a folder"
      }, not a folder of the agent's user (uid ${uid}); another user may have made it: remove it ` +
        "and start the agent again",
    );
  }
}

/** The TCP ingest endpoint of a Slurm agent. */
export interface TcpIngestServer {
  /** The port it listens on (the one asked for, or the one picked for port 0). */
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Serves the ingest endpoint on `host:port` for jobs on other hosts (a Slurm agent's compute
 * nodes). Each run's URL carries its key (see {@linkcode runKeyFrom}); the port must stay the
 * same across agent restarts, so that running jobs reach the next agent.
 */
export function startTcpIngestServer(
  deps: IngestDeps,
  host: string,
  port: number,
  runKey: (runId: string) => string,
): Promise<TcpIngestServer> {
  const abort = new AbortController();
  const listening = Promise.withResolvers<number>();
  let server: Deno.HttpServer;
  try {
    server = Deno.serve(
      {
        hostname: host,
        port,
        signal: abort.signal,
        onListen: (addr) => listening.resolve(addr.port),
      },
      createIngestHandler(deps, runKey),
    );
  } catch (err) {
    throw new Error(
      `Cannot serve the ingest endpoint on ${host}:${port}: ${(err as Error).message} ` +
        "(set ingest_host and ingest_port in agent.yaml to an address of this host that is free)",
      { cause: err },
    );
  }
  return listening.promise.then((bound) => ({
    port: bound,
    async stop() {
      abort.abort();
      await server.finished;
    },
  }));
}

/**
 * The key of each run's ingest URL: an HMAC of the run id under a secret kept in the data dir
 * (`<dataDir>/ingest/secret`, 0600, made at the first start), so it is the same after a restart.
 */
export async function runKeyFrom(dataDir: string): Promise<(runId: string) => string> {
  const folder = `${dataDir}/ingest`;
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const path = `${folder}/secret`;
  let secret: string;
  try {
    secret = (await Deno.readTextFile(path)).trim();
  } catch {
    secret = "";
  }
  if (!/^[0-9a-f]{64}$/.test(secret)) {
    secret = randomBytes(32).toString("hex");
    await Deno.writeTextFile(path, secret, { mode: 0o600 });
  }
  return (runId) => createHmac("sha256", secret).update(runId).digest("hex").slice(0, 32);
}

/** The ingest URL of a run on the TCP endpoint (the SDK appends `/log`). */
export function tcpIngestUrl(host: string, port: number, key: string, runId: string): string {
  const h = host.includes(":") ? `[${host}]` : host;
  return `http://${h}:${port}/k/${key}/runs/${encodeURIComponent(runId)}`;
}

function sameText(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Whether something accepts connections on the socket. */
async function answers(socketPath: string): Promise<boolean> {
  try {
    const conn = await Deno.connect({ transport: "unix", path: socketPath });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

function tooLarge(): Response {
  return error(413, "too_large", `Batch too large: at most ${MAX_INGEST_BODY_BYTES} bytes`);
}

function error(status: number, code: string, message: string, details?: unknown): Response {
  return Response.json({ error: { code, message, ...(details ? { details } : {}) } }, { status });
}
