/**
 * Real failure logs replayed as jobs (tests/fixtures/failure_logs, their sources in its
 * README): each job prints its log to the streams the original wrote to and dies the way the
 * original did, through `deno task server`, `deno task agent` and the process runner. For
 * each: the failure card's cause, evidence line and retry advice, and whether the scheduler
 * requeued it, with the job's reason quoting the card.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { startCluster, until } from "./_processes.ts";
import { FIXTURES, loadFixtures, misses } from "./failure_logs_score.ts";

Deno.test("real failure logs replayed through the process runner: the card names the cause, and the scheduler retries exactly the transient ones", async () => {
  const fixtures = await loadFixtures();
  const c = await startCluster({ fakeGpus: 8, prefix: "gpuctl-failure-logs-" });
  try {
    const replay = new URL("replay.py", FIXTURES).pathname;
    const jobs = [];
    for (const f of fixtures) {
      const spec = JSON.stringify({ die: f.die, stdout_lines: f.stdout_lines });
      const res = await c.call("POST", "/api/jobs", {
        name: f.file.replace(/\.log$/, ""),
        command: ["python3", replay, new URL(f.file, FIXTURES).pathname, spec],
        working_dir: c.home,
        gpus: 1,
        max_attempts: 2,
      });
      assertEquals(res.status, 201, res.text);
      jobs.push({ f, id: res.json.id as string });
    }
    const wrong: string[] = [];
    for (const { f, id } of jobs) {
      // A requeued job fails again at attempt 2, its last (max_attempts: 2).
      const attempts = f.expect.requeue ? 2 : 1;
      const job = await until(
        async () => {
          const j = (await c.call("GET", `/api/jobs/${id}`)).json;
          return j.status === "FAILED" && j.attempt === attempts ? j : null;
        },
        // Generous: 41 jobs share 8 fake GPUs, and a loaded machine runs them slowly.
        240_000,
        `${f.file}: job FAILED at attempt ${attempts}`,
      );
      const runs = (await c.call("GET", `/api/runs?job_id=${id}`)).json.items;
      const first = runs.find((r: { attempt: number }) => r.attempt === 1);
      const card = (await c.call("GET", `/api/runs/${first.id}/failure`)).json;
      const retried = (await c.call("GET", `/api/events?job_id=${id}&type=JOB_RETRIED`)).json
        .items;
      const found = misses(f.expect, card, retried.length > 0, card.suggested_fixes);
      if (card.retry !== f.expect.retry) {
        found.push(`retry ${card.retry}, expected ${f.expect.retry}`);
      }
      if (found.length) wrong.push(`${f.file}: ${found.join("; ")}`);
      // The job's reason (or the requeue's) quotes the card's retry advice.
      if (f.expect.requeue) {
        assertEquals(retried.length, 1, f.file);
        assertStringIncludes(retried[0].message, card.retry_advice);
      } else {
        assertStringIncludes(job.reason, card.retry_advice);
      }
      if (f.stdout_lines.length > 0) {
        const logs = (await c.call("GET", `/api/runs/${first.id}/logs?after_seq=0&limit=2000`))
          .json.lines as { stream: string }[];
        assert(logs.some((l) => l.stream === "stdout"), `${f.file}: stdout lines kept apart`);
        assert(logs.some((l) => l.stream === "stderr"), `${f.file}: stderr lines kept apart`);
      }
    }
    assertEquals(wrong, [], `${wrong.length} of ${fixtures.length} fixtures wrong`);
  } finally {
    await c.stop();
  }
});
