import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { withHarness } from "./_harness.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { toSpec } from "../server/scheduler/loop.ts";
import { dispatchJob } from "../server/jobs/transitions.ts";
import { ingestBatch } from "../server/runs/service.ts";

const submission = {
  name: "resnet",
  command: ["python", "train.py", "--lr", "0.1"],
  working_dir: "/srv/exp",
  gpus: 2,
  project: "vision",
  experiment: "lr-sweep",
  env: { WANDB_MODE: "offline" },
  priority: 5,
};

Deno.test("a posted job is stored QUEUED, listed, and raises JOB_QUEUED", async () => {
  await withHarness(async (h) => {
    const res = await h.call("POST", "/api/jobs", { body: submission });
    assertEquals(res.status, 201);
    const job = res.json;
    assert(/^j-[0-9a-z]{10}$/.test(job.id), job.id);
    assertEquals(
      [job.status, job.attempt, job.kind, job.max_attempts, job.shell, job.runner],
      ["QUEUED", 1, "TRAIN", 3, false, "process"],
    );
    assertEquals(job.command, submission.command);
    assertEquals(job.env, submission.env);

    const list = await h.call("GET", "/api/jobs?status=QUEUED", { token: h.tokens.read });
    assertEquals(list.json.items.map((j: { id: string }) => j.id), [job.id]);
    assertEquals(list.json.next_cursor, null);
    assertEquals((await h.call("GET", `/api/jobs/${job.id}`)).json.name, "resnet");

    const events = await h.call("GET", `/api/events?job_id=${job.id}`);
    assertEquals(events.json.items.map((e: { type: string }) => e.type), ["JOB_QUEUED"]);

    // Project and experiment were created on first use.
    const projects = await h.call("GET", "/api/projects");
    assertEquals(projects.json.items.map((p: { name: string }) => p.name), ["vision"]);
    const exps = await h.call("GET", "/api/experiments?project=vision");
    assertEquals(exps.json.items.map((e: { name: string }) => e.name), ["lr-sweep"]);
  });
});

Deno.test("a shell string job runs through the shell and keeps its string", async () => {
  await withHarness(async (h) => {
    const res = await h.call("POST", "/api/jobs", {
      body: { name: "sh", command: "python train.py | tee out.log", working_dir: "/w", gpus: 0 },
    });
    assertEquals(res.status, 201);
    assertEquals([res.json.shell, res.json.command], [true, "python train.py | tee out.log"]);
    assertEquals(res.json.project, "default");
  });
});

Deno.test("job lists page newest first with a cursor", async () => {
  await withHarness(async (h) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await h.call("POST", "/api/jobs", { body: { ...submission, name: `j${i}` } })).json.id,
      );
    }
    const first = await h.call("GET", "/api/jobs?limit=2");
    assertEquals(first.json.items.map((j: { id: string }) => j.id), [ids[4], ids[3]]);
    const second = await h.call("GET", `/api/jobs?limit=2&cursor=${first.json.next_cursor}`);
    assertEquals(second.json.items.map((j: { id: string }) => j.id), [ids[2], ids[1]]);
    const third = await h.call("GET", `/api/jobs?limit=2&cursor=${second.json.next_cursor}`);
    assertEquals(third.json.items.map((j: { id: string }) => j.id), [ids[0]]);
    assertEquals(third.json.next_cursor, null);
  });
});

Deno.test("cancel ends a queued job CANCELLED; cancelling again is a 409", async () => {
  await withHarness(async (h) => {
    const job = (await h.call("POST", "/api/jobs", { body: submission })).json;
    const res = await h.call("POST", `/api/jobs/${job.id}/cancel`, { token: h.tokens.write });
    assertEquals(res.status, 200);
    assertEquals([res.json.status, res.json.failure_class], ["CANCELLED", "CANCELLED"]);
    const again = await h.call("POST", `/api/jobs/${job.id}/cancel`);
    assertEquals(again.status, 409);
    assertEquals(again.json.error.code, "Conflict");
    assertStringIncludes(again.json.error.message, "already ended CANCELLED");
  });
});

Deno.test("retry requeues an ended job as the next attempt; a queued one cannot be retried", async () => {
  await withHarness(async (h) => {
    const job = (await h.call("POST", "/api/jobs", { body: submission })).json;
    const early = await h.call("POST", `/api/jobs/${job.id}/retry`);
    assertEquals(early.status, 409);
    await h.call("POST", `/api/jobs/${job.id}/cancel`);
    const res = await h.call("POST", `/api/jobs/${job.id}/retry`);
    assertEquals([res.status, res.json.status, res.json.attempt], [200, "QUEUED", 2]);
    const types = (await h.call("GET", `/api/events?job_id=${job.id}`)).json.items.map((
      e: { type: string },
    ) => e.type);
    assertEquals(types, ["JOB_RETRIED", "RUN_CANCELLED", "JOB_QUEUED"]);
  });
});

Deno.test("a job may run after existing jobs only; an unknown dependency is refused", async () => {
  await withHarness(async (h) => {
    const first = (await h.call("POST", "/api/jobs", { body: submission })).json;
    const ok = await h.call("POST", "/api/jobs", {
      body: { ...submission, name: "eval", after: [first.id] },
    });
    assertEquals([ok.status, ok.json.after], [201, [first.id]]);
    const bad = await h.call("POST", "/api/jobs", {
      body: { ...submission, name: "eval", after: ["j-doesnotexist"] },
    });
    assertEquals(bad.status, 400);
    assertStringIncludes(bad.json.error.message, 'after: job "j-doesnotexist" does not exist');
  });
});

Deno.test("unknown job ids are 404s that name the id", async () => {
  await withHarness(async (h) => {
    for (
      const [method, path] of [
        ["GET", "/api/jobs/j-nope"],
        ["POST", "/api/jobs/j-nope/cancel"],
        ["POST", "/api/jobs/j-nope/retry"],
      ]
    ) {
      const res = await h.call(method, path);
      assertEquals(res.status, 404, path);
      assertEquals(res.json.error.message, 'Job "j-nope" does not exist');
    }
  });
});

Deno.test("secret env values are masked for every token, in lists, events and logs, and reach the job's dispatch", async () => {
  await withHarness(async (h) => {
    const secrets = ["hf_abcdef123456", "sk-wandb-987", "postgres://u:pw@db/x", "hunter2"];
    const res = await h.call("POST", "/api/jobs", {
      token: h.tokens.write,
      body: {
        ...submission,
        env: {
          HF_TOKEN: secrets[0],
          WANDB_API_KEY: secrets[1],
          DATABASE_URL: secrets[2],
          DB_PASSWORD: secrets[3],
          WANDB_MODE: "offline",
        },
        secret_env: ["DATABASE_URL"],
      },
    });
    assertEquals(res.status, 201, res.text);
    const masked = {
      HF_TOKEN: "••••••",
      WANDB_API_KEY: "••••••",
      DATABASE_URL: "••••••",
      DB_PASSWORD: "••••••",
      WANDB_MODE: "offline",
    };
    assertEquals([res.json.env, res.json.secret_env], [masked, ["DATABASE_URL"]]);
    const id = res.json.id;
    const answers = [res.text];
    for (const token of [h.tokens.read, h.tokens.write, h.tokens.admin]) {
      const one = await h.call("GET", `/api/jobs/${id}`, { token });
      const list = await h.call("GET", "/api/jobs", { token });
      assertEquals([one.json.env, list.json.items[0].env], [masked, masked]);
      answers.push(one.text, list.text, (await h.call("GET", "/api/events", { token })).text);
    }
    answers.push((await h.call("POST", `/api/jobs/${id}/cancel`, { token: h.tokens.write })).text);
    answers.push(...(h.ctx.log as unknown as { lines: string[] }).lines);
    for (const secret of secrets) {
      assert(!answers.some((text) => text.includes(secret)), `"${secret}" was shown`);
    }
    // The job's process still gets the real values.
    const spec = toSpec(jobsDb.getJob(h.ctx.db, id)!, "r-1", []);
    assertEquals([spec.env.HF_TOKEN, spec.env.DATABASE_URL], [secrets[0], secrets[2]]);
  });
});

Deno.test("secret_env names are checked like env names", async () => {
  await withHarness(async (h) => {
    const res = await h.call("POST", "/api/jobs", {
      body: { ...submission, secret_env: ["not-a-name"] },
    });
    assertEquals(res.status, 400);
    assertStringIncludes(res.text, "secret_env");
  });
});

Deno.test("a job that prints a secret variable gets it masked in its stored log", async () => {
  await withHarness(async (h) => {
    const job = (await h.call("POST", "/api/jobs", {
      body: {
        ...submission,
        env: { HF_TOKEN: "hf_abcdef123456", DB: "db-pw-1" },
        secret_env: ["DB"],
      },
    })).json;
    const runId = h.ctx.db.tx(() =>
      dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, job.id)!, "gpu-1", [0]).run_id
    );
    ingestBatch(h.ctx, runId, {
      logs: [{ text: "HF_TOKEN=hf_abcdef123456 DB=db-pw-1" }, { text: "step 1" }],
    });
    const logs = await h.call("GET", `/api/runs/${runId}/logs`, { token: h.tokens.read });
    assertEquals(logs.json.lines.map((l: { text: string }) => l.text), [
      "HF_TOKEN=•••••• DB=••••••",
      "step 1",
    ]);
  });
});
