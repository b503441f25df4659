// deno-lint-ignore-file no-console -- the entry point is where the agent talks to its user
/**
 * The agent's entry point: reads flags and the environment (the only agent file that does,
 * or that prints), resolves the config and runs {@linkcode startAgent} until SIGINT/SIGTERM.
 */
import { parseArgs } from "node:util";
import { type AgentFlags, gpuctlHome, loadAgentConfig } from "./config.ts";
import { createLogger } from "./log.ts";
import { lookupUser } from "./runner/job_user.ts";
import { startAgent } from "./start_agent.ts";

const USAGE = `usage: agent.ts --server URL [--token-file PATH] [--node-id ID] [--fake-gpus N]
                [--data-dir DIR] [--heartbeat-s S] [--sample-s S] [--fence-after-s S]
                [--runner process|slurm]

Runs gpuctl jobs on this host for the server at URL. Settings not given as flags come from
$GPUCTL_HOME/agent.yaml (GPUCTL_HOME defaults to ~/.gpuctl). The agent token comes from
--token-file PATH, else GPUCTL_AGENT_TOKEN, else token: in agent.yaml (--token TOKEN works
too, but every user of the host can read it in ps). GPUCTL_NVML_LIBRARY sets the path of
libnvidia-ml. --fence-after-s: out of contact with the server this long, the agent stops its
jobs (default 60; 0 = never). --runner slurm hands jobs to Slurm with sbatch (the slurm:
section of agent.yaml names the partition).`;

/** Runs the agent; resolves with the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        server: { type: "string" },
        token: { type: "string" },
        "token-file": { type: "string" },
        "node-id": { type: "string" },
        "fake-gpus": { type: "string" },
        "data-dir": { type: "string" },
        "heartbeat-s": { type: "string" },
        "sample-s": { type: "string" },
        "fence-after-s": { type: "string" },
        runner: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { help, ...flags } = parsed.values;
  if (help) {
    console.log(USAGE);
    return 0;
  }
  const encoder = new TextEncoder();
  const log = createLogger((line) => Deno.stderr.writeSync(encoder.encode(line + "\n")));
  let config;
  try {
    const home = gpuctlHome({
      GPUCTL_HOME: Deno.env.get("GPUCTL_HOME"),
      HOME: Deno.env.get("HOME"),
    });
    config = await loadAgentConfig(home, flags as AgentFlags, {
      hostname: Deno.hostname(),
      nvmlLibrary: Deno.env.get("GPUCTL_NVML_LIBRARY"),
      pythonPath: Deno.env.get("PYTHONPATH"),
      agentToken: Deno.env.get("GPUCTL_AGENT_TOKEN"),
      lookupUser,
      uid: Deno.uid(),
    });
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  // Read once; no child process (jobs, docker, helpers) needs to see it.
  Deno.env.delete("GPUCTL_AGENT_TOKEN");
  if (config.tokenSource === "--token") {
    log.warn(
      "the agent token was given with --token, where every user of this host can read it " +
        "(ps, /proc): use --token-file PATH, GPUCTL_AGENT_TOKEN or token: in agent.yaml",
    );
  }
  const agent = await startAgent(config, { log, baseEnv: Deno.env.toObject() });
  await new Promise<void>((resolve) => {
    const onSignal = () => {
      Deno.removeSignalListener("SIGINT", onSignal);
      Deno.removeSignalListener("SIGTERM", onSignal);
      resolve();
    };
    Deno.addSignalListener("SIGINT", onSignal);
    Deno.addSignalListener("SIGTERM", onSignal);
  });
  await agent.stop();
  return 0;
}
