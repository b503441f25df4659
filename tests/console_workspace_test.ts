/**
 * The Experiment workspace and Compare pages without a browser: the workspace's panels and
 * its runs table best first with the best badge; the URL picking panels, runs, smoothing and
 * axis; the series of the drawn runs in the page; compare's differing config keys as
 * columns, best first, the metric from the URL; and the pages that say what is wrong (no
 * runs, one run, unknown runs, an unknown experiment).
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { consoleSession, type Harness, withHarness } from "./_harness.ts";
import { LRS, seedSweep } from "./console_workspace_seed.ts";

async function page(h: Harness, cookie: string, path: string) {
  const res = await h.app.fetch(
    new Request(`http://gpuctl.test${path}`, { headers: { cookie }, redirect: "manual" }),
  );
  return { status: res.status, html: await res.text() };
}

async function seeded(h: Harness, running = 1) {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await h.call(method, path, { body });
    assert(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    return res.json;
  };
  return { ...await seedSweep(call, running), cookie: await consoleSession(h, "read") };
}

/** The values of `data-<attr>="…"` in the page, in document order. */
const attrs = (html: string, attr: string) =>
  [...html.matchAll(new RegExp(`data-${attr}="([^"]*)"`, "g"))].map((m) => m[1]);

/** The runs of the table's rows, top to bottom (the panels' legends name runs too). */
const rowRuns = (html: string) =>
  [...html.matchAll(/<tr[^>]*data-run="([^"]*)"/g)].map((m) => m[1]);

/** The props an island was rendered with. */
function islandProps(html: string, name: string) {
  const m = html.match(new RegExp(`data-island="${name}" data-props="([^"]*)"`));
  assert(m, `no ${name} island`);
  const text = m[1].replaceAll("&quot;", '"').replaceAll("&lt;", "<").replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
  return JSON.parse(text);
}

/** The run rows whose checkbox is checked. */
function checkedRuns(html: string): string[] {
  return [...html.matchAll(/<tr[^>]*data-run="([^"]+)"[^>]*>(.*?)<\/tr>/gs)]
    .filter((m) => /<input[^>]*type="checkbox"[^>]*checked/.test(m[2]))
    .map((m) => m[1]);
}

Deno.test("the workspace draws the primary metric on top and lists the runs best first with a best badge", async () => {
  await withHarness(async (h) => {
    const s = await seeded(h);
    const { status, html } = await page(h, s.cookie, `/experiments/${s.experimentId}`);
    assertEquals(status, 200, html);
    assertStringIncludes(html, "lr-sweep");
    // Default panels: the primary (train/loss, on top), then the other key.
    assertEquals(attrs(html, "panel"), ["train/loss", "eval/accuracy"]);
    assert(/class="workspace-top" data-panel="train\/loss"/.test(html), "primary on top");
    assertEquals(rowRuns(html), s.ranked);
    const best = html.match(/<tr[^>]*data-run="([^"]+)"[^>]*>(?:(?!<\/tr>).)*class="badge best"/s);
    assertEquals(best?.[1], s.ranked[0]);
    assertEquals(s.ranked[0], s.runs[LRS.indexOf(0.03)]);
    // Five runs: all drawn by default; compare selected links them in ranking order.
    assertEquals(checkedRuns(html), s.ranked);
    assertStringIncludes(html, `href="/compare?runs=${s.ranked.join("%2C")}"`);
    assertStringIncludes(html, "compare selected →");
    // The page came with the series of every drawn run and panel; the running one is live.
    const props = islandProps(html, "Workspace");
    assertEquals(props.seriesKeys, ["train/loss", "eval/accuracy"]);
    assertEquals(props.series.length, 10);
    assert(props.series.every((x: { step_deltas: number[] }) => x.step_deltas.length > 0));
    // One point a pixel: about 1,200 px on top, 590 in the grid at 1280 px.
    assertEquals([props.topMaxPoints, props.maxPoints, props.density], [1250, 600, 1]);
    assertEquals(
      props.runs.filter((r: { live: boolean }) => r.live).map((r: { id: string }) => r.id),
      [s.runs[4]],
    );
  });
});

Deno.test("the workspace's URL picks its panels, runs, smoothing and x axis", async () => {
  await withHarness(async (h) => {
    const s = await seeded(h);
    const two = [s.runs[3], s.runs[0]];
    const q = new URLSearchParams({
      metrics: "eval/accuracy,nope",
      runs: [...two, "gone"].join(","),
      smooth: "0.6",
      x: "relative",
    });
    const { status, html } = await page(h, s.cookie, `/experiments/${s.experimentId}?${q}`);
    assertEquals(status, 200);
    assertEquals(attrs(html, "panel"), ["eval/accuracy"]);
    // The drawn runs in ranking order (lr 0.01 before 0.3); unknown ids and keys dropped.
    assertEquals(checkedRuns(html), [s.runs[3], s.runs[0]]);
    assertStringIncludes(html, 'data-smooth="0.6"');
    assert(/data-x="relative" aria-pressed="true"/.test(html), "relative axis pressed");
    assert(/data-x="step" aria-pressed="false"/.test(html), "step axis not pressed");
    const props = islandProps(html, "Workspace");
    assertEquals(props.view, {
      metrics: ["eval/accuracy"],
      runs: [s.runs[3], s.runs[0]],
      smooth: 0.6,
      x: "relative",
    });
    assertEquals(
      props.series.map((x: { run_id: string; key: string }) => [x.run_id, x.key]).sort(),
      [[s.runs[0], "eval/accuracy"], [s.runs[3], "eval/accuracy"]].sort(),
    );
    // A smoothing out of range takes the default.
    assertEquals(
      islandProps(
        (await page(h, s.cookie, `/experiments/${s.experimentId}?smooth=9`)).html,
        "Workspace",
      )
        .view.smooth,
      0,
    );
  });
});

Deno.test("an unknown experiment is a 404 that names it", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "read");
    const { status, html } = await page(h, cookie, "/experiments/e-nope");
    assertEquals(status, 404);
    assertStringIncludes(html, "e-nope");
    assertStringIncludes(html, "does not exist");
  });
});

Deno.test("compare shows the differing config keys as columns and ranks the best run first", async () => {
  await withHarness(async (h) => {
    const s = await seeded(h);
    const q = new URLSearchParams({ runs: s.runs.join(","), smooth: "0.5", x: "wall" });
    const { status, html } = await page(h, s.cookie, `/compare?${q}`);
    assertEquals(status, 200, html);
    // lr differs, batch_size does not.
    assertEquals(attrs(html, "config"), ["lr"]);
    assertEquals(rowRuns(html), s.ranked);
    const first = html.match(/<tr[^>]*data-run="([^"]+)"[^>]*class="best-row"/);
    assertEquals(first?.[1], s.ranked[0]);
    assertStringIncludes(html, "<code>0.03</code>");
    const props = islandProps(html, "Compare");
    assertEquals(props.comparison.metric, { key: "train/loss", direction: "min" });
    assertEquals(props.primary, "train/loss");
    assertEquals(props.keys, ["eval/accuracy", "train/loss"]);
    assertEquals([props.smooth, props.x], [0.5, "wall"]);
    assertStringIncludes(html, 'data-smooth="0.5"');
    assert(/data-x="wall" aria-pressed="true"/.test(html), "wall axis pressed");
    // Every run's series of the metric, in the page (one query).
    assertEquals(props.series.map((x: { run_id: string }) => x.run_id).sort(), [...s.runs].sort());
    assertStringIncludes(html, "★ train/loss");

    // The metric from the URL ranks the table: higher accuracy first.
    const acc = await page(h, s.cookie, `/compare?${q}&metric=eval/accuracy`);
    assertEquals(rowRuns(acc.html), s.ranked);
    assertEquals(islandProps(acc.html, "Compare").comparison.metric, {
      key: "eval/accuracy",
      direction: "max",
    });
    const subset = await page(h, s.cookie, `/compare?runs=${s.runs[0]},${s.runs[4]}`);
    assertEquals(rowRuns(subset.html), [s.runs[0], s.runs[4]]);
  });
});

Deno.test("compare says how to pick runs without any, and names the ids that do not exist", async () => {
  await withHarness(async (h) => {
    const s = await seeded(h);
    const none = await page(h, s.cookie, "/compare");
    assertEquals(none.status, 200);
    assertStringIncludes(none.html, "No runs to compare yet");
    assertStringIncludes(none.html, "compare selected →");
    assertStringIncludes(none.html, 'href="/experiments"');

    const one = await page(h, s.cookie, `/compare?runs=${s.runs[0]}`);
    assertEquals(one.status, 400);
    assertStringIncludes(one.html, "at least two");

    const unknown = await page(h, s.cookie, `/compare?runs=${s.runs[0]},r-ghost,r-nobody`);
    assertEquals(unknown.status, 404);
    assertEquals(
      [...unknown.html.matchAll(/class="unknown-run">([^<]+)</g)].map((m) => m[1]),
      ["r-ghost", "r-nobody"],
    );
    assert(!unknown.html.includes(`class="unknown-run">${s.runs[0]}`));
  });
});

Deno.test("an experiment without runs, or without metrics, says how to fill it", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "read");
    await h.call("POST", "/api/projects", { body: { name: "nlp" } });
    await h.call("POST", "/api/experiments", { body: { project: "nlp", name: "empty" } });
    const id = (await h.call("GET", "/api/experiments?project=nlp")).json.items[0].id;
    const empty = await page(h, cookie, `/experiments/${id}`);
    assertEquals(empty.status, 200);
    assertStringIncludes(empty.html, "No runs in this experiment yet");
    assertStringIncludes(empty.html, "gpuctl job submit --project nlp --experiment empty");

    const run = await h.call("POST", "/api/sdk/runs", {
      body: { project: "nlp", experiment: "empty" },
    });
    assertEquals(run.status, 201, run.text);
    const quiet = await page(h, cookie, `/experiments/${id}`);
    assertEquals(rowRuns(quiet.html), [run.json.id]);
    assertEquals(attrs(quiet.html, "panel"), []);
    assertStringIncludes(quiet.html, "No metrics yet");
  });
});
