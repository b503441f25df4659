/** `stop_on` end to end: an anomaly a job asked to stop on cancels it through the agent. */
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { createGatewayHarness, eventually, FakeAgent, type GatewayHarness } from "./_fake_agent.ts";
import { RulesEngine } from "../server/rules/engine.ts";
import { resolveRulesConfig } from "../server/rules/mod.ts";

async function withRules(test: (h: GatewayHarness) => Promise<void>): Promise<void> {
  const h = await createGatewayHarness();
  const engine = new RulesEngine(h.ctx, {
    config: resolveRulesConfig({}),
    timerIntervalMs: 3_600_000,
  });
  engine.start();
  try {
    await test(h);
  } finally {
    engine.stop();
    await h.stop();
  }
}

async function startJob(h: GatewayHarness, extra: Record<string, unknown>) {
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  agent.hello();
  await agent.until((a) => a.of("ack").length === 2);
  const res = await h.call("POST", "/api/jobs", {
    body: {
      name: "diverges",
      command: ["python", "train.py"],
      working_dir: "/w",
      gpus: 1,
      ...extra,
    },
  });
  assertEquals(res.status, 201, res.text);
  await agent.until((a) => a.of("dispatch").length === 1);
  const d = agent.of("dispatch")[0].job;
  const ref = { job_id: res.json.id, attempt: 1, run_id: d.run_id };
  agent.jobState(ref, "RUNNING", { pid: 42 });
  await eventually(async () =>
    (await h.call("GET", `/api/jobs/${ref.job_id}`)).json.status === "RUNNING"
  );
  return { agent, ref, job: res.json };
}

const nanPoints = (ref: { job_id: string; attempt: number; run_id: string }) => ({
  type: "metrics",
  ...ref,
  points: [
    { key: "train/loss", step: 1233, value: 0.5, wall_time: 1 },
    { key: "train/loss", step: 1234, value: "NaN", wall_time: 2 },
  ],
});

Deno.test("a job with stop_on LOSS_NAN is cancelled through its agent when its loss goes NaN", async () => {
  await withRules(async (h) => {
    const { agent, ref, job } = await startJob(h, { stop_on: ["LOSS_NAN"], grace_s: 5 });
    assertEquals(job.stop_on, ["LOSS_NAN"]);
    agent.data(nanPoints(ref));
    await agent.until((a) => a.of("cancel").length === 1);
    const cancel = agent.of("cancel")[0];
    assertEquals([cancel.job_id, cancel.attempt, cancel.grace_s], [ref.job_id, 1, 5]);
    assertStringIncludes(cancel.reason, "stopped by LOSS_NAN at step 1234: ");
    // The agent stops the process group and reports the end, as for any cancel.
    agent.jobState(ref, "CANCELLED", { signal: "SIGTERM", failure_class: "CANCELLED" });
    const ended = await eventually(async () => {
      const j = (await h.call("GET", `/api/jobs/${ref.job_id}`)).json;
      return j.status === "CANCELLED" ? j : null;
    });
    assertEquals(ended.failure_class, "CANCELLED");
    assertStringIncludes(ended.reason, "stopped by LOSS_NAN at step 1234");
    const runEnd = (await h.call("GET", `/api/events?run_id=${ref.run_id}&type=RUN_CANCELLED`))
      .json.items;
    assertStringIncludes(runEnd[0].message, "stopped by LOSS_NAN at step 1234");
    await agent.close();
  });
});

Deno.test("a job without stop_on keeps running when its loss goes NaN", async () => {
  await withRules(async (h) => {
    const { agent, ref, job } = await startJob(h, {});
    assertEquals(job.stop_on, []);
    agent.data(nanPoints(ref));
    await eventually(async () =>
      (await h.call("GET", `/api/events?run_id=${ref.run_id}&type=LOSS_NAN`)).json.items
        .length === 1
    );
    const j = (await h.call("GET", `/api/jobs/${ref.job_id}`)).json;
    assertEquals([j.status, agent.of("cancel").length], ["RUNNING", 0]);
    await agent.close();
  });
});

Deno.test("stop_on naming something that is not an anomaly is a 400 listing the types", async () => {
  await withRules(async (h) => {
    const res = await h.call("POST", "/api/jobs", {
      body: {
        name: "x",
        command: ["true"],
        working_dir: "/w",
        gpus: 0,
        stop_on: ["LOSS_NAN", "RUN_FAILED"],
      },
    });
    assertEquals(res.status, 400, res.text);
    assertStringIncludes(res.json.error.message, "stop_on");
    assertStringIncludes(res.json.error.message, '"RUN_FAILED" is not an anomaly event type');
    assertStringIncludes(res.json.error.message, "OOM, LOSS_NAN, LOSS_SPIKE");
    assertEquals((await h.call("GET", "/api/jobs")).json.items, []);
  });
});
