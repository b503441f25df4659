// Test helpers for the CLI: an in-process gpuctl server on a real socket, the CLI run
// in-process or as a real subprocess, and temporary GPUCTL_HOME folders.

import { fileURLToPath } from "node:url";
import { createHarness, type Harness } from "../tests/_harness.ts";
import { tfeventsPath } from "../tests/fixtures/mod.ts";
import type { CliEnv, CommandContext } from "./command.ts";
import { runCli } from "./main.ts";

/** The repository root (subprocesses run there, as `deno task cli` does). */
export const REPO_ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The real TensorBoard fixtures (tests/fixtures/tfevents). */
export const TFEVENTS_FIXTURES = tfeventsPath();

/** A server on 127.0.0.1 over a fresh database. */
export interface TestServer {
  h: Harness;
  url: string;
  close(): Promise<void>;
}

/** Serves a harness app (`createHarness()`) on a real socket, as the CLI meets a server. */
export async function startTestServer(): Promise<TestServer> {
  const h = await createHarness();
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: controller.signal, onListen: () => {} },
    h.app.fetch,
  );
  return {
    h,
    url: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      controller.abort();
      await server.finished;
      await h.close();
    },
  };
}

/** A temporary GPUCTL_HOME, removed by `cleanup`. */
export async function tempHome(): Promise<{ home: string; cleanup: () => Promise<void> }> {
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "gpuctl-cli-test-" }));
  return { home, cleanup: () => Deno.remove(home, { recursive: true }) };
}

/** What an in-process or subprocess CLI run printed, and its exit code. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with `env` and a clock; `fetch` defaults to the real one. */
export async function runInProcess(
  argv: string[],
  env: CliEnv,
  options: Partial<Pick<CommandContext, "now" | "fetch">> = {},
): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    env,
    io: { out: (l) => out.push(l), err: (l) => err.push(l) },
    now: options.now ?? Date.now,
    fetch: options.fetch,
  });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/**
 * Runs `deno task --quiet cli …` as a user does (with the task's permissions), as a real
 * process with only `env` (plus PATH, HOME).
 */
export async function runSubprocess(argv: string[], env: Record<string, string>): Promise<CliRun> {
  const base: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cli", ...argv],
    cwd: REPO_ROOT,
    env: { ...base, NO_COLOR: "1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** A port on 127.0.0.1 that nothing listens on (it was just released). */
export function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}
