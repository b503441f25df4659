/**
 * An evaluation under `job_user`, with real processes: a server, and an agent running as root
 * whose `agent.yaml` says `job_user: nobody`. The training job and the evaluation job run as
 * nobody in a working dir nobody owns; the evaluation writes `$GPUCTL_EVAL_OUTPUT` (in
 * `<working_dir>/.gpuctl`) and ends COMPLETED with its metrics.
 */
import { assertEquals } from "./assert.ts";
import {
  api,
  nodeOnline,
  startAgentProcess,
  startServerProcess,
  until,
  waitJob,
} from "./_processes.ts";
import { lookupUser } from "../agent/runner/job_user.ts";

const nobody = Deno.uid() === 0 ? lookupUser("nobody") : null;

Deno.test({
  name: "an evaluation run as job_user writes its results and completes with its metrics" +
    (nobody ? "" : " (skipped: needs the tests to run as root, with a user nobody)"),
  ignore: nobody === null,
  async fn() {
    const home = await Deno.makeTempDir({ prefix: "gpuctl-e2e-job-user-" });
    await Deno.chmod(home, 0o755);
    const server = await startServerProcess(`${home}/server`);
    await Deno.mkdir(`${home}/agent-home`, { mode: 0o700 });
    await Deno.writeTextFile(`${home}/agent-home/agent.yaml`, "job_user: nobody\n", {
      mode: 0o600,
    });
    const agent = startAgentProcess({
      server: server.url,
      token: server.agentToken,
      dataDir: `${home}/agent`,
      fakeGpus: 1,
    });
    const call = api(server.url, server.adminToken);
    const wd = `${home}/wd`;
    await Deno.mkdir(wd);
    await Deno.chown(wd, nobody!.uid, nobody!.gid);
    try {
      await nodeOnline(call);
      const submitted = await call("POST", "/api/jobs", {
        name: "train",
        command: [
          "python3",
          "-c",
          "import os; os.makedirs('checkpoints'); open('checkpoints/ckpt-20.pt', 'w').write('w')",
        ],
        working_dir: wd,
        checkpoint_dir: "checkpoints",
        gpus: 0,
      });
      assertEquals(submitted.status, 201, submitted.text);
      const train = submitted.json;
      const trained = await waitJob(call, train.id, ["SUCCEEDED", "FAILED"], 60_000);
      assertEquals(trained.status, "SUCCEEDED", trained.reason);
      const checkpoint = await until(
        async () => (await call("GET", `/api/runs/${trained.run_id}/checkpoints`)).json.items[0],
        15_000,
        "the checkpoint",
      );
      const write = "import json, os; json.dump({'metrics': {'eval/accuracy': 0.91}}, " +
        "open(os.environ['GPUCTL_EVAL_OUTPUT'], 'w'))";
      const queued = await call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
        suite: "heldout",
        command: ["python3", "-c", write],
      });
      assertEquals(queued.status, 201, queued.text);
      const evaluation = await until(
        async () => {
          const e = (await call("GET", `/api/evaluations/${queued.json.evaluation.id}`)).json;
          return ["COMPLETED", "FAILED"].includes(e.status) ? e : null;
        },
        60_000,
        "the evaluation's end",
      );
      // The results go out ahead of the job's end.
      const job = await waitJob(call, queued.json.job.id, ["SUCCEEDED", "FAILED"], 30_000);
      assertEquals([evaluation.status, job.status], ["COMPLETED", "SUCCEEDED"], job.reason);
      assertEquals(evaluation.metrics, { "eval/accuracy": 0.91 });
      const results = await Deno.lstat(`${wd}/.gpuctl/eval-${queued.json.evaluation.id}.json`);
      assertEquals(results.uid, nobody!.uid);
    } finally {
      await agent.kill("SIGTERM");
      await server.proc.kill("SIGTERM");
      await Deno.remove(home, { recursive: true });
    }
  },
});
