// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * The logging call: torch's `SummaryWriter.add_scalar` next to the gpuctl SDK's `run.log`, per
 * call in a tight loop and as the slowdown of `deno task bench`'s near-empty training loop
 * (50,000 steps of 40 sines, 2 metrics a step), with the gpuctl server down (the SDK spools)
 * and up (a real server process). All in the same Python interpreter.
 */
import { startServerProcess } from "../../tests/_processes.ts";
import type { Report } from "../report.ts";
import { median, num } from "./summary.ts";

const HERE = new URL(".", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;
const DOWN = "http://127.0.0.1:9"; // nothing listens: the SDK spools

export interface LogShape {
  calls: number;
  steps: number;
  rounds: number;
}

type Tool = "none" | "tb" | "gpuctl";

async function py(
  python: string,
  args: string[],
  env: Record<string, string>,
): Promise<Record<string, number>> {
  const out = await new Deno.Command(python, {
    args: [`${HERE}/log_call.py`, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(`log_call.py ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(stdout.split("\n").at(-1)!);
}

export async function benchLogging(
  report: Report,
  python: string,
  shape: LogShape,
): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-bench-peers-log-" });
  const server = await startServerProcess(`${home}/server`);
  const envFor = (url: string | null): Record<string, string> => ({
    PYTHONPATH: `${ROOT}/sdk/python`,
    GPUCTL_HOME: `${home}/sdk`,
    GPUCTL_SERVER_URL: url ?? DOWN,
    GPUCTL_TOKEN: url
      ? server.adminToken
      : "gpc_aaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    GPUCTL_EXIT_TIMEOUT: "30",
  });
  const down = envFor(null);
  const up = envFor(server.url);
  try {
    const perCall = async (tool: Tool, env: Record<string, string>) => {
      const xs: number[] = [];
      for (let i = 0; i < shape.rounds; i++) {
        xs.push((await py(python, ["percall", tool, "--calls", String(shape.calls)], env)).us);
      }
      return median(xs)!;
    };
    const loop = async (tool: Tool, env: Record<string, string>) => {
      const xs: number[] = [];
      for (let i = 0; i < shape.rounds; i++) {
        xs.push((await py(python, ["loop", tool, "--steps", String(shape.steps)], env)).seconds);
      }
      return median(xs)!;
    };
    console.log("peers: the logging call …");
    const tbCall = await perCall("tb", down);
    const sdkDown = await perCall("gpuctl", down);
    const sdkUp = await perCall("gpuctl", up);
    const callText = (us: number) => `${num(us)} µs a call`;
    const what = `${num(shape.calls)} calls in a tight loop, median of ${shape.rounds}`;
    report({
      name: `peer: SummaryWriter.add_scalar, ${what}`,
      value: { value: tbCall, unit: "µs", text: callText(tbCall) },
      baseline: {
        value: sdkDown,
        unit: "µs",
        text: `gpuctl run.log, server down ${callText(sdkDown)}`,
      },
      target: null,
      note: "for comparison",
    });
    report({
      name: `peer: SummaryWriter.add_scalar, ${what} (gpuctl server up)`,
      value: { value: tbCall, unit: "µs", text: callText(tbCall) },
      baseline: { value: sdkUp, unit: "µs", text: `gpuctl run.log, server up ${callText(sdkUp)}` },
      target: null,
      note: "for comparison",
    });
    const plain = await loop("none", down);
    const tbLoop = await loop("tb", down);
    const sdkLoopDown = await loop("gpuctl", down);
    const sdkLoopUp = await loop("gpuctl", up);
    const slower = (s: number) =>
      `${num(s * 1000)} ms (+${num(((s - plain) / plain) * 100)} % on ${
        num(plain * 1000)
      } ms unlogged)`;
    const loopWhat = `training loop, ${
      num(shape.steps)
    } steps logging 2 metrics, median of ${shape.rounds}`;
    report({
      name: `peer: SummaryWriter in the ${loopWhat}`,
      value: { value: tbLoop * 1000, unit: "ms", text: slower(tbLoop) },
      baseline: {
        value: sdkLoopDown * 1000,
        unit: "ms",
        text: `gpuctl, server down ${slower(sdkLoopDown)}`,
      },
      target: null,
      note: "for comparison",
    });
    report({
      name: `peer: SummaryWriter in the ${loopWhat} (gpuctl server up)`,
      value: { value: tbLoop * 1000, unit: "ms", text: slower(tbLoop) },
      baseline: {
        value: sdkLoopUp * 1000,
        unit: "ms",
        text: `gpuctl, server up ${slower(sdkLoopUp)}`,
      },
      target: null,
      note: "for comparison",
    });
  } finally {
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
}
