// deno-lint-ignore-file no-console -- the entry point is where the server talks to its user
/**
 * The server's entry point: `start` (server, and the local agent once there is one),
 * `serve` (the server alone) and `backup`. The only server file that reads the
 * environment, parses flags or prints to the console.
 */
import { parseArgs } from "node:util";
import { installConfiguredTokens } from "./auth/service.ts";
import { gpuctlHome, loadServerConfig, type ResolvedServerConfig } from "./config.ts";
import { type Context, createContext } from "./context.ts";
import { backupDatabase, openDatabase } from "./db/mod.ts";
import { createApp } from "./http/app.ts";
import { sseStreamsOf } from "./http/sse.ts";
import { AgentGateway } from "./gateway/gateway.ts";
import { SchedulerLoop } from "./scheduler/loop.ts";
import { SweepLoop } from "./sweeps/loop.ts";
import { BudgetLoop } from "./budgets/loop.ts";
import { RulesEngine } from "./rules/engine.ts";
import { WebhookDispatcher } from "./webhooks/mod.ts";
import { createLogger, type Logger } from "./log.ts";
import { AGENT_PERMISSIONS } from "../agent/permissions.ts";
import { BlockSealer } from "./metrics/block_sealer.ts";
import { startCheckpointer } from "./db/checkpointer.ts";
import { loadSessionKey } from "./auth/session.ts";
import { prepareIslands } from "./console/mod.ts";
import { makePrivateDir, makePrivateFile, octal } from "./private_files.ts";
import { localUrl, removeServerJson, writeServerJson } from "./server_json.ts";

const USAGE = `usage: server/main.ts <start|serve|backup> [--port N] [--host ADDR]
                      [--fake-gpus N] [--no-local-agent]

  start    run the control-plane server and a local agent (its own process)
  serve    run the server alone
  backup   write a consistent copy of the database to <data_dir>/backups and print its path

environment: GPUCTL_HOME (default ~/.gpuctl), GPUCTL_PORT,
             GPUCTL_TRUST_FORWARDED_PROTO=1 (only behind a TLS proxy that is the only way in)`;

/** Runs `start`, `serve` or `backup`; resolves with the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        "fake-gpus": { type: "string" },
        "no-local-agent": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const command = parsed.positionals[0] ?? "serve";
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  const portText = parsed.values.port ?? Deno.env.get("GPUCTL_PORT");
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      console.error(`Invalid port "${portText}": expected a whole number from 0 to 65535`);
      return 2;
    }
  }
  const config = await loadServerConfig(
    gpuctlHome({ GPUCTL_HOME: Deno.env.get("GPUCTL_HOME"), HOME: Deno.env.get("HOME") }),
    { port, host: parsed.values.host, userHome: Deno.env.get("HOME") },
  );
  const fakeGpus = parsed.values["fake-gpus"];
  if (fakeGpus !== undefined && !/^\d{1,2}$/.test(fakeGpus)) {
    console.error(`Invalid --fake-gpus "${fakeGpus}": expected a whole number from 0 to 99`);
    return 2;
  }
  switch (command) {
    case "start":
      return await serve(config, parsed.values["no-local-agent"] ? null : { fakeGpus }, true);
    case "serve":
      return await serve(config, null, false);
    case "backup":
      return await runBackup(config);
    default:
      console.error(`Unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

function openContext(config: ResolvedServerConfig): Context {
  const log = createLogger();
  makePrivate(config, log);
  return createContext({
    db: openDatabase(config.dbPath),
    log,
    backupDir: config.backupDir,
    sse: config.sse,
  });
}

/**
 * GPUCTL_HOME and the data folder 0700, the config files in it 0600 (the database's files
 * are made private by openDatabase), saying so when a looser mode is tightened.
 */
function makePrivate(config: ResolvedServerConfig, log: Logger): void {
  for (const dir of new Set([config.home, config.dataDir])) {
    const before = makePrivateDir(dir);
    if (before !== null) {
      log.info("made a folder private", { path: dir, mode: octal(before), now: "0700" });
    }
  }
  for (const name of ["server.yaml", "agent.yaml", "cli.yaml"]) {
    const path = `${config.home}/${name}`;
    const before = makePrivateFile(path);
    if (before !== null) {
      log.info("made a file private", { path, mode: octal(before), now: "0600" });
    }
  }
}

/**
 * Starts the local agent as its own process, pointed at this server with the agent token.
 * The token goes in the agent's environment, which only its user can read, never on its
 * command line, which every user of the host can read in `ps`.
 */
function startLocalAgent(
  config: ResolvedServerConfig,
  port: number,
  options: { fakeGpus?: string },
): Deno.ChildProcess {
  const args = [
    "run",
    ...AGENT_PERMISSIONS,
    new URL("../agent.ts", import.meta.url).pathname,
    "--server",
    `http://127.0.0.1:${port}`,
  ];
  if (options.fakeGpus !== undefined) args.push("--fake-gpus", options.fakeGpus);
  console.log(
    `local agent: ${options.fakeGpus ? `${options.fakeGpus} fake GPUs` : "real GPUs (NVML)"}`,
  );
  return new Deno.Command(Deno.execPath(), {
    args,
    env: { GPUCTL_HOME: config.home, GPUCTL_AGENT_TOKEN: config.agentToken },
    stdin: "null",
  }).spawn();
}

/** Installs server.yaml's tokens, except those deleted through the API (said in the log). */
export function installTokens(ctx: Context, config: ResolvedServerConfig): void {
  const { skipped } = installConfiguredTokens(ctx, [
    { token: config.adminToken, name: "admin", scope: "admin" },
    { token: config.agentToken, name: "agent", scope: "agent" },
  ]);
  for (const { name, deleted_at } of skipped) {
    ctx.log.warn(
      `the ${name}_token in ${config.configPath} was deleted through the API at ${deleted_at}; ` +
        `it stays deleted (remove ${name}_token from that file to have a new one made at the next start)`,
    );
  }
}

async function serve(
  config: ResolvedServerConfig,
  localAgent: { fakeGpus?: string } | null,
  buildIslands: boolean,
): Promise<number> {
  const ctx = openContext(config);
  installTokens(ctx, config);
  const webhooks = new WebhookDispatcher({
    hooks: config.webhooks,
    bus: ctx.bus,
    log: ctx.log,
    consoleUrl: config.consoleUrl ?? undefined,
  });
  webhooks.start();
  const gateway = new AgentGateway(ctx, {
    nodeTimeoutMs: config.nodeTimeoutMs,
    ...(config.maxAgentConnections ? { maxConnections: config.maxAgentConnections } : {}),
    livenessIntervalMs: Math.min(5_000, config.nodeTimeoutMs / 4),
  });
  ctx.agents = gateway;
  gateway.start();
  const scheduler = new SchedulerLoop(ctx, gateway);
  scheduler.start();
  const sweeps = new SweepLoop(ctx);
  sweeps.start();
  const budgets = new BudgetLoop(ctx);
  budgets.start();
  const rules = new RulesEngine(ctx, { config: config.rules });
  rules.start();
  const sealer = new BlockSealer(ctx);
  sealer.start();
  const checkpointer = startCheckpointer(ctx.db, {
    onError: (message) => ctx.log.error("WAL checkpoints on their own thread failed", { message }),
  });
  // `start` may build the console's island bundles (it may run `deno bundle`); `serve` uses
  // what the checkout has. Either way a missing build only makes the pages static.
  const islands = await prepareIslands({ build: buildIslands });
  if (islands.problem) console.error(`console: ${islands.problem}`);
  const sessionKey = loadSessionKey(`${config.dataDir}/session.key`);
  if (!sessionKey.persisted) {
    console.error(
      `console: cannot write ${config.dataDir}/session.key: sign-ins end when the server stops`,
    );
  }
  const app = createApp(ctx, [], {
    console: {
      sessionKey: sessionKey.key,
      islands,
      trustForwardedProto: Deno.env.get("GPUCTL_TRUST_FORWARDED_PROTO") === "1",
    },
  });
  let listening!: (url: string) => void;
  const listened = new Promise<string>((resolve) => listening = resolve);
  const server = Deno.serve({
    hostname: config.host,
    port: config.port,
    onListen: ({ hostname, port }) => listening(localUrl(hostname, port)),
  }, app.fetch);
  const url = await listened;
  // The CLI on this host finds the server through server.json, whatever port it got; it is
  // written before the banner, so whoever sees the banner can use the CLI.
  await writeServerJson(config.home, {
    url,
    pid: Deno.pid,
    started_at: ctx.now().toISOString(),
  });
  // One write, so a reader never sees the banner without its token.
  const lines = [`gpuctl server listening: console at ${url}/`, `data: ${config.dbPath}`];
  if (config.firstStart) {
    lines.push(
      `\nFirst start: created ${config.configPath} (mode 0600).`,
      `Admin token (shown once; it stays in that file):\n  ${config.adminToken}\n`,
    );
  }
  console.log(lines.join("\n"));
  const agent = localAgent ? startLocalAgent(config, server.addr.port, localAgent) : null;
  const stop = () => {
    // The agent saves its state and leaves running jobs running; the next one reattaches.
    try {
      agent?.kill("SIGTERM");
    } catch {
      // already gone
    }
    // Open event streams (a console tab) would hold the shutdown forever.
    sseStreamsOf(ctx).closeAll();
    server.shutdown();
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  try {
    await server.finished;
    await agent?.status;
  } finally {
    await removeServerJson(config.home, Deno.pid);
  }
  sweeps.stop();
  budgets.stop();
  scheduler.stop();
  gateway.stop();
  rules.stop();
  sealer.stop();
  await webhooks.stop();
  await checkpointer.stop();
  ctx.db.close();
  return 0;
}

async function runBackup(config: ResolvedServerConfig): Promise<number> {
  const ctx = openContext(config);
  try {
    const result = await backupDatabase(ctx.db, config.backupDir, new Date());
    console.log(result.path);
    console.error(`${result.bytes} bytes, integrity_check: ${result.integrity}`);
    return 0;
  } finally {
    ctx.db.close();
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (err) {
    console.error((err as Error).message);
    Deno.exit(1);
  }
}
