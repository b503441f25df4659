// `gpuctl server …` and `gpuctl agent …`: the server and the agent themselves, so that one
// `gpuctl` file (compiled with `deno task compile`) is all a GPU host needs. Their entry
// points parse their own flags and read their own environment; they load only when used.

import type { Command } from "../command.ts";

export const serverCommand: Command = {
  name: "server",
  summary: "run the gpuctl server (start: with a local agent; serve: alone; backup)",
  help: `usage: gpuctl server <start|serve|backup> [--port N] [--host ADDR] [--fake-gpus N]
                     [--no-local-agent]

Runs the control-plane server, the owner of $GPUCTL_HOME's database, until SIGINT or
SIGTERM. start also runs a local agent; serve runs the server alone; backup writes a
consistent copy of the database to <data_dir>/backups and prints its path. The first start
writes $GPUCTL_HOME/server.yaml with an admin_token and an agent_token.

options:
  --port N          the port (default 8600; else GPUCTL_PORT)
  --host ADDR       the address to listen on (default 127.0.0.1)
  --fake-gpus N     start: the local agent simulates N GPUs
  --no-local-agent  start: no local agent
  -h, --help        this help

examples:
  $ gpuctl server start --fake-gpus 2
  $ gpuctl server serve --host 0.0.0.0 --port 8600`,
  async run(args) {
    const { main } = await import("../../server/main.ts");
    return await main(args);
  },
};

export const agentCommand: Command = {
  name: "agent",
  summary: "run the gpuctl agent on this GPU host",
  help: `usage: gpuctl agent --server URL [--token-file PATH] [--node-id ID] [--fake-gpus N]
                    [--data-dir DIR] [--heartbeat-s S] [--sample-s S] [--fence-after-s S]

Runs gpuctl jobs on this host for the server at URL, until SIGINT or SIGTERM. Settings not
given as flags come from $GPUCTL_HOME/agent.yaml. The agent token comes from
--token-file PATH, else GPUCTL_AGENT_TOKEN, else token: in agent.yaml (--token TOKEN works
too, but every user of the host can read it in ps). GPUCTL_NVML_LIBRARY sets the path of
libnvidia-ml.

options:
  --server URL        the gpuctl server
  --token-file PATH   a file holding the agent token
  --node-id ID        this node's id (default: the host name)
  --fake-gpus N       simulate N GPUs instead of reading NVML
  --data-dir DIR      job logs, state and spool (default: $GPUCTL_HOME/agent)
  --heartbeat-s S     seconds between heartbeats (default 10)
  --sample-s S        seconds between GPU samples
  --fence-after-s S   out of contact this long, stop the jobs (default 60; 0: never)
  -h, --help          this help

example:
  $ gpuctl agent --server http://gpu-head:8600 --token-file ~/.gpuctl/agent.token --node-id gpu-2`,
  async run(args) {
    const { main } = await import("../../agent/main.ts");
    return await main(args);
  },
};
