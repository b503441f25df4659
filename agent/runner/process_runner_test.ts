import assert from "node:assert/strict";
import { readStat } from "./_proc.ts";
import { createProcessRunner } from "./process_runner.ts";
import { runnerConformance } from "./runner_conformance.ts";
import type { OutputLine, RunSpec } from "./types.ts";

runnerConformance({ kind: "process", makeRunner: () => createProcessRunner(), image: null });

Deno.test("process runner: a job outlives an agent killed with kill -9, and a new agent reattaches", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_kill9_" });
  const stub = new URL("./testdata/agent_stub.ts", import.meta.url).pathname;
  const script = `${dir}/count.py`;
  await Deno.writeTextFile(
    script,
    "import time\nfor i in range(60):\n    print(f'line {i}', flush=True)\n    time.sleep(0.02)\n",
  );
  const spec: RunSpec = {
    run_id: "kill9",
    job_id: "j",
    attempt: 1,
    command: ["python3", script],
    shell: false,
    working_dir: dir,
    env: {},
    gpu_indices: [],
    runner: "process",
    image: null,
    run_dir: `${dir}/run`,
    grace_s: 1,
  };
  const agent = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", stub, JSON.stringify(spec), dir],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let jobPid: number | null = null;
  try {
    const delivered = async () => {
      const text = await Deno.readTextFile(`${dir}/delivered.jsonl`).catch(() => "");
      return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as OutputLine);
    };
    const deadline = Date.now() + 15_000;
    while ((await delivered()).length < 5 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    agent.kill("SIGKILL");
    await agent.status;
    const before = await delivered();
    assert.ok(before.length >= 5, "the stub agent delivered lines");
    const state = JSON.parse(await Deno.readTextFile(`${dir}/state.json`));
    jobPid = state.wrapper_pid;
    assert.ok(readStat(state.wrapper_pid) !== null, "the job outlived its agent");

    const after: OutputLine[] = [];
    const handle = await createProcessRunner().reattach(
      state,
      { onLine: (l) => void after.push(l) },
      before.at(-1)!.seq,
    );
    const exit = await handle.exited;
    assert.deepEqual([exit.exit_code, exit.failure_class], [0, null]);
    const all = [...before, ...after];
    assert.deepEqual(all.map((l) => l.seq), all.map((_, i) => i + 1));
    assert.deepEqual(all.map((l) => l.text), Array.from({ length: 60 }, (_, i) => `line ${i}`));
  } finally {
    try {
      agent.kill("SIGKILL");
    } catch {
      // already dead
    }
    await agent.status;
    if (jobPid !== null) {
      try {
        Deno.kill(-jobPid, "SIGKILL");
      } catch {
        // the job had ended
      }
    }
    await Deno.remove(dir, { recursive: true });
  }
});
