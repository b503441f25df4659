/**
 * Lineage on every face over one server: fork_run with each override kind and a checkpoint,
 * mark_run, add_note and get_lineage through REST, MCP (in-memory transport) and the CLI (in
 * process, routed to the same app); the run's code on REST, MCP and `gpuctl run show`; bad
 * input named by field and changing nothing.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness } from "./_harness.ts";
import { memoryClient } from "../mcp/_test_client.ts";
import { runInProcess } from "../cli/_test_server.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { dispatchJob, endAttempt, markRunning } from "../server/jobs/transitions.ts";
import { ingestBatch } from "../server/runs/service.ts";
import { toSpec } from "../server/scheduler/loop.ts";
import { buildJobEnv } from "../agent/job_env.ts";
import type { Provenance } from "../protocol/provenance.ts";

// deno-lint-ignore no-explicit-any -- tests read arbitrary JSON answers
type Any = any;

const CODE: Provenance = {
  kind: "git",
  working_dir: "/src/model",
  captured_at: "2026-03-01T09:00:00.000Z",
  problems: [],
  files: null,
  git: {
    root: "/src/model",
    subdir: "",
    commit: "0123456789abcdef0123456789abcdef01234567",
    branch: "main",
    remote_url: "https://github.example/lab/model.git",
    diff: "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n" +
      "-lr = 0.1\n+lr = 0.01\n",
    diff_bytes: 88,
    diff_sha256: "a".repeat(64),
    diff_omitted: null,
    untracked: ["notes.md"],
    untracked_count: 1,
  },
};

/** Starts a queued job as the scheduler and agent would; returns its run. */
function start(h: Harness, jobId: string): string {
  return h.ctx.db.tx(() => {
    const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, "gpu-1", [0]);
    markRunning(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, 42, h.ctx.now());
    return run_id;
  });
}

function finish(h: Harness, jobId: string, loss: number) {
  const job = jobsDb.getJob(h.ctx.db, jobId)!;
  ingestBatch(h.ctx, job.run_id!, { points: [{ key: "eval/loss", step: 10, value: loss }] });
  h.ctx.db.tx(() =>
    endAttempt(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, {
      outcome: "SUCCEEDED",
      failure_class: null,
      exit_code: 0,
      reason: "exited with code 0",
      at: h.ctx.now(),
    })
  );
}

/** A finished parent run with code, a checkpoint and eval/loss 0.5. */
async function parent(h: Harness) {
  const job = (await h.call("POST", "/api/jobs", {
    body: {
      name: "base",
      command: ["python3", "train.py", "--lr", "0.1", "--amp"],
      working_dir: "/src/model",
      gpus: 1,
      env: { SEED: "1", DEBUG: "1" },
      project: "nlp",
      experiment: "search",
    },
  })).json.id;
  const run = start(h, job);
  ingestBatch(h.ctx, run, {
    provenance: CODE,
    checkpoints: [{ path: "/ckpt/base/step-10.pt", step: 10 }],
  });
  finish(h, job, 0.5);
  const checkpoint = (await h.call("GET", `/api/runs/${run}/checkpoints`)).json.items[0].id;
  return { job, run, checkpoint };
}

Deno.test("fork over REST: args, env and config applied, parent recorded; from_checkpoint reaches the job as GPUCTL_RESUME_FROM", async () => {
  const h = await createHarness();
  try {
    const p = await parent(h);
    const res = await h.call("POST", `/api/runs/${p.run}/fork`, {
      token: h.tokens.write,
      body: {
        overrides: {
          args: { lr: 0.01, amp: null, warmup: 100 },
          env: { DEBUG: null, WANDB_MODE: "offline" },
          config: { depth: 12 },
        },
        from_checkpoint: p.checkpoint,
      },
    });
    assertEquals(res.status, 201, res.text);
    const child = res.json;
    assertEquals(child.command, ["python3", "train.py", "--lr", "0.01", "--warmup", "100"]);
    assertEquals(child.working_dir, "/src/model");
    assertEquals(child.env, { SEED: "1", WANDB_MODE: "offline", GPUCTL_PARAM_DEPTH: "12" });
    assertEquals(child.config, { lr: 0.01, warmup: 100, depth: 12 });
    assertEquals([child.parent_run, child.experiment], [p.run, "search"]);
    assertEquals(child.resume_from, { checkpoint_id: p.checkpoint, path: "/ckpt/base/step-10.pt" });
    assertEquals(child.node, "gpu-1", "a checkpoint's file is on its run's host");
    assertEquals(child.fork_overrides.args, { lr: 0.01, amp: null, warmup: 100 });
    assertStringIncludes(child.name, "lr=0.01");
    // The run records its parent and checkpoint; the agent's env gets the path.
    const run = start(h, child.id);
    const got = (await h.call("GET", `/api/runs/${run}`)).json;
    assertEquals([got.parent_run, got.resume_from, got.config.depth], [p.run, p.checkpoint, 12]);
    const spec = toSpec(jobsDb.getJob(h.ctx.db, child.id)!, run, [0]);
    const env = buildJobEnv(spec, {
      serverUrl: "http://s",
      ingestSocket: "/s",
      runsDir: "/r",
      sdkDir: null,
      pythonPath: null,
    });
    assertEquals(env.GPUCTL_RESUME_FROM, "/ckpt/base/step-10.pt");
    assertEquals(env.GPUCTL_RESUME_FROM_ID, p.checkpoint);
    assertEquals(env.GPUCTL_PARAM_DEPTH, "12");
  } finally {
    await h.close();
  }
});

Deno.test("fork and submit refuse bad input naming the field, and store nothing", async () => {
  const h = await createHarness();
  try {
    const p = await parent(h);
    const jobs = () => h.ctx.db.sqlite.prepare("SELECT COUNT(*) AS n FROM jobs").get()!.n;
    const before = jobs();
    const cases: [string, string, unknown, number, string][] = [
      [
        "POST",
        `/api/runs/${p.run}/fork`,
        { overrides: { env: { "bad name": "x" } } },
        400,
        "overrides.env",
      ],
      [
        "POST",
        `/api/runs/${p.run}/fork`,
        { overrides: { args: { lr: [1] } } },
        400,
        "overrides.args.lr",
      ],
      ["POST", `/api/runs/${p.run}/fork`, { from_checkpoint: "ck-none" }, 400, "resume_from"],
      ["POST", `/api/runs/${p.run}/fork`, { overrides: { color: 1 } }, 400, "overrides"],
      ["POST", "/api/runs/r-none/fork", {}, 404, "r-none"],
      [
        "POST",
        "/api/jobs",
        { name: "x", command: ["true"], working_dir: "/", gpus: 0, parent_run: "r-none" },
        400,
        "parent_run",
      ],
      ["POST", `/api/runs/${p.run}/mark`, { mark: "great", reason: "x" }, 400, "mark"],
      ["POST", `/api/runs/${p.run}/mark`, { mark: "kept", reason: "two\nlines" }, 400, "reason"],
      ["POST", "/api/notes", { text: "x" }, 400, "run_id"],
      ["POST", "/api/notes", { experiment: "nlp/none", text: "x" }, 404, "nlp/none"],
      ["GET", "/api/lineage?run_id=a&experiment=b/c", undefined, 400, "run_id"],
    ];
    for (const [method, path, body, status, names] of cases) {
      const res = await h.call(method, path, { body });
      assertEquals(res.status, status, `${path} ${JSON.stringify(body)}: ${res.text}`);
      assertStringIncludes(res.text, names, path);
    }
    assertEquals(jobs(), before);
    const run = (await h.call("GET", `/api/runs/${p.run}`)).json;
    assertEquals([run.mark, run.notes], [null, []]);
  } finally {
    await h.close();
  }
});

Deno.test("mark, note and lineage agree on REST, MCP and the CLI; get_run and run show carry the code", async () => {
  const h = await createHarness();
  try {
    const p = await parent(h);
    // REST: fork twice, mark one kept (better) and one discarded, note the experiment.
    const fork = async (lr: number) =>
      (await h.call("POST", `/api/runs/${p.run}/fork`, { body: { overrides: { args: { lr } } } }))
        .json;
    const a = await fork(0.01);
    const b = await fork(0.3);
    const runA = start(h, a.id);
    finish(h, a.id, 0.3);
    const runB = start(h, b.id);
    finish(h, b.id, 0.9);
    const marked = await h.call("POST", `/api/runs/${runA}/mark`, {
      token: h.tokens.write,
      body: { mark: "kept", reason: "eval/loss 0.3 beats parent 0.5" },
    });
    assertEquals([marked.status, marked.json.mark.mark], [200, "kept"]);
    assert(marked.json.mark.by !== "", "the mark names who made it");
    const note = await h.call("POST", "/api/notes", {
      body: { experiment: "nlp/search", text: "lower lr helps" },
    });
    assertEquals([note.status, note.json.run_id, note.json.experiment], [201, null, "search"]);

    // MCP: mark the other discarded, note a run, read the tree and the run.
    await using mcp = await memoryClient(h.ctx, h.tokens.write);
    const mcpCall = async (name: string, args: Record<string, unknown>): Promise<Any> => {
      const res: Any = await mcp.callTool({ name, arguments: args });
      assert(!res.isError, JSON.stringify(res.content));
      return res.structuredContent;
    };
    const d = await mcpCall("mark_run", { run_id: runB, mark: "discarded", reason: "diverged" });
    assertEquals(d.mark.mark, "discarded");
    await mcpCall("add_note", { run_id: runA, text: "try 0.005 next" });
    const tree = await mcpCall("get_lineage", { experiment: "nlp/search" });
    const rest = (await h.call("GET", "/api/lineage?experiment=nlp/search")).json;
    assertEquals(tree, rest);
    assertEquals([tree.runs, tree.kept, tree.discarded, tree.best_kept], [3, 1, 1, runA]);
    assertEquals(tree.roots.length, 1);
    const root = tree.roots[0];
    assertEquals(root.run_id, p.run);
    assertEquals(root.commit, CODE.git!.commit);
    assertEquals(root.children.map((c: Any) => [c.run_id, c.mark?.mark, c.primary_metric.best]), [
      [runA, "kept", 0.3],
      [runB, "discarded", 0.9],
    ]);
    assertEquals(root.children[0].fork_overrides, { args: { lr: 0.01 } });
    const fromChild = (await h.call("GET", `/api/lineage?run_id=${runB}`)).json;
    assertEquals(fromChild.roots[0].run_id, p.run, "a run's tree is walked up to its root");
    const forked = await mcpCall("fork_run", { run_id: runA, overrides: { config: { depth: 6 } } });
    assertEquals([forked.parent_run, forked.next_actions[0].tool], [runA, "wait_for_run"]);
    const mcpRun = await mcpCall("get_run", { run_id: p.run });
    assertEquals(mcpRun, (await h.call("GET", `/api/runs/${p.run}`)).json);
    assertEquals(mcpRun.code, CODE);
    assertEquals((await h.call("GET", `/api/runs/${runA}`)).json.notes.map((n: Any) => n.text), [
      "try 0.005 next",
    ]);

    // CLI, in process against the same app.
    const env = {
      GPUCTL_SERVER_URL: "http://gpuctl.test",
      GPUCTL_TOKEN: h.tokens.admin,
      NO_COLOR: "1",
    };
    const cli = (argv: string[]) =>
      runInProcess(argv, env, { fetch: (r, i) => h.app.fetch(new Request(r, i)) });
    const m = await cli(["run", "mark", runB, "kept", "second", "look"]);
    assertEquals([m.code, m.stdout], [0, `Run ${runB} marked kept: second look`]);
    const n = await cli(["run", "note", "nlp/search", "lr", "0.3", "is", "too", "high"]);
    assertEquals(n.code, 0, n.stderr);
    const l = await cli(["run", "lineage", runA]);
    assertEquals(l.code, 0, l.stderr);
    assertStringIncludes(l.stdout, "3 runs, 2 kept, 0 discarded");
    assertStringIncludes(l.stdout, `├─ ${runA}`);
    assertStringIncludes(l.stdout, "kept: eval/loss 0.3 beats parent 0.5");
    const lj = await cli(["run", "lineage", "nlp/search", "--json"]);
    assertEquals(
      JSON.parse(lj.stdout),
      (await h.call("GET", "/api/lineage?experiment=nlp/search")).json,
    );
    const f = await cli([
      "run",
      "fork",
      runA,
      "--arg",
      "lr=0.005",
      "--unset-arg",
      "amp",
      "--env",
      "X=1",
      "--config",
      "depth=3",
      "--from-checkpoint",
      p.checkpoint,
      "--json",
    ]);
    assertEquals(f.code, 0, f.stderr);
    const fj = JSON.parse(f.stdout);
    assertEquals([fj.parent_run, fj.env.X, fj.config.depth, fj.resume_from.checkpoint_id], [
      runA,
      "1",
      3,
      p.checkpoint,
    ]);
    const show = await cli(["run", "show", p.run]);
    assertEquals(show.code, 0, show.stderr);
    assertStringIncludes(show.stdout, `commit:    ${CODE.git!.commit} (main)`);
    assertStringIncludes(show.stdout, "untracked: 1: notes.md");
    assertStringIncludes(show.stdout, "1 files changed");
    const diff = await cli(["run", "code", p.run, "--diff"]);
    assertEquals(diff.stdout + "\n", CODE.git!.diff);
    const shownNotes = await cli(["run", "show", runA]);
    assertStringIncludes(shownNotes.stdout, "try 0.005 next");
  } finally {
    await h.close();
  }
});

Deno.test("compare_runs shows how each run's code differs from the first's, next to the config diff", async () => {
  const h = await createHarness();
  try {
    const p = await parent(h);
    const child = (await h.call("POST", `/api/runs/${p.run}/fork`, {
      body: { overrides: { args: { lr: 0.01 } } },
    })).json;
    const run = start(h, child.id);
    const diff = CODE.git!.diff!.replace("+lr = 0.01", "+lr = 0.02");
    ingestBatch(h.ctx, run, { provenance: { ...CODE, git: { ...CODE.git!, diff } } });
    const c = (await h.call("GET", `/api/runs/compare?runs=${p.run},${run}`)).json;
    assertEquals(c.config_diff.map((d: Any) => d.key), ["lr"]);
    assertEquals(c.code_diff.length, 1);
    assertEquals(c.code_diff[0].files.map((f: Any) => [f.path, f.change]), [[
      "train.py",
      "differs",
    ]]);
    assert(
      c.code_diff[0].files[0].diff.includes("-+lr = 0.01\n++lr = 0.02"),
      c.code_diff[0].files[0].diff,
    );
    assertStringIncludes(c.summary, `Code: ${run} differs from ${p.run} in train.py.`);
    const direct = (await h.call("GET", `/api/code/compare?runs=${p.run},${run}`)).json;
    assertEquals(direct, c.code_diff[0]);
    // A second snapshot of the same run (the job's own SDK, a replay) never replaces the first.
    ingestBatch(h.ctx, p.run, {
      provenance: {
        ...CODE,
        kind: "files",
        git: null,
        files: { sha256: "b".repeat(64), files: [] },
      },
    });
    assertEquals((await h.call("GET", `/api/runs/${p.run}/code`)).json.code, CODE);
  } finally {
    await h.close();
  }
});
