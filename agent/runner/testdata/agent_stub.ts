// A stand-in agent for the kill -9 tests: starts one job with the process runner (or the
// Docker runner, as the engine DOCKER_HOST names), keeps its state and every delivered line
// in files (as the real agent's state file and spool would), and runs until it is killed.
// Usage: agent_stub.ts SPEC_JSON OUT_DIR [process|docker]
import { createDockerRunner } from "../docker_runner.ts";
import { createProcessRunner } from "../process_runner.ts";

const [specJson, outDir, kind = "process"] = Deno.args;
const runner = kind === "docker" ? createDockerRunner() : createProcessRunner();
const handle = await runner.start(JSON.parse(specJson), {
  onLine: (line) =>
    Deno.writeTextFileSync(`${outDir}/delivered.jsonl`, JSON.stringify(line) + "\n", {
      append: true,
    }),
});
Deno.writeTextFileSync(`${outDir}/state.json`, JSON.stringify(handle.state()));
setInterval(() => {}, 1000);
