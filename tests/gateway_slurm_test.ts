/**
 * A Slurm pool as the server sees it, driven by a scripted agent: the scheduler leaves the
 * queueing to Slurm, PENDING frames show Slurm's reason, RUNNING shows where Slurm ran it.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createGatewayHarness, eventually, FakeAgent, type GatewayHarness } from "./_fake_agent.ts";
import { SLURM_PARTITION_LABEL } from "../protocol/objects.ts";

const slurmHello = {
  node_id: "cluster",
  hostname: "login-1",
  gpus: [0, 1, 2, 3].map((index) => ({
    index,
    uuid: `slurm-gpu-${index}`,
    name: "GPU of Slurm partition gpu",
    memory_total_mb: 0,
  })),
  fake_gpus: false,
  labels: { [SLURM_PARTITION_LABEL]: "gpu", site: "hpc" },
};

async function job(h: GatewayHarness, id: string) {
  return (await h.call("GET", `/api/jobs/${id}`)).json;
}

async function withSlurmPool(test: (h: GatewayHarness, agent: FakeAgent) => Promise<void>) {
  const h = await createGatewayHarness();
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  try {
    agent.hello(slurmHello);
    await agent.until((a) => a.of("ack").length === 2);
    await test(h, agent);
  } finally {
    await agent.close();
    await h.stop();
  }
}

const twoGpus = (name: string) => ({
  name,
  command: ["python", "train.py"],
  working_dir: "/shared/w",
  gpus: 2,
});

Deno.test("a node whose labels name a Slurm partition is a Slurm pool", async () => {
  await withSlurmPool(async (h) => {
    const node = (await h.call("GET", "/api/nodes/cluster")).json;
    assertEquals(node.pool, { kind: "slurm", partition: "gpu" });
    assertEquals(node.labels.site, "hpc");
  });
});

Deno.test("a Slurm pool gets every job that fits: Slurm queues them, and PENDING shows its reason", async () => {
  await withSlurmPool(async (h, agent) => {
    const ids: string[] = [];
    for (const n of ["a", "b", "c"]) {
      ids.push((await h.call("POST", "/api/jobs", { body: twoGpus(n) })).json.id);
    }
    // Three 2-GPU jobs on 4 GPUs: all three go to the pool.
    await agent.until((a) => a.of("dispatch").length === 3);
    const [d1, , d3] = agent.of("dispatch").map((d) => d.job);
    const ref = (d: typeof d1) => ({ job_id: d.job_id, attempt: 1, run_id: d.run_id });
    // One that cannot fit the partition at all still waits in gpuctl's queue.
    const huge = (await h.call("POST", "/api/jobs", { body: { ...twoGpus("huge"), gpus: 8 } }))
      .json.id;

    agent.jobState(ref(d3), "PENDING", {
      slurm_job_id: "4711",
      reason: "Slurm: pending (Resources)",
    });
    await eventually(async () => (await job(h, ids[2])).reason === "Slurm: pending (Resources)");
    const pending = await job(h, ids[2]);
    assertEquals([pending.status, pending.gpu_indices], ["DISPATCHED", []]);
    assertEquals((await h.call("GET", `/api/runs/${d3.run_id}`)).json.slurm, {
      job_id: "4711",
      node: null,
    });

    agent.jobState(ref(d1), "RUNNING", {
      pid: null,
      slurm_job_id: "4709",
      node_name: "gpu-07",
      gpu_indices: [2, 3],
    });
    await eventually(async () => (await job(h, ids[0])).status === "RUNNING");
    const running = await job(h, ids[0]);
    assertEquals([running.gpu_indices, running.node_id, running.reason], [[2, 3], "cluster", null]);
    const run = (await h.call("GET", `/api/runs/${d1.run_id}`)).json;
    assertEquals([run.status, run.slurm], ["RUNNING", { job_id: "4709", node: "gpu-07" }]);
    const started = (await h.call("GET", `/api/events?type=RUN_STARTED`)).json.items[0];
    assertStringIncludes(started.message, "Slurm job 4709 on gpu-07, GPU 2,3");

    assertEquals((await job(h, huge)).status, "QUEUED");
    assert(agent.of("dispatch").every((d) => d.job.job_id !== huge));
  });
});

Deno.test("a PENDING frame of a stale copy is refused and the copy is told to stop", async () => {
  await withSlurmPool(async (h, agent) => {
    const id = (await h.call("POST", "/api/jobs", { body: twoGpus("a") })).json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    const d = agent.of("dispatch")[0].job;
    agent.jobState({ job_id: id, attempt: 2, run_id: d.run_id }, "PENDING", {
      slurm_job_id: "12",
      reason: "Slurm: pending (Priority)",
    });
    await agent.until((a) => a.of("cancel").length === 1);
    assertEquals(agent.of("cancel")[0].attempt, 2);
    assertEquals((await job(h, id)).reason, null);
  });
});
