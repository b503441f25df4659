/**
 * The console's provenance and lineage, rendered on the server: the run's Code tab (the
 * commit, each diff line classed, markup in a diff shown as text, no inline style), the
 * run's mark and notes with their forms (absent and refused for a read session), and the
 * experiment workspace's tree.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { consoleSession as sessionOf, type Harness, withHarness } from "./_harness.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { dispatchJob, markRunning } from "../server/jobs/transitions.ts";
import { ingestBatch } from "../server/runs/service.ts";
import type { Provenance } from "../protocol/provenance.ts";

const DIFF =
  "diff --git a/train.py b/train.py\nindex 1..2 100644\n--- a/train.py\n+++ b/train.py\n" +
  '@@ -1,2 +1,2 @@\n print("<script>alert(1)</script>")\n-lr = 0.1\n+lr = 0.01\n';

const CODE: Provenance = {
  kind: "git",
  working_dir: "/src/m",
  captured_at: "2026-03-01T09:00:00.000Z",
  problems: [],
  files: null,
  git: {
    root: "/src/m",
    subdir: "",
    commit: "89abcdef0123456789abcdef0123456789abcdef",
    branch: "exp/warmup",
    remote_url: "https://git.example/lab/m.git",
    diff: DIFF,
    diff_bytes: DIFF.length,
    diff_sha256: "c".repeat(64),
    diff_omitted: null,
    untracked: ["scratch.md"],
    untracked_count: 1,
  },
};

async function page(h: Harness, cookie: string, path: string): Promise<string> {
  const res = await h.app.fetch(
    new Request(`http://gpuctl.test${path}`, {
      headers: { cookie, "sec-fetch-site": "same-origin" },
    }),
  );
  assertEquals(res.status, 200, path);
  return await res.text();
}

function post(h: Harness, cookie: string, path: string, form: Record<string, string>) {
  return h.app.fetch(
    new Request(`http://gpuctl.test${path}`, {
      method: "POST",
      headers: { cookie, origin: "http://gpuctl.test" },
      body: new URLSearchParams(form),
      redirect: "manual",
    }),
  );
}

/** A parent run with code, and a fork of it started. */
async function seed(h: Harness) {
  const job = (await h.call("POST", "/api/jobs", {
    body: {
      name: "base",
      command: ["python3", "train.py", "--lr", "0.1"],
      working_dir: "/src/m",
      gpus: 1,
      project: "vision",
      experiment: "tree",
    },
  })).json.id;
  const start = (id: string) =>
    h.ctx.db.tx(() => {
      const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, id)!, "gpu-1", [0]);
      markRunning(h.ctx, jobsDb.getJob(h.ctx.db, id)!, 1, h.ctx.now());
      return run_id;
    });
  const parent = start(job);
  ingestBatch(h.ctx, parent, {
    provenance: CODE,
    points: [{ key: "eval/loss", step: 1, value: 0.5 }],
  });
  const child = (await h.call("POST", `/api/runs/${parent}/fork`, {
    body: { overrides: { args: { lr: 0.01 } } },
  })).json.id;
  const childRun = start(child);
  ingestBatch(h.ctx, childRun, { points: [{ key: "eval/loss", step: 1, value: 0.25 }] });
  return { parent, childRun };
}

Deno.test("the Code tab shows the commit and the diff, each line classed, markup as text, no inline style", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "admin");
    const { parent, childRun } = await seed(h);
    const doc = await page(h, cookie, `/runs/${parent}?tab=code`);
    assertStringIncludes(doc, `href="/runs/${parent}?tab=code" aria-current="page">Code`);
    assertStringIncludes(doc, `<code class="commit">${CODE.git!.commit}</code>`);
    assertStringIncludes(doc, `</code> <span class="muted">on exp/warmup</span>`);
    assertStringIncludes(doc, "https://git.example/lab/m.git");
    assertStringIncludes(doc, '<span class="diff-file">diff --git a/train.py b/train.py');
    assertStringIncludes(doc, '<span class="diff-hunk">@@ -1,2 +1,2 @@');
    assertStringIncludes(doc, '<span class="diff-del">-lr = 0.1');
    assertStringIncludes(doc, '<span class="diff-add">+lr = 0.01');
    assertStringIncludes(doc, "&lt;script>alert(1)&lt;/script>");
    assert(!doc.includes("<script>alert(1)"), "markup in a diff is text");
    assert(!/ style="/.test(doc), "no inline style (the CSP forbids it)");
    assertStringIncludes(doc, "<code>scratch.md</code>");
    assertStringIncludes(doc, `gpuctl run checkout ${parent} ./${parent}`);
    const none = await page(h, cookie, `/runs/${childRun}?tab=code`);
    assertStringIncludes(none, "No code was recorded for this run");
  });
});

Deno.test("a run's mark and notes: set from the run page's forms, shown there and in the experiment's tree", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "admin");
    const { parent, childRun } = await seed(h);
    const overview = await page(h, cookie, `/runs/${childRun}`);
    assertStringIncludes(overview, `child of <a href="/runs/${parent}">${parent}</a>`);
    assertStringIncludes(overview, `action="/runs/${childRun}/mark"`);
    const marked = await post(h, cookie, `/runs/${childRun}/mark`, {
      mark: "kept",
      reason: "loss halved",
      next: `/runs/${childRun}`,
    });
    assertEquals(marked.status, 303);
    const noted = await post(h, cookie, `/runs/${childRun}/note`, {
      text: "warmup <b>next</b>",
      next: `/runs/${childRun}`,
    });
    assertEquals(noted.status, 303);
    const bad = await post(h, cookie, `/runs/${childRun}/mark`, { mark: "maybe", reason: "x" });
    assertEquals(bad.status, 400);
    const after = await page(h, cookie, `/runs/${childRun}`);
    assertStringIncludes(after, '<span class="mark mark-kept" title="loss halved">kept</span>');
    assertStringIncludes(after, "warmup &lt;b>next&lt;/b>");

    const exp = (await h.call("GET", "/api/experiments")).json.items.find((e: { name: string }) =>
      e.name === "tree"
    );
    const ws = await page(h, cookie, `/experiments/${exp.id}`);
    assertStringIncludes(ws, "2 runs · 1 kept · 0 discarded");
    assertStringIncludes(ws, `best kept <a href="/runs/${childRun}">${childRun}</a>`);
    // The child is nested under its parent, with what its fork changed.
    const parentAt = ws.indexOf(`data-tree-run="${parent}"`);
    const childAt = ws.indexOf(`data-tree-run="${childRun}"`);
    assert(parentAt > 0 && childAt > parentAt, "the child is under its parent");
    assert(ws.slice(parentAt, childAt).includes("<ul>"), "in a nested list");
    assertStringIncludes(ws.slice(childAt), '<code class="small">lr=0.01</code>');
    assertStringIncludes(ws, "warmup &lt;b>next&lt;/b>");

    // A read session sees no forms, and its posts are refused and change nothing.
    const reader = await sessionOf(h, "read");
    assert(!(await page(h, reader, `/runs/${childRun}`)).includes('/mark"'), "no mark form");
    const refused = await post(h, reader, `/runs/${childRun}/mark`, {
      mark: "discarded",
      reason: "x",
    });
    assertEquals(refused.status, 403);
    assertEquals((await h.call("GET", `/api/runs/${childRun}`)).json.mark.mark, "kept");
  });
});
