/**
 * `gpuctl` as a user has it: installed with the README's `deno install` line into a temporary
 * root, and run through the wrapper that install wrote, as a real process.
 */
import { CLI_PERMISSIONS } from "../cli/main.ts";
import { type Proc, spawnProgram } from "./_processes.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** The install command of the README, with a root of its own (`--root DIR`). */
export function installArgs(root: string): string[] {
  return [
    "install",
    "-g",
    "-f",
    "-n",
    "gpuctl",
    "--root",
    root,
    "--config",
    "deno.json",
    ...CLI_PERMISSIONS,
    "cli/main.ts",
  ];
}

/** What one gpuctl run printed, and its exit code. */
export interface GpuctlRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON. */
  // deno-lint-ignore no-explicit-any -- tests read arbitrary JSON answers
  json(): any;
}

/** An installed gpuctl, run with a base environment (a GPUCTL_HOME, a server and a token). */
export interface Gpuctl {
  /** The wrapper script `deno install` wrote. */
  path: string;
  run(args: string[], env?: Record<string, string>): Promise<GpuctlRun>;
  spawn(args: string[], env?: Record<string, string>): Proc;
  /** Runs it on a pseudo-terminal (`script`), as at a user's terminal: stdout and stderr together. */
  runOnTerminal(args: string[], env?: Record<string, string>): Promise<GpuctlRun>;
  remove(): Promise<void>;
}

/** Installs gpuctl into a temporary root; `env` is added to every run's environment. */
export async function installGpuctl(env: Record<string, string>): Promise<Gpuctl> {
  const root = await Deno.makeTempDir({ prefix: "gpuctl-install-" });
  const install = await new Deno.Command(Deno.execPath(), {
    args: installArgs(root),
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!install.success) {
    throw new Error(`deno install failed: ${new TextDecoder().decode(install.stderr)}`);
  }
  const path = `${root}/bin/gpuctl`;
  const decoder = new TextDecoder();
  const exec = async (program: string, args: string[], runEnv: Record<string, string>) => {
    const out = await new Deno.Command(program, {
      args,
      cwd: ROOT,
      env: runEnv,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = decoder.decode(out.stdout);
    return {
      code: out.code,
      stdout,
      stderr: decoder.decode(out.stderr),
      json: () => JSON.parse(stdout),
    };
  };
  return {
    path,
    run: (args, extra = {}) => exec(path, args, { NO_COLOR: "1", ...env, ...extra }),
    spawn: (args, extra = {}) => spawnProgram(path, args, { ...env, ...extra }),
    runOnTerminal(args, extra = {}) {
      const line = [path, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
      return exec("script", ["-qec", line, "/dev/null"], {
        TERM: "xterm",
        COLUMNS: "100",
        ...env,
        ...extra,
      });
    },
    remove: () => Deno.remove(root, { recursive: true }),
  };
}
