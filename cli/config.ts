// Which server the CLI talks to, and with which token. In order, for each of the two:
// `--server`/`--token`, then GPUCTL_SERVER_URL/GPUCTL_TOKEN, then `$GPUCTL_HOME/cli.yaml`
// (`server_url:`, `token:`), then, on the server's own host, `$GPUCTL_HOME/server.json`
// (written by the running server: its URL, whatever `--port` gave it; ignored when its
// process is gone) and `$GPUCTL_HOME/server.yaml` (`http://127.0.0.1:<port>` and its
// `admin_token`).

import { join } from "node:path";
import { gpuctlHome as sharedHome, parseYamlConfig } from "../lib/config_files.ts";
import { SERVER_JSON, serverJson } from "../protocol/server_json.ts";
import { z } from "zod";
import { GpuctlClient } from "./client.ts";
import type { CliEnv, CommandContext } from "./command.ts";

/** The port of a server whose server.yaml names none (the server's own default). */
export const DEFAULT_SERVER_PORT = 8600;

/** A server and a token, with where each came from (for messages). */
export interface Connection {
  serverUrl: string;
  token: string;
  /** Where the server URL was found: `--server`, `GPUCTL_SERVER_URL` or a file's path. */
  serverFrom: string;
  /** Where the token was found. */
  tokenFrom: string;
  /**
   * Each place looked at for the server URL, in order, ending with the one used:
   * `GPUCTL_SERVER_URL: not set`, `<home>/server.json: stale (process 4242 is not running)`.
   */
  tried: string[];
}

/** `cli.yaml`: every field optional; unknown fields are refused so typos do not go unseen. */
export const cliYaml = z.strictObject({
  server_url: z.string().trim().min(1).optional(),
  token: z.string().trim().min(1).optional(),
});

// Only the two fields the CLI needs; the server validates the rest of its own file.
const serverYamlFields = z.object({
  host: z.string().optional(),
  port: z.number().int().min(1).max(65535).optional(),
  admin_token: z.string().min(1).optional(),
});

/** The gpuctl home: GPUCTL_HOME, else `~/.gpuctl`. */
export function gpuctlHome(env: CliEnv): string {
  return sharedHome(env);
}

interface Found {
  value: string;
  from: string;
}

/** A place that did not give a value, and why (for messages). */
interface Passed {
  passed: string;
}

type Source = () => Found | Passed | undefined | Promise<Found | Passed | undefined>;

/**
 * Resolves the server URL and the token from flags, environment and files, each from the
 * first place that has it. The server.yaml admin token is only used for a loopback server:
 * it must never travel to another host because a URL came from elsewhere.
 */
export async function resolveConnection(
  flags: { server?: string; token?: string },
  env: CliEnv,
): Promise<Connection> {
  // Files are read only when flags and environment leave something open: a user who sets
  // both need not be able to read the server's own (mode 0600) server.yaml.
  const home = () => gpuctlHome(env);
  const cliPath = () => join(home(), "cli.yaml");
  const serverPath = () => join(home(), "server.yaml");
  const cli = once(() => readYaml(cliPath(), cliYaml));
  const local = once(() => readYaml(serverPath(), serverYamlFields));

  const tried: string[] = [];
  const server = await first(tried, [
    () => found(flags.server, "--server") ?? { passed: "--server: not given" },
    () =>
      found(env.GPUCTL_SERVER_URL, "GPUCTL_SERVER_URL") ?? { passed: "GPUCTL_SERVER_URL: not set" },
    async () =>
      found((await cli())?.server_url, cliPath()) ?? { passed: `${cliPath()}: no server_url` },
    () => runningServer(join(home(), SERVER_JSON), pidAlive),
    async () => {
      const yaml = await local();
      return yaml
        ? found(localServerUrl(yaml, env), serverPath())
        : { passed: `${serverPath()}: not found` };
    },
  ]);
  if (!server) {
    throw new Error(
      "No gpuctl server configured: pass --server URL and --token TOKEN, set " +
        `GPUCTL_SERVER_URL and GPUCTL_TOKEN, or write server_url: and token: to ${cliPath()} ` +
        `(looked at ${tried.join("; ")})`,
    );
  }
  const serverUrl = normaliseUrl(server);
  const token = await first([], [
    () => found(flags.token, "--token"),
    () => found(env.GPUCTL_TOKEN, "GPUCTL_TOKEN"),
    async () => found((await cli())?.token, cliPath()),
    async () =>
      isLoopback(serverUrl) ? found((await local())?.admin_token, serverPath()) : undefined,
  ]);
  if (!token) {
    throw new Error(
      `No token for the gpuctl server ${serverUrl} (from ${server.from}): pass --token TOKEN, ` +
        `set GPUCTL_TOKEN, or write token: to ${cliPath()}`,
    );
  }
  return {
    serverUrl,
    token: token.value,
    serverFrom: server.from,
    tokenFrom: token.from,
    tried,
  };
}

function found(value: string | undefined, from: string): Found | undefined {
  return value !== undefined && value.trim() !== "" ? { value: value.trim(), from } : undefined;
}

// The first source that gives a value; `tried` gets a line for each source consulted.
async function first(tried: string[], sources: Source[]): Promise<Found | undefined> {
  for (const source of sources) {
    const value = await source();
    if (value && "value" in value) {
      tried.push(`${value.from}: ${value.value}`);
      return value;
    }
    if (value) tried.push(value.passed);
  }
  return undefined;
}

/**
 * The URL in server.json, unless its process is gone (a server that crashed leaves the
 * file behind): then the next place is tried, and the reason is kept for messages.
 */
export async function runningServer(
  path: string,
  isAlive: (pid: number) => boolean | null,
): Promise<Found | Passed> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { passed: `${path}: no server running` };
    throw new Error(`Cannot read "${path}": ${(err as Error).message}`, { cause: err });
  }
  let parsed;
  try {
    parsed = serverJson.safeParse(JSON.parse(text));
  } catch {
    parsed = null;
  }
  if (!parsed?.success) {
    return { passed: `${path}: ignored (not a server.json the server wrote)` };
  }
  if (isAlive(parsed.data.pid) === false) {
    return {
      passed: `${path}: stale (its server, process ${parsed.data.pid}, is not running)`,
    };
  }
  return { value: parsed.data.url, from: path };
}

/**
 * Whether a process runs (signal 0 checks without signalling). `null` when the CLI may not
 * signal processes (run without --allow-run): the URL is then tried as it is.
 */
export function pidAlive(pid: number): boolean | null {
  // Asking first: a denied permission must not turn into a prompt on a terminal.
  if (Deno.permissions.querySync({ name: "run" }).state !== "granted") return null;
  try {
    Deno.kill(pid, 0 as unknown as Deno.Signal);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    // EPERM: it runs, as another user.
    return err instanceof Deno.errors.PermissionDenied ? true : null;
  }
}

function once<T>(load: () => Promise<T>): () => Promise<T> {
  let promise: Promise<T> | undefined;
  return () => promise ??= load();
}

// The server listens on its `host` (loopback by default); GPUCTL_PORT overrides its port
// just as it does for the server itself.
function localServerUrl(yaml: z.infer<typeof serverYamlFields>, env: CliEnv): string {
  const envPort = Number(env.GPUCTL_PORT);
  const port = env.GPUCTL_PORT && Number.isInteger(envPort) && envPort > 0
    ? envPort
    : yaml.port ?? DEFAULT_SERVER_PORT;
  const host = !yaml.host || ["0.0.0.0", "::", "localhost"].includes(yaml.host)
    ? "127.0.0.1"
    : yaml.host.includes(":")
    ? `[${yaml.host}]`
    : yaml.host;
  return `http://${host}:${port}`;
}

function normaliseUrl(found: Found): string {
  let url: URL;
  try {
    url = new URL(found.value);
  } catch {
    throw new Error(
      `Invalid gpuctl server URL "${found.value}" (from ${found.from}): ` +
        "expected http://HOST:PORT or https://HOST",
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(
      `Invalid gpuctl server URL "${found.value}" (from ${found.from}): ` +
        "only http:// and https:// are supported",
    );
  }
  return url.href.replace(/\/+$/, "");
}

/** True for URLs whose host is this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

async function readYaml<S extends z.ZodType>(
  path: string,
  schema: S,
): Promise<z.infer<S> | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`Cannot read "${path}": ${(err as Error).message}`, { cause: err });
  }
  return parseYamlConfig(text, path, schema);
}

/** A client for the server and token that flags, environment and files name. */
export async function connect(
  flags: { server?: string; token?: string },
  ctx: Pick<CommandContext, "env" | "fetch">,
): Promise<GpuctlClient> {
  return new GpuctlClient({ ...await resolveConnection(flags, ctx.env), fetch: ctx.fetch });
}
