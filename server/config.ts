/**
 * server.yaml: its fields and defaults, read (written with fresh tokens on first start) and
 * resolved into what the server needs; a bad file is an error naming the field.
 */
import { z } from "zod";
import { stringify as stringifyYaml } from "yaml";
import { gpuctlHome, parseYamlConfig } from "../lib/config_files.ts";

export { gpuctlHome };
import { generateToken } from "./auth/tokens.ts";
import { PRIVATE_DIR_MODE, writePrivateFile } from "./private_files.ts";
import { DEFAULT_RULES_CONFIG, type ResolvedRulesConfig, resolveRulesConfig } from "./rules/mod.ts";
import { type ResolvedWebhook, resolveWebhooks } from "./webhooks/mod.ts";

/** Default cap on open SSE streams in total (`max_sse_streams` in server.yaml). */
export const SSE_MAX_STREAMS = 200;
/** Default cap on open SSE streams of one token (`max_sse_streams_per_token` in server.yaml). */
export const SSE_MAX_STREAMS_PER_TOKEN = 20;

/** The port the server listens on unless told otherwise. */
export const DEFAULT_PORT = 8600;
/** Loopback by default: serving other hosts (remote agents) is a choice made in server.yaml. */
export const DEFAULT_HOST = "127.0.0.1";

/** `server.yaml`; every field optional, defaults documented here. */
export const serverYaml = z.strictObject({
  /** @default "127.0.0.1" */
  host: z.string().min(1).optional(),
  /** @default 8600 */
  port: z.number().int().min(0).max(65535).optional(),
  /** Where the database and backups live. @default the GPUCTL_HOME folder */
  data_dir: z.string().min(1).optional(),
  admin_token: z.string().optional(),
  agent_token: z.string().optional(),
  /** Event rule thresholds and webhooks are read by the parts that use them. */
  rules: z.record(z.string(), z.unknown()).optional(),
  webhooks: z.array(z.unknown()).optional(),
  /** Seconds without a heartbeat before a node is OFFLINE and its jobs LOST. @default 90 */
  node_timeout_s: z.number().min(1).max(86_400).optional(),
  /** The console's address as people reach it (links in notifications). */
  console_url: z.url().optional(),
  /** Open SSE streams in total. @default 200 (SSE_MAX_STREAMS) */
  max_sse_streams: z.number().int().min(1).max(100_000).optional(),
  /** Open SSE streams of one token. @default 20 (SSE_MAX_STREAMS_PER_TOKEN) */
  max_sse_streams_per_token: z.number().int().min(1).max(100_000).optional(),
  /** Open agent connections in total. @default 32 (MAX_AGENT_CONNECTIONS) */
  max_agent_connections: z.number().int().min(1).max(10_000).optional(),
});
export type ServerYaml = z.infer<typeof serverYaml>;

/** Everything the server needs, resolved once at start. */
export interface ResolvedServerConfig {
  home: string;
  configPath: string;
  host: string;
  port: number;
  dataDir: string;
  dbPath: string;
  backupDir: string;
  adminToken: string;
  agentToken: string;
  /** True when this start created server.yaml (and so the tokens). */
  firstStart: boolean;
  rules: ResolvedRulesConfig;
  webhooks: ResolvedWebhook[];
  consoleUrl: string | null;
  nodeTimeoutMs: number;
  sse: { maxStreams: number; maxStreamsPerToken: number };
  /** Open agent connections in total (see server/gateway/gateway.ts). */
  maxAgentConnections: number | null;
  raw: ServerYaml;
}

/**
 * Reads (creating on first start, mode 0600) `<home>/server.yaml` and resolves it with the
 * overrides. A bad file is an error that names the field.
 */
export async function loadServerConfig(
  home: string,
  overrides: { port?: number; host?: string; userHome?: string } = {},
): Promise<ResolvedServerConfig> {
  const configPath = `${home}/server.yaml`;
  await Deno.mkdir(home, { recursive: true, mode: PRIVATE_DIR_MODE });
  let text: string | null = null;
  try {
    text = await Deno.readTextFile(configPath);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const firstStart = text === null;
  let raw: ServerYaml;
  if (text === null) {
    raw = {
      port: DEFAULT_PORT,
      admin_token: generateToken().token,
      agent_token: generateToken().token,
    };
  } else {
    raw = parseConfig(text, configPath);
  }
  let changed = firstStart;
  if (!raw.admin_token) {
    raw = { ...raw, admin_token: generateToken().token };
    changed = true;
  }
  if (!raw.agent_token) {
    raw = { ...raw, agent_token: generateToken().token };
    changed = true;
  }
  if (changed) {
    const body = "# gpuctl server configuration. Keep this file private: it holds tokens.\n" +
      stringifyYaml(raw);
    await writePrivateFile(configPath, body);
  }
  const dataDir = expandHome(raw.data_dir ?? home, home, overrides.userHome);
  return {
    home,
    configPath,
    host: overrides.host ?? raw.host ?? DEFAULT_HOST,
    port: overrides.port ?? raw.port ?? DEFAULT_PORT,
    dataDir,
    dbPath: `${dataDir}/gpuctl.db`,
    backupDir: `${dataDir}/backups`,
    adminToken: raw.admin_token!,
    agentToken: raw.agent_token!,
    firstStart,
    rules: rulesFromYaml(raw.rules ?? {}, configPath),
    webhooks: webhooksFromYaml(raw.webhooks, configPath),
    consoleUrl: raw.console_url ?? null,
    nodeTimeoutMs: (raw.node_timeout_s ?? 90) * 1000,
    sse: {
      maxStreams: raw.max_sse_streams ?? SSE_MAX_STREAMS,
      maxStreamsPerToken: raw.max_sse_streams_per_token ?? SSE_MAX_STREAMS_PER_TOKEN,
    },
    maxAgentConnections: raw.max_agent_connections ?? null,
    raw,
  };
}

/**
 * The `rules:` section, written in snake_case (`loss_spike_window: 50`), as the rules'
 * config; an unknown or bad field is an error that names it.
 */
export function rulesFromYaml(section: Record<string, unknown>, path: string): ResolvedRulesConfig {
  const camel: Record<string, unknown> = {};
  const known = new Set(Object.keys(DEFAULT_RULES_CONFIG));
  for (const [key, value] of Object.entries(section)) {
    const name = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    if (!known.has(name)) {
      const allowed = [...known].map((k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
      throw new Error(
        `Cannot use "${path}": rules.${key}: unknown rule setting; known: ${allowed.join(", ")}`,
      );
    }
    camel[name] = value;
  }
  try {
    return resolveRulesConfig(camel);
  } catch (err) {
    throw new Error(`Cannot use "${path}": rules: ${(err as Error).message}`, { cause: err });
  }
}

/** Parses server.yaml text; errors name the file and the field. */
export function parseConfig(text: string, path: string): ServerYaml {
  return parseYamlConfig(text, path, serverYaml);
}

function expandHome(path: string, home: string, userHome: string | undefined): string {
  if ((path === "~" || path.startsWith("~/")) && userHome) return userHome + path.slice(1);
  return path.startsWith("/") ? path : `${home}/${path}`;
}

function webhooksFromYaml(section: unknown, path: string): ResolvedWebhook[] {
  try {
    return resolveWebhooks(section);
  } catch (err) {
    throw new Error(`Cannot use "${path}": ${(err as Error).message}`, { cause: err });
  }
}
