/**
 * What an earlier attempt wrote while its node was cut off reaches that attempt's run once
 * the node is back: frames of an old attempt are still refused as a say over the job, but
 * not as that run's record (found by `tests/faults_partition_test.ts`: a cut past the node
 * timeout lost every line and point the first attempt wrote meanwhile).
 */
import { assert, assertEquals } from "./assert.ts";
import { agentWithJob, createGatewayHarness } from "./_fake_agent.ts";

Deno.test("an earlier attempt's late lines and points are stored in its own run; its late RUNNING is still refused and killed", async () => {
  const h = await createGatewayHarness();
  try {
    const { agent, id, ref } = await agentWithJob(h);
    agent.jobState(ref, "RUNNING", { pid: 1 });
    agent.jobState(ref, "EXITED", { exit_code: 1 });
    await agent.until((a) => a.of("ack").length >= 4);
    assertEquals((await h.call("POST", `/api/jobs/${id}/retry`)).status, 200);
    await agent.until((a) => a.of("dispatch").length === 2);

    const seqLines = agent.data({
      type: "logs",
      ...ref,
      lines: [{ seq: 1, ts: "2026-01-01T00:00:00Z", stream: "stdout", text: "late line" }],
    });
    const seqPoints = agent.data({
      type: "metrics",
      ...ref,
      points: [{ key: "loss", step: 7, value: 0.5 }],
    });
    // Not this node's run of attempt 1: refused.
    const seqForeign = agent.data({
      type: "metrics",
      ...ref,
      run_id: "r-not-this-one",
      points: [{ key: "loss", step: 8, value: 1 }],
    });
    // Of a job that does not exist: refused (not a failure that closes the connection).
    const seqNoJob = agent.data({
      type: "sdk",
      ...ref,
      job_id: "j-none",
      batch: { points: [{ key: "loss", step: 9, value: 1 }] },
    });
    await agent.until((a) => a.of("ack").some((x) => x.seq === seqNoJob));
    assert(agent.of("error").some((e) => e.message.includes(`sdk frame data#${seqNoJob}:`)));
    await agent.until((a) => a.of("ack").some((x) => x.seq === seqForeign));
    for (const seq of [seqLines, seqPoints]) {
      assert(agent.of("ack").some((x) => x.stream === "data" && x.seq === seq));
    }
    const logs = (await h.call("GET", `/api/runs/${ref.run_id}/logs?after_seq=0`)).json;
    assertEquals(logs.lines.map((l: { text: string }) => l.text), ["late line"]);
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [ref.run_id], keys: ["loss"] },
    });
    assertEquals([q.json.series[0].steps, q.json.series[0].values], [[7], [0.5]]);
    assertEquals((await h.call("GET", `/api/runs/${ref.run_id}`)).json.status, "FAILED");
    assert(
      agent.of("error").some((e) => e.message.includes(`metrics frame data#${seqForeign}:`)),
      JSON.stringify(agent.of("error")),
    );

    // A late RUNNING of attempt 1 is still a stale copy: refused and killed.
    agent.jobState(ref, "RUNNING", { pid: 1 });
    await agent.until((a) => a.of("cancel").length === 1);
    assertEquals(agent.of("cancel")[0].attempt, 1);
    assertEquals((await h.call("GET", `/api/jobs/${id}`)).json.attempt, 2);
    await agent.close();
  } finally {
    await h.stop();
  }
});
