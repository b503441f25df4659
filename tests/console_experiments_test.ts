/**
 * The Experiments page without a browser: one row per experiment with its runs by status and
 * best primary value, project chips and the search kept in the URL, the empty states, the
 * create forms (a redirect on success; a refusal that keeps what was typed and names the
 * field; nothing for a read session), and metric definitions set at each level with the
 * resolution for a chosen experiment.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { consoleSession, type Harness, withHarness } from "./_harness.ts";

function page(h: Harness, cookie: string, path: string, form?: Record<string, string>) {
  return h.app.fetch(
    new Request(`http://gpuctl.test${path}`, {
      method: form ? "POST" : "GET",
      headers: { cookie, origin: "http://gpuctl.test" },
      body: form ? new URLSearchParams(form) : undefined,
      redirect: "manual",
    }),
  );
}

async function html(h: Harness, cookie: string, path: string): Promise<string> {
  const res = await page(h, cookie, path);
  assertEquals(res.status, 200, path);
  return await res.text();
}

/** The ids of the experiment rows the list shows, in order. */
function rowIds(doc: string): string[] {
  const table = doc.match(/<table class="exp-table">[\s\S]*?<\/table>/)?.[0] ?? "";
  return [...table.matchAll(/<tr id="([^"]+)"/g)].map((m) => m[1]);
}

/** One row's cells as text. */
function rowText(doc: string, id: string): string {
  const row = doc.match(new RegExp(`<tr id="${id}">([\\s\\S]*?)</tr>`))?.[1] ?? "";
  return row.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
}

async function ok(h: Harness, method: string, path: string, body: unknown) {
  const res = await h.call(method, path, { body });
  assert(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
  return res.json;
}

/** vision/sweep (a succeeded and a failed run), vision/base (none), nlp/bert (one running). */
async function seed(h: Harness) {
  const run = async (project: string, experiment: string, loss: number[], status?: string) => {
    const { id } = await ok(h, "POST", "/api/sdk/runs", { project, experiment });
    await ok(h, "POST", `/api/sdk/runs/${id}/log`, {
      points: loss.map((value, step) => ({ key: "eval/loss", step, value })),
      ...(status ? { status } : {}),
    });
    return id as string;
  };
  const best = await run("vision", "sweep", [0.9, 0.42, 0.5], "SUCCEEDED");
  await run("vision", "sweep", [1.2, 0.8], "FAILED");
  await ok(h, "POST", "/api/experiments", { project: "vision", name: "base" });
  await run("nlp", "bert", [2.0]);
  const ids: Record<string, string> = {};
  for (const e of (await h.call("GET", "/api/experiments")).json.items) ids[e.name] = e.id;
  return { best, ids };
}

Deno.test("the list has a row per experiment with its runs by status, best value and workspace link", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "read");
    const { best, ids } = await seed(h);
    const doc = await html(h, cookie, "/experiments");
    assertEquals(new Set(rowIds(doc)), new Set([ids.sweep, ids.base, ids.bert]));
    assertStringIncludes(doc, `href="/experiments/${ids.sweep}"`);
    // Experiment, project, running, succeeded, failed, runs, best, key, last activity.
    assertEquals(rowText(doc, ids.sweep).split(" ").slice(0, 9), [
      "sweep",
      "vision",
      "0",
      "1",
      "1",
      "2",
      "0.42",
      "eval/loss",
      "↓",
    ]);
    assertStringIncludes(doc, `href="/runs/${best}"`);
    assertEquals(rowText(doc, ids.bert).split(" ").slice(0, 6), [
      "bert",
      "nlp",
      "1",
      "0",
      "0",
      "1",
    ]);
    assert(/<time datetime="[^"]+" title="[^"]+">/.test(doc), "relative time, absolute on hover");
    assertStringIncludes(doc, "data-search");
  });
});

Deno.test("project chips and the search live in the URL and narrow the list", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "read");
    const { ids } = await seed(h);
    const all = await html(h, cookie, "/experiments");
    assertStringIncludes(all, 'href="/experiments?project=vision"');
    assertStringIncludes(all, 'href="/experiments?project=nlp"');

    const vision = await html(h, cookie, "/experiments?project=vision");
    assertEquals(new Set(rowIds(vision)), new Set([ids.sweep, ids.base]));
    assert(
      /href="\/experiments\?project=vision" aria-current="true"/.test(vision),
      "the chosen chip is marked",
    );
    // The search form keeps the chip; the chips keep the search.
    assertStringIncludes(vision, '<input type="hidden" name="project" value="vision"/>');
    const both = await html(h, cookie, "/experiments?project=vision&q=SWE");
    assertEquals(rowIds(both), [ids.sweep]);
    assertStringIncludes(both, 'href="/experiments?project=nlp&amp;q=SWE"');
    assertStringIncludes(both, 'name="q" value="SWE"');
    // The search matches a project's name too.
    assertEquals(rowIds(await html(h, cookie, "/experiments?q=nl")), [ids.bert]);

    const none = await html(h, cookie, "/experiments?q=zzz");
    assertEquals(rowIds(none), []);
    assertStringIncludes(none, "No experiment has “zzz” in its name");
    const unknown = await html(h, cookie, "/experiments?project=nope");
    assertStringIncludes(unknown, "There is no project named <code>nope</code>");
  });
});

Deno.test("empty states say what creates a project and an experiment", async () => {
  await withHarness(async (h) => {
    const read = await consoleSession(h, "read");
    const empty = await html(h, read, "/experiments");
    assertStringIncludes(empty, "No projects yet.");
    assertStringIncludes(empty, "gpuctl job submit --project vision --experiment baseline");
    assertStringIncludes(empty, "run.init(project=&quot;vision&quot;");
    assert(!empty.includes("the form above"), "a read session is not sent to a form");
    const admin = await consoleSession(h, "admin");
    assertStringIncludes(await html(h, admin, "/experiments"), "the form above");
    await ok(h, "POST", "/api/projects", { name: "vision" });
    const noExperiments = await html(h, read, "/experiments?project=vision");
    assertStringIncludes(noExperiments, "Project vision has no experiments yet.");
    assert(!noExperiments.includes("belong to no experiment"), "no runs, no pointer to them");
    await ok(h, "POST", "/api/sdk/runs", { project: "vision" });
    const loose = await html(h, read, "/experiments?project=vision");
    assertStringIncludes(loose, "Its one run so far belongs to no experiment");
    assertStringIncludes(loose, 'href="/runs?project=vision"');
  });
});

Deno.test("a write session creates a project and an experiment in place and is sent back", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "admin");
    const doc = await html(h, cookie, "/experiments");
    assertStringIncludes(doc, 'action="/experiments/new-project"');
    assertStringIncludes(doc, 'action="/experiments/new"');

    const made = await page(h, cookie, "/experiments/new-project", {
      name: " vision ",
      description: "image models",
      view: "q=vis&create=1",
    });
    assertEquals(made.status, 303);
    const location = made.headers.get("location")!;
    assert(location.startsWith("/experiments?q=vis&notice="), location);
    assertEquals(
      new URL(location, "http://x").searchParams.get("notice"),
      'Project "vision" created',
    );
    const projects = (await h.call("GET", "/api/projects")).json.items;
    assertEquals(
      projects.map((p: { name: string; description: string }) => [p.name, p.description]),
      [[
        "vision",
        "image models",
      ]],
    );

    const exp = await page(h, cookie, "/experiments/new", { project: "vision", name: "lr-sweep" });
    assertEquals(exp.status, 303);
    const listed = (await h.call("GET", "/api/experiments")).json.items;
    assertEquals(listed.map((e: { project: string; name: string }) => `${e.project}/${e.name}`), [
      "vision/lr-sweep",
    ]);
    // The notice is shown on the page the redirect lands on.
    const after = await html(h, cookie, exp.headers.get("location")!);
    assertStringIncludes(after, "Experiment &quot;lr-sweep&quot; created in vision");
    assertEquals(rowIds(after), [listed[0].id]);
  });
});

Deno.test("a refused create form keeps what was typed and names the field", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "admin");
    const empty = await page(h, cookie, "/experiments/new-project", {
      name: "  ",
      description: "kept <b>as typed</b>",
    });
    assertEquals(empty.status, 400);
    const doc = await empty.text();
    assertStringIncludes(doc, 'id="p-name-error"');
    assertStringIncludes(doc, "Name must not be empty");
    assertStringIncludes(doc, 'value="kept &lt;b>as typed&lt;/b>"');
    assert(/<details[^>]*id="create"[^>]*open/.test(doc), "the form's drawer stays open");

    await ok(h, "POST", "/api/projects", { name: "vision", description: "first" });
    const taken = await (await page(h, cookie, "/experiments/new-project", {
      name: "vision",
      description: "second",
    })).text();
    assertStringIncludes(taken, "Name a project named &quot;vision&quot; already exists");
    assertEquals((await h.call("GET", "/api/projects")).json.items[0].description, "first");

    const orphan = await page(h, cookie, "/experiments/new", { project: "nope", name: "x" });
    assertEquals(orphan.status, 400);
    const orphanDoc = await orphan.text();
    assertStringIncludes(orphanDoc, 'id="x-project-error"');
    assertStringIncludes(orphanDoc, "Project project &quot;nope&quot; does not exist");
    assertStringIncludes(orphanDoc, 'id="x-name" name="name" value="x"');
    const long = await (await page(h, cookie, "/experiments/new", {
      project: "vision",
      name: "n".repeat(300),
    })).text();
    assertStringIncludes(long, 'id="x-name-error"');
    assertEquals((await h.call("GET", "/api/experiments")).json.items, []);
  });
});

Deno.test("a read session sees no create or definition controls and its posts are refused", async () => {
  await withHarness(async (h) => {
    await seed(h);
    await ok(h, "PUT", "/api/metric-definitions", {
      definitions: [{ scope: "global", key: "eval/acc", direction: "max", primary: true }],
    });
    const cookie = await consoleSession(h, "read");
    const doc = await html(h, cookie, "/experiments?metrics=1");
    for (const control of ["new-project", 'action="/experiments/new"', "metric-definitions"]) {
      assert(!doc.includes(control), `no ${control} for a read session`);
    }
    assert(!doc.includes("Make primary") && !doc.includes("Save definition"));
    // It still sees the definitions and how they resolve.
    assertStringIncludes(doc, '<table class="exp-defs">');
    assertStringIncludes(doc, "eval/acc");
    const before = (await h.call("GET", "/api/projects")).json.items.length;
    for (
      const [path, form] of [
        ["/experiments/new-project", { name: "sneaky" }],
        ["/experiments/new", { project: "vision", name: "sneaky" }],
        ["/experiments/metric-definitions", { scope: "global", key: "k", direction: "min" }],
      ] as const
    ) {
      const res = await page(h, cookie, path, form);
      assertEquals(res.status, 403, path);
      assertStringIncludes(await res.text(), "needs a token of scope &quot;write&quot;");
    }
    assertEquals((await h.call("GET", "/api/projects")).json.items.length, before);
    assertEquals((await h.call("GET", "/api/metric-definitions")).json.items.length, 1);
  });
});

Deno.test("metric definitions set at each level show where each key of an experiment resolves from", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "admin");
    const { ids } = await seed(h);
    const set = async (form: Record<string, string>) => {
      const res = await page(h, cookie, "/experiments/metric-definitions", {
        view: "project=vision",
        ...form,
      });
      assertEquals(res.status, 303, await res.text());
      return res.headers.get("location")!;
    };
    const at = await set({ scope: "global", key: "eval/acc", direction: "max", primary: "1" });
    assert(at.startsWith("/experiments?project=vision&metrics=1&notice="), at);
    assert(at.endsWith("#metrics"), at);
    await set({ scope: "project:vision", key: "score", direction: "max" });
    await set({ scope: "experiment:vision/sweep", key: "score", direction: "min", primary: "1" });
    const defs = (await h.call("GET", "/api/metric-definitions")).json.items;
    assertEquals(
      defs.map((
        d: { scope: string; scope_id: string; key: string; direction: string; primary: boolean },
      ) => `${d.scope}:${d.scope_id}:${d.key}:${d.direction}:${d.primary}`).sort(),
      [
        "experiment:vision/sweep:score:min:true",
        "global::eval/acc:max:true",
        "project:vision:score:max:false",
      ],
    );

    const sweep = await html(h, cookie, `/experiments?resolve=${ids.sweep}`);
    assert(/<details[^>]*id="metrics"[^>]*open/.test(sweep), "the drawer is open");
    const resolution = sweep.slice(sweep.indexOf('aria-label="Resolution"'));
    const row = (key: string) =>
      (resolution.match(new RegExp(`<tr data-key="${key}">([\\s\\S]*?)</tr>`))?.[1] ?? "")
        .replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
    assertEquals(row("score"), "score primary ↓ lower experiment vision / sweep project: ↑ higher");
    assertEquals(row("eval/acc"), "eval/acc ↑ higher global –");
    assertEquals(row("eval/loss"), "eval/loss ↓ lower its name –");
    assertStringIncludes(resolution, "from experiment vision / sweep");
    // The list's best value follows the experiment's new primary metric (no runs have it).
    assertEquals(rowText(sweep, ids.sweep).split(" ").slice(6, 8), ["–", "score"]);

    const base = await html(h, cookie, `/experiments?resolve=${ids.base}`);
    const baseRes = base.slice(base.indexOf('aria-label="Resolution"'));
    assertStringIncludes(baseRes, "from global");
    assert(/<tr data-key="score">[\s\S]*?project vision[\s\S]*?<\/tr>/.test(baseRes), baseRes);
    // Making the project's score primary moves base's primary to the project level.
    await set({ scope: "project:vision", key: "score", direction: "max", primary: "1" });
    const moved = await html(h, cookie, `/experiments?resolve=${ids.base}`);
    assertStringIncludes(
      moved.slice(moved.indexOf('aria-label="Resolution"')),
      "from project vision",
    );
    assertEquals((await page(h, cookie, "/experiments?resolve=e-none")).status, 404);
  });
});

Deno.test("a refused definition keeps what was typed and names the field", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "admin");
    await seed(h);
    const missing = await page(h, cookie, "/experiments/metric-definitions", {
      scope: "project:nope",
      key: "eval/acc",
      direction: "max",
      primary: "1",
    });
    assertEquals(missing.status, 400);
    const doc = await missing.text();
    assertStringIncludes(doc, 'id="d-scope-error"');
    assertStringIncludes(doc, "Applies to project &quot;nope&quot; does not exist");
    assertStringIncludes(doc, 'id="d-key" name="key" value="eval/acc"');
    assertStringIncludes(doc, '<option value="max" selected>');
    assert(/<details[^>]*id="metrics"[^>]*open/.test(doc), "the drawer stays open");
    const noKey = await (await page(h, cookie, "/experiments/metric-definitions", {
      scope: "global",
      key: "",
      direction: "min",
    })).text();
    assertStringIncludes(noKey, "Key must not be empty");
    assertEquals((await h.call("GET", "/api/metric-definitions")).json.items, []);
  });
});
