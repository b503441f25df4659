// A stand-in agent for the kill -9 test: starts one job with the process runner, keeps
// its state and every delivered line in files (as the real agent's state file and spool
// would), and runs until it is killed.
// Usage: agent_stub.ts SPEC_JSON OUT_DIR
import { createProcessRunner } from "../process_runner.ts";

const [specJson, outDir] = Deno.args;
const handle = await createProcessRunner().start(JSON.parse(specJson), {
  onLine: (line) =>
    Deno.writeTextFileSync(`${outDir}/delivered.jsonl`, JSON.stringify(line) + "\n", {
      append: true,
    }),
});
Deno.writeTextFileSync(`${outDir}/state.json`, JSON.stringify(handle.state()));
setInterval(() => {}, 1000);
