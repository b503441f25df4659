/**
 * The chart panel in Chromium against a real server: drag-zoom reads the zoomed range again
 * at full detail and double-click restores the view; the legend hides, isolates and shows
 * runs; the smoothing slider changes the drawn values; a running run's curve grows while the
 * page is open; a 1,000,000-point run transfers at most `max_points` points per series. The
 * chart is read back from its chart.js instance (`Chart.getChart(canvas)`), as drawn.
 * Screenshots: chart-panel, chart-panel-dark (test-artifacts/console/).
 *
 * Run detail draws one run per panel; the panels with several runs are the same island,
 * hydrated from a page of this origin that the test renders (as the Experiments workspace
 * and Compare render it).
 */
import type { Page, Request, Route } from "playwright-core";
import { assert, assertEquals } from "./assert.ts";
import { type ConsoleRig, screenshot, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";
import { h, type VNode } from "preact";
import { Island } from "../components/island.tsx";
import ChartPanel from "../islands/ChartPanel.tsx";
import type { ChartPanelProps } from "../islands/chart/panel_types.ts";
import { fmtMetric, runColor } from "../islands/_format.ts";
import { renderPage } from "../server/console/page.tsx";
import { currentIslands, loadConsoleAssets } from "../server/console/assets.ts";

const KEY = "train/loss";
const T0 = 1_780_000_000;
/** What the SDK sends at most in one batch (SDK_BATCH_LIMITS.points). */
const BATCH = 100_000;

/** A decaying, wiggly loss with a spike at `spikeAt` and a NaN at `nanAt`. */
function loss(step: number, n: number, phase: number, spikeAt: number, nanAt: number) {
  if (step === nanAt) return "NaN";
  if (step === spikeAt) return 25;
  const v = 2 * Math.exp(-3 * (1 + phase / 2) * step / n) + 0.1 * Math.sin(step * 0.37 + phase) +
    0.05 * Math.sin(step * 0.0113 * (phase + 1));
  return Math.round(v * 1e5) / 1e5;
}

/** An SDK run with `n` points of KEY, one a second, sent in the SDK's largest batches. */
async function seedRun(
  rig: ConsoleRig,
  name: string,
  n: number,
  o: { phase?: number; finish?: boolean } = {},
): Promise<string> {
  const reg = await rig.call("POST", "/api/sdk/runs", { project: "charts", name });
  assert(reg.status < 300, reg.text);
  const id = reg.json.id as string;
  const phase = o.phase ?? 0;
  for (let from = 0; from < n; from += BATCH) {
    const points = [];
    for (let s = from; s < Math.min(n, from + BATCH); s++) {
      points.push({
        key: KEY,
        step: s,
        value: loss(s, n, phase, Math.floor(n * (0.37 + phase / 10)), Math.floor(n * 0.6)),
        wall_time: T0 + s,
      });
    }
    const last = from + BATCH >= n;
    const res = await rig.call("POST", `/api/sdk/runs/${id}/log`, {
      points,
      step: Math.min(n, from + BATCH) - 1,
      ...(last && o.finish !== false ? { status: "SUCCEEDED" } : {}),
    });
    assert(res.status < 300, res.text);
  }
  return id;
}

/** A page of this origin with the given panels, as a page island would compose them. */
async function panelPage(page: Page, rig: ConsoleRig, path: string, panels: ChartPanelProps[]) {
  const html = await renderPage(
    loadConsoleAssets(currentIslands()),
    "charts",
    h(
      "main",
      { class: "charts", style: "display: block; max-width: 960px; margin: 16px auto" },
      panels.map((p) => h(Island<ChartPanelProps>, { component: ChartPanel, props: p })),
    ) as VNode,
  ).text();
  await page.route(`${rig.url}${path}`, (r) => r.fulfill({ body: html, contentType: "text/html" }));
  await page.goto(`${rig.url}${path}`);
  await page.waitForSelector("html[data-islands=hydrated]");
}

interface Drawn {
  zoomed: string;
  xRange: [number, number];
  drawnPoints: number;
  datasets: {
    runId: string;
    role: string;
    color: string;
    data: { x: number; y: number | null }[];
    band: { lo: { x: number; y: number | null }[]; hi: { x: number; y: number | null }[] } | null;
  }[];
  area: { left: number; right: number; top: number; bottom: number };
  grid: string;
  yType: string;
  yMin: number;
  yMax: number;
}

/** What a panel's chart draws, read from its chart.js instance. */
function drawn(page: Page, metric = KEY): Promise<Drawn> {
  return page.evaluate((metric) => {
    const root = document.querySelector(`.chart-panel[data-metric="${metric}"]`)!;
    // deno-lint-ignore no-explicit-any -- chart.js as the page loaded it
    const ch = (globalThis as any).Chart.getChart(root.querySelector("canvas"));
    return {
      zoomed: root.getAttribute("data-zoomed")!,
      xRange: root.getAttribute("data-x-range")!.split(",").map(Number) as [number, number],
      drawnPoints: Number(root.getAttribute("data-drawn-points")),
      // deno-lint-ignore no-explicit-any -- the panel's datasets carry runId and role
      datasets: ch.data.datasets.map((d: any) => ({
        runId: d.runId,
        role: d.role,
        color: d.borderColor,
        data: d.data,
        band: d.band,
      })),
      area: ch.chartArea,
      grid: ch.options.scales.x.grid.color,
      yType: ch.scales.y.type,
      yMin: ch.scales.y.min,
      yMax: ch.scales.y.max,
    };
  }, metric);
}

const lineOf = (d: Drawn, runId: string) =>
  d.datasets.find((s) => s.runId === runId && s.role === "line")?.data ?? [];
const linesShown = (d: Drawn) =>
  d.datasets.filter((s) => s.role === "line").map((s) => s.runId).sort();
const inRange = (pts: { x: number }[], [a, b]: [number, number]) =>
  pts.filter((p) => p.x >= a && p.x <= b).length;

/** Waits until the panel of `metric` has drawn and `ok` holds of what it draws. */
async function waitDrawn(
  page: Page,
  ok: (d: Drawn) => boolean,
  what: string,
  metric = KEY,
): Promise<Drawn> {
  return (await until<Drawn | null>(
    async () => {
      const d =
        await page.locator(`.chart-panel[data-metric="${metric}"][data-drawn-points]`).count()
          ? await drawn(page, metric)
          : null;
      return d && ok(d) ? d : null;
    },
    60_000,
    what,
  )) as Drawn;
}

/** A point of the chart area of the panel, as a fraction of its width and height. */
async function at(page: Page, d: Drawn, fx: number, fy = 0.5, metric = KEY) {
  const box =
    (await page.locator(`.chart-panel[data-metric="${metric}"] .chart-box`).boundingBox())!;
  return {
    x: box.x + d.area.left + (d.area.right - d.area.left) * fx,
    y: box.y + d.area.top + (d.area.bottom - d.area.top) * fy,
  };
}

/** Drags a zoom box across the panel from `fx0` to `fx1` of its chart area's width. */
async function dragZoom(page: Page, d: Drawn, fx0: number, fx1: number, metric = KEY) {
  const from = await at(page, d, fx0, 0.5, metric);
  const to = await at(page, d, fx1, 0.5, metric);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(to.x, to.y, { steps: 5 });
  await page.mouse.up();
  return to;
}

interface Query {
  runs: string[];
  keys: string[];
  max_points?: number;
  x?: string;
  range?: [number, number];
}

/** The metrics queries a page makes, with each answer's series once it arrived. */
function recordQueries(page: Page) {
  const asked: { q: Query; series: Promise<{ values: unknown[]; total_points: number }[]> }[] = [];
  page.on("request", (r: Request) => {
    if (!r.url().endsWith("/api/runs/metrics:query")) return;
    asked.push({
      q: r.postDataJSON() as Query,
      // A page left while an answer is on its way has no body to read.
      series: r.response().then(async (res) => (await res!.json()).series).catch(() => []),
    });
  });
  return asked;
}

Deno.test("the chart panel in Chromium", async (t) => {
  const rig = await startConsoleRig();
  try {
    const N = 20_000;
    const names = ["alpha", "beta", "gamma"];
    const ids: string[] = [];
    for (const [i, name] of names.entries()) ids.push(await seedRun(rig, name, N, { phase: i }));
    const runs = ids.map((id, i) => ({ id, label: names[i], color: runColor(id), live: false }));
    const [alpha, beta] = ids;
    const { page, errors } = await rig.context(rig.adminToken);
    const queries = recordQueries(page);
    await panelPage(page, rig, "/chart-panel", [{
      metric: KEY,
      direction: "min",
      primary: true,
      runs,
      tall: true,
    }]);
    const first = await waitDrawn(page, (d) => linesShown(d).length === 3, "three runs drawn");

    await t.step("one batched query for all the runs, about twice the panel's width", async () => {
      assertEquals(queries.length, 1);
      const { q } = queries[0];
      assertEquals([q.runs.slice().sort(), q.keys], [ids.slice().sort(), [KEY]]);
      const width = await page.locator(".chart-box").evaluate((e) => e.clientWidth);
      assert(Math.abs(q.max_points! - 2 * width) <= 2, `max_points ${q.max_points}, ${width} px`);
      for (const s of await queries[0].series) assert(s.values.length <= q.max_points!);
      // Downsampled: each run's bucket extremes are drawn as a band, so the spike stays.
      for (const id of ids) {
        const { band } = first.datasets.find((s) => s.runId === id && s.role === "line")!;
        assert(band, `a band for ${id}`);
        assertEquals(Math.max(...band.hi.map((p) => p.y ?? -Infinity)), 25, "the spike");
      }
      // And the y axis reaches it.
      assert(first.yMax >= 25, `the y axis ends at ${first.yMax}, below the spike`);
      // The bands are painted: the canvas without them has fewer pixels drawn.
      const painted = await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any -- chart.js as the page loaded it
        const ch = (globalThis as any).Chart.getChart(
          document.querySelector(".chart-panel canvas"),
        );
        const inked = () => {
          const px = ch.ctx.getImageData(0, 0, ch.canvas.width, ch.canvas.height).data;
          let n = 0;
          for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
          return n;
        };
        const withBands = inked();
        // deno-lint-ignore no-explicit-any
        const bands = ch.data.datasets.map((d: any) => d.band);
        // deno-lint-ignore no-explicit-any
        ch.data.datasets.forEach((d: any) => d.band = null);
        ch.render();
        const without = inked();
        // deno-lint-ignore no-explicit-any
        ch.data.datasets.forEach((d: any, i: number) => d.band = bands[i]);
        ch.render();
        return { withBands, without };
      });
      assert(painted.withBands > painted.without * 1.05, JSON.stringify(painted));
      // The NaN at 60% is a gap with a marker.
      assertEquals(first.datasets.filter((s) => s.role === "marks").length, 3);
    });

    await t.step("drag-zoom reads the range at full detail; double-click restores", async () => {
      const before = first;
      const to = await dragZoom(page, before, 0.3, 0.4);
      const zoomed = await waitDrawn(page, (d) => d.zoomed === "true", "zoomed");
      const [a, b] = zoomed.xRange;
      assert(
        a > before.xRange[0] && b < before.xRange[1],
        `${zoomed.xRange} inside ${before.xRange}`,
      );
      assert(Math.abs((b - a) / (before.xRange[1] - before.xRange[0]) - 0.1) < 0.02, "a tenth");
      const coarse = inRange(lineOf(before, alpha), [a, b]);
      const fine = await waitDrawn(
        page,
        (d) => inRange(lineOf(d, alpha), [a, b]) > 2 * coarse,
        "the zoomed range at full detail",
      );
      const read = queries.find((x) => x.q.range);
      assert(read, "a metrics:query with a range");
      assert(read.q.range![0] <= a && read.q.range![1] >= b, `${read.q.range} covers ${a},${b}`);
      assertEquals(read.q.x ?? "step", "step");
      assertEquals(fine.xRange, zoomed.xRange, "the view stays where the user put it");
      await page.mouse.dblclick(to.x, to.y);
      const back = await waitDrawn(page, (d) => d.zoomed === "false", "unzoomed");
      assertEquals(back.xRange, before.xRange);

      // On relative time each run's range is read in wall time from that run's own start.
      await page.selectOption(".chart-tools select", "relative");
      const rel = await waitDrawn(page, (d) => d.xRange[1] < 2 * N, "relative time");
      const asked = queries.length;
      await dragZoom(page, rel, 0.5, 0.6);
      const z = await waitDrawn(page, (d) => d.zoomed === "true", "zoomed on relative time");
      await until(() => queries.length === asked + ids.length, 60_000, "one read per run");
      for (const { q } of queries.slice(asked)) {
        assertEquals([q.runs.length, q.x], [1, "wall"]);
        // Each run's first point is at T0: its wall range is its relative range from T0.
        assert(q.range![0] <= T0 + z.xRange[0] && q.range![1] >= T0 + z.xRange[1], `${q.range}`);
        assert(q.range![0] > T0 + z.xRange[0] - 0.1 * N, `${q.range} close to the view`);
      }
      await page.mouse.dblclick(to.x, to.y);
      await waitDrawn(page, (d) => d.zoomed === "false", "unzoomed");
      await page.selectOption(".chart-tools select", "step");
      await waitDrawn(page, (d) => d.xRange.join() === before.xRange.join(), "steps again");
    });

    await t.step("the log scale leaves the values it cannot draw out", async () => {
      await page.locator(".chart-log input").check();
      const d = await waitDrawn(page, (d) => d.yType === "logarithmic", "a log y axis");
      assert(d.yMin > 0, `y from ${d.yMin}`);
      // The curves dip below 0 near the end: those points are gaps, not a broken axis.
      assert(lineOf(d, alpha).some((p) => p.y === null));
      await page.locator(".chart-log input").uncheck();
      await waitDrawn(page, (d) => d.yType === "linear", "a linear y axis again");
    });

    await t.step("Ctrl-click on a legend entry isolates its run; a click toggles", async () => {
      const entry = (id: string) => page.locator(`.chart-legend button[data-run="${id}"]`);
      await entry(beta).click({ modifiers: ["Control"] });
      await waitDrawn(page, (d) => linesShown(d).join() === beta, "beta alone");
      await entry(beta).click({ modifiers: ["Control"] });
      await waitDrawn(page, (d) => linesShown(d).length === 3, "all runs again");
      await entry(alpha).click();
      const hidden = await waitDrawn(page, (d) => linesShown(d).length === 2, "alpha hidden");
      assertEquals(linesShown(hidden), ids.filter((id) => id !== alpha).sort());
      assertEquals(await entry(alpha).getAttribute("aria-pressed"), "false");
      await entry(alpha).click();
      await waitDrawn(page, (d) => linesShown(d).length === 3, "alpha shown again");
      // Hovering an entry brings its run forward and fades the others.
      await entry(beta).hover();
      const over = await waitDrawn(
        page,
        (d) => d.datasets.some((s) => s.role === "line" && s.color.includes("/ 0.25")),
        "the other runs faded",
      );
      const faded = over.datasets.filter((s) => s.role === "line" && s.color.includes("/ 0.25"));
      assertEquals(faded.map((s) => s.runId).sort(), ids.filter((id) => id !== beta).sort());
      await page.mouse.move(0, 0);
      await waitDrawn(page, (d) => !d.datasets.some((s) => s.color.includes("/ 0.25")), "unfaded");
    });

    await t.step("the smoothing slider changes the drawn values; the raw line stays", async () => {
      const before = lineOf(await drawn(page), alpha);
      const raw = before.map((p) => p.y);
      await page.locator(".chart-smooth input").fill("0.9");
      const smoothed = await waitDrawn(
        page,
        (d) => d.datasets.some((s) => s.role === "raw"),
        "smoothing on",
      );
      const line = lineOf(smoothed, alpha).map((p) => p.y);
      const under = smoothed.datasets.find((s) => s.runId === alpha && s.role === "raw")!;
      // The raw line is the unsmoothed one, kept to each few pixels' lowest and highest point:
      // every point it draws is a raw point, over the same steps, extremes and gaps included.
      const rawAt = new Map(before.map((p) => [p.x, p.y]));
      const xs = before.map((p) => p.x);
      for (const p of under.data) assertEquals(p.y, rawAt.get(p.x), `raw point at step ${p.x}`);
      assertEquals([under.data[0].x, under.data.at(-1)!.x], [xs[0], xs.at(-1)]);
      const finite = (ys: (number | null)[]) => ys.filter((y): y is number => y !== null);
      const ys = finite(under.data.map((p) => p.y));
      assertEquals([Math.min(...ys), Math.max(...ys)], [
        Math.min(...finite(raw)),
        Math.max(...finite(raw)),
      ]);
      assert(under.data.some((p) => p.y === null), "the NaN is still a gap");
      const width = await page.locator(".chart-box").evaluate((e) => e.clientWidth);
      assert(under.data.length <= width, `${under.data.length} raw points for ${width} px`);
      assert(under.data.length < raw.length, "fewer points than the line");
      const changed = line.filter((y, i) => y !== null && raw[i] !== null && y !== raw[i]);
      assert(changed.length > line.length / 2, `${changed.length} of ${line.length} changed`);
    });

    await t.step("hovering reads each run's smoothed and raw value; light and dark", async () => {
      const d = await drawn(page);
      const p = await at(page, d, 0.55, 0.3);
      await page.mouse.move(p.x, p.y);
      await page.waitForSelector(".chart-tip");
      const title = await page.textContent(".chart-tip-title");
      assert(/^step [\d,]+ · .+ · \d\d:\d\d:\d\d$/.test(title!), title!);
      const rows = await page.locator(".chart-tip-value").allTextContents();
      assertEquals(rows.length, 3);
      for (const r of rows) assert(/^\S+ \(\S+\)$/.test(r), r);
      // The raw value in brackets is the stored point's, exactly (the faded line is reduced,
      // the readout is not).
      const step = Number(/^step ([\d,]+)/.exec(title!)![1].replaceAll(",", ""));
      const want = loss(step, N, 0, Math.floor(N * 0.37), Math.floor(N * 0.6));
      const mine = await page.locator(`.chart-tip-row[data-run="${alpha}"] .chart-tip-value`)
        .textContent();
      assertEquals(/\((\S+)\)$/.exec(mine!)![1], fmtMetric(Number(want)));
      await screenshot(page, "chart-panel");
      await page.emulateMedia({ colorScheme: "dark" });
      await waitDrawn(page, (x) => x.grid !== d.grid, "the dark scheme's grid colour");
      await page.mouse.move(p.x + 1, p.y);
      await page.waitForSelector(".chart-tip");
      await screenshot(page, "chart-panel-dark");
      await page.emulateMedia({ colorScheme: "light" });
    });

    await t.step(
      "a running run's curve grows while the page is open, over one stream",
      async () => {
        const a = await seedRun(rig, "live-a", 50, { finish: false });
        const b = await seedRun(rig, "live-b", 50, { finish: false });
        const log = (id: string, key: string, from: number, to: number) =>
          rig.call("POST", `/api/sdk/runs/${id}/log`, {
            points: Array.from({ length: to - from }, (_, i) => ({
              key,
              step: from + i,
              value: 1 / (from + i + 1),
              wall_time: T0 + from + i,
            })),
            step: to - 1,
          });
        assert((await log(b, "eval/loss", 0, 5)).status < 300);
        const streams = new Set<string>();
        page.on("request", (r) => {
          if (/metrics(:|\/)stream/.test(r.url())) {
            streams.add(new URL(r.url()).pathname + new URL(r.url()).search);
          }
        });
        // Run detail: the server renders the series; the page then follows the run.
        await page.goto(`${rig.url}/runs/${a}?tab=metrics`);
        await page.waitForSelector("html[data-islands=hydrated]");
        const maxX = (d: Drawn, id: string) => Math.max(...lineOf(d, id).map((p) => p.x));
        assertEquals(
          maxX(await waitDrawn(page, (d) => d.drawnPoints > 0, "run detail drawn"), a),
          49,
        );
        assert((await log(a, KEY, 50, 80)).status < 300);
        const grown = await waitDrawn(page, (d) => maxX(d, a) === 79, "the new points drawn");
        // Zoomed, the view stays where the user put it while the points keep coming.
        await dragZoom(page, grown, 0.2, 0.5);
        const z = await waitDrawn(page, (d) => d.zoomed === "true", "zoomed");
        assert((await log(a, KEY, 80, 85)).status < 300);
        await page.waitForFunction(() =>
          document.querySelector(".chart-values")?.textContent?.includes("@ 84")
        );
        const after = await drawn(page);
        assertEquals(after.xRange, z.xRange);

        // Two panels of two live runs share one stream for the union of their runs.
        streams.clear();
        await panelPage(page, rig, "/live-panels", [
          {
            metric: KEY,
            direction: "min",
            runs: [{ id: a, label: "a", color: runColor(a), live: true }],
          },
          {
            metric: "eval/loss",
            direction: "min",
            runs: [a, b].map((id) => ({ id, label: id, color: runColor(id), live: true })),
          },
        ]);
        await waitDrawn(page, (d) => maxX(d, b) === 4, "eval/loss drawn", "eval/loss");
        assert((await log(b, "eval/loss", 5, 9)).status < 300);
        assert((await log(a, KEY, 85, 90)).status < 300);
        await waitDrawn(page, (d) => maxX(d, b) === 8, "eval/loss grew", "eval/loss");
        await waitDrawn(page, (d) => maxX(d, a) === 89, "train/loss grew");
        assertEquals([...streams], [`/api/runs/metrics:stream?runs=${[a, b].sort().join(",")}`]);
      },
    );

    await t.step(
      "a 1,000,000-point run: at most max_points points per series cross the wire",
      async () => {
        const big = await seedRun(rig, "million", 1_000_000);
        const answers: { max: number; lengths: number[]; totals: number[] }[] = [];
        let collecting = false;
        page.on("response", async (res) => {
          if (!collecting || !res.url().endsWith("/api/runs/metrics:query")) return;
          const q = res.request().postDataJSON() as Query;
          const body = await res.json().catch(() => null); // null: the page was left meanwhile
          if (!body || !q.runs.includes(big)) return;
          const series = body.series as { values: unknown[]; total_points: number }[];
          answers.push({
            max: q.max_points!,
            lengths: series.map((s) => s.values.length),
            totals: series.map((s) => s.total_points),
          });
        });
        // The run's page carries the series it is drawn with: downsampled, not a million points.
        // Every read the page makes is held unanswered, so the panel can only be drawn from
        // what the page gave it (a read it makes anyway, say for a width that changed while
        // a loaded machine laid the page out, is let through once it is drawn, and not counted).
        const held: Route[] = [];
        const hold = (route: Route) => void held.push(route);
        await page.route("**/api/runs/metrics:query", hold);
        await page.goto(`${rig.url}/runs/${big}?tab=metrics`);
        await page.waitForSelector("html[data-islands=hydrated]");
        const given = JSON.parse(
          (await page.locator("gpuctl-island[data-island=ChartPanel]").getAttribute("data-props"))!,
        );
        assertEquals(given.series[0].total_points, 1_000_000);
        assert(
          given.series[0].values.length <= given.maxPoints,
          `${given.series[0].values.length}`,
        );
        await waitDrawn(page, (d) => d.drawnPoints > 0, "drawn from the page's series alone");
        await page.unroute("**/api/runs/metrics:query", hold);
        for (const route of held) await route.continue().catch(() => {});
        await page.waitForLoadState("networkidle");
        collecting = true;
        // A wide panel without series reads them once, at about twice its width; a zoom again.
        await panelPage(page, rig, "/million", [{
          metric: KEY,
          direction: "min",
          runs: [{ id: big, label: "million", color: runColor(big), live: false }],
          tall: true,
        }]);
        const d = await waitDrawn(page, (d) => d.drawnPoints > 0, "the million drawn");
        await dragZoom(page, d, 0.5, 0.6);
        await until(() => answers.length >= 2, 60_000, "the zoomed read");
        const width = await page.locator(".chart-box").evaluate((e) => e.clientWidth);
        for (const a of answers) {
          assert(a.max <= 2 * width + 2, `max_points ${a.max} for ${width} px`);
          for (const n of a.lengths) assert(n <= a.max, `${n} points > max_points ${a.max}`);
        }
        assertEquals(answers[0].totals, [1_000_000]);
        assert(answers[1].totals[0] < 200_000 && answers[1].totals[0] > 80_000, "a tenth of it");
      },
    );

    assertEquals(errors, []);
  } finally {
    await rig.close();
  }
});
