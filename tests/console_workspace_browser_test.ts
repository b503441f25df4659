/**
 * The Experiment workspace and Compare in Chromium against a real server: a learning-rate
 * sweep of five runs is compared, smoothed, re-axed and shared by URL entirely in the
 * browser — runs checked, the slider moved, the x axis switched, a panel added, the link
 * opened in a new page with the same view, then "compare selected →" with the lr column and
 * the best run first, and the metric switched. Screenshots in test-artifacts/console/.
 */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";
import type { Page } from "playwright-core";
import { fmtMetric } from "../islands/_format.ts";
import { LRS, points, seedSweep, startOf, STEPS } from "./console_workspace_seed.ts";

async function hydrated(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector("html[data-islands=hydrated]");
}

/** What a workspace shows: its panels, drawn runs, smoothing and pressed x axis. */
async function viewOf(page: Page) {
  const drawn: string[] = [];
  for (const row of await page.locator("tr[data-run]").all()) {
    if (await row.locator("input[type=checkbox]").isChecked()) {
      drawn.push((await row.getAttribute("data-run"))!);
    }
  }
  return {
    panels: await page.locator("[data-panel]").evaluateAll((els) =>
      els.map((e) => e.getAttribute("data-panel")!)
    ),
    runs: drawn,
    smooth: await page.locator("input[name=smooth]").inputValue(),
    x: await page.locator(".x-switch [aria-pressed=true]").getAttribute("data-x"),
  };
}

Deno.test("a learning-rate sweep is compared, smoothed and shared by URL in the browser", async () => {
  const rig = await startConsoleRig();
  try {
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await rig.call(method, path, body);
      assert(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      return res.json;
    };
    const s = await seedSweep(call, 1);
    const { page, errors, context } = await rig.context(rig.adminToken);
    const workspace = `${rig.url}/experiments/${s.experimentId}`;
    // From the Experiments list, as a person gets there.
    await hydrated(page, `${rig.url}/experiments`);
    await Promise.all([
      page.waitForURL(workspace),
      page.click(`a[href="/experiments/${s.experimentId}"]`),
    ]);
    await page.waitForSelector("html[data-islands=hydrated]");
    assertEquals(await page.locator("tr[data-run]").count(), LRS.length);
    assertEquals((await viewOf(page)).runs, s.ranked, "every run drawn, best first");
    assertEquals(await page.locator("tr[data-run] .badge.best").count(), 1);
    const bestRow = page.locator(`tr[data-run="${s.ranked[0]}"]`);
    assertEquals(await bestRow.locator(".badge.best").count(), 1);

    // The running run is drawn live: new points reach its curve and its row's progress.
    const running = s.runs[LRS.length - 1];
    const top = page.locator('[data-panel="train/loss"] .chart-panel');
    await page.waitForSelector('[data-panel="train/loss"] .chart-panel[data-drawn-points]');
    const drawnBefore = Number(await top.getAttribute("data-drawn-points"));
    await call("POST", `/api/sdk/runs/${running}/log`, {
      points: points(LRS[LRS.length - 1], startOf(LRS.length - 1), STEPS, STEPS + 20),
      step: STEPS + 19,
    });
    await page.locator(`tr[data-run="${running}"] .progress-cell`, { hasText: "119 / 200" })
      .waitFor();
    await until(
      async () => Number(await top.getAttribute("data-drawn-points")) > drawnBefore,
      60_000,
      "the live run's new points drawn",
    );

    // Check runs: leave the best three drawn.
    for (const id of s.ranked.slice(3)) {
      await page.locator(`tr[data-run="${id}"] input[type=checkbox]`).uncheck();
    }
    await page.waitForFunction(() => new URL(location.href).searchParams.has("runs"));
    // Move the smoothing slider by dragging its thumb most of the way.
    const slider = page.locator("input[name=smooth]");
    await slider.scrollIntoViewIfNeeded();
    const box = (await slider.boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.75, box.y + box.height / 2);
    const smooth = Number(await slider.inputValue());
    assert(smooth > 0.5 && smooth < 0.95, `smoothing ${smooth}`);
    await page.waitForFunction(
      (v) => new URL(location.href).searchParams.get("smooth") === String(v),
      smooth,
    );
    // Switch the x axis, add the GPU telemetry panel.
    await page.click(".x-switch [data-x=relative]");
    await page.selectOption("#add-metric", "sys/gpu0/util");
    await page.click(".add-panel button[type=submit]");
    await page.waitForSelector('[data-panel="sys/gpu0/util"]');

    // Zoom the loss panel by dragging across its middle: it reads that range again.
    const loss = page.locator('[data-panel="train/loss"] .chart-panel');
    await page.waitForSelector('[data-panel="train/loss"] .chart-panel[data-x-range]');
    const span = async () => {
      const [a, b] = (await loss.getAttribute("data-x-range"))!.split(",").map(Number);
      return b - a;
    };
    const wide = await span();
    const chartBox = (await loss.locator(".chart-box").boundingBox())!;
    const midY = chartBox.y + chartBox.height / 2;
    await page.mouse.move(chartBox.x + chartBox.width * 0.3, midY);
    await page.mouse.down();
    await page.mouse.move(chartBox.x + chartBox.width * 0.6, midY, { steps: 5 });
    await page.mouse.up();
    await page.waitForSelector('[data-panel="train/loss"] .chart-panel[data-zoomed="true"]');
    assert((await span()) < wide / 2, `zoomed to ${await span()} of ${wide}`);

    const view = await viewOf(page);
    assertEquals(view, {
      panels: ["train/loss", "eval/accuracy", "sys/gpu0/util"],
      runs: s.ranked.slice(0, 3),
      smooth: String(smooth),
      x: "relative",
    });
    await screenshot(page, "workspace");

    // The link, pasted into a new page, opens the same view.
    const href = await page.evaluate(() => location.href);
    const shared = await context.newPage();
    shared.on("pageerror", (e) => errors.push(String(e)));
    await hydrated(shared, href);
    assertEquals(await viewOf(shared), view);
    // Each panel draws the same three runs on the relative axis.
    for (const key of view.panels) {
      const panel = shared.locator(`[data-panel="${key}"] .chart-panel`);
      await shared.waitForSelector(`[data-panel="${key}"] .chart-panel[data-x-range]`);
      assertEquals(
        await panel.locator(".chart-legend button[data-run]").evaluateAll((bs) =>
          bs.map((b) => b.getAttribute("data-run"))
        ),
        view.runs,
      );
      assertEquals(
        await panel.locator("canvas").getAttribute("aria-label"),
        `${key} by relative, 3 runs`,
      );
      assert(Number(await panel.getAttribute("data-drawn-points")) > 0, key);
    }
    await shared.emulateMedia({ colorScheme: "dark" });
    await screenshot(shared, "workspace-dark");
    await shared.close();

    // Compare the three drawn runs: the lr column, the best first.
    await Promise.all([page.waitForURL(/\/compare\?/), page.click("a.compare-link")]);
    await page.waitForSelector("html[data-islands=hydrated]");
    const rows = await page.locator("tr[data-run]").evaluateAll((trs) =>
      trs.map((tr) => tr.getAttribute("data-run"))
    );
    assertEquals(rows, s.ranked.slice(0, 3));
    assertEquals(await page.locator("th[data-config]").allTextContents(), ["lr"]);
    assertEquals(
      await page.locator(`tr[data-run="${s.ranked[0]}"] .badge.best`).count(),
      1,
    );
    assertEquals(
      (await page.locator("tr[data-run] td:nth-last-child(1)").first().textContent())?.trim(),
      "0.03",
    );
    // The smoothing and axis came along.
    assertEquals(new URL(page.url()).searchParams.get("smooth"), String(smooth));
    assertEquals(await page.locator("input[name=smooth]").inputValue(), String(smooth));
    assertEquals(
      await page.locator(".x-switch [aria-pressed=true]").getAttribute("data-x"),
      "relative",
    );
    assertEquals(
      await page.locator(".chart-panel canvas").getAttribute("aria-label"),
      "train/loss by relative, 3 runs",
    );
    await screenshot(page, "compare");

    // Switch the metric: the heading, the URL and the ranking follow without a reload.
    await page.selectOption("select[name=metric]", "eval/accuracy");
    await page.locator(".compare h2 code", { hasText: "eval/accuracy ↑" }).waitFor();
    assertEquals(new URL(page.url()).searchParams.get("metric"), "eval/accuracy");
    assertEquals(
      await page.locator("tr[data-run]").evaluateAll((trs) =>
        trs.map((tr) => tr.getAttribute("data-run"))
      ),
      s.ranked.slice(0, 3),
    );
    await page.emulateMedia({ colorScheme: "dark" });
    await page.reload();
    await page.waitForSelector("html[data-islands=hydrated]");
    assertEquals(await page.locator("select[name=metric]").inputValue(), "eval/accuracy");
    assertEquals(await page.locator("input[name=smooth]").inputValue(), String(smooth));
    await page.waitForSelector('.chart-panel[data-metric="eval/accuracy"][data-x-range]');
    await screenshot(page, "compare-dark");
    // A live run's better values re-rank the table while the page is open.
    await page.emulateMedia({ colorScheme: "light" });
    await hydrated(page, `${rig.url}/compare?runs=${s.ranked[0]},${running}`);
    assertEquals(
      await page.locator("tbody tr[data-run]").first().getAttribute("data-run"),
      s.ranked[0],
    );
    await call("POST", `/api/sdk/runs/${running}/log`, {
      points: [{ key: "train/loss", step: STEPS + 20, value: 0.01 }],
      step: STEPS + 20,
    });
    await until(
      async () =>
        await page.locator("tbody tr[data-run]").first().getAttribute("data-run") === running,
      60_000,
      "the live run ranked first",
    );
    assertEquals(
      await page.locator(`tr[data-run="${running}"] .badge.best`).count(),
      1,
    );

    // At phone width the grid is one column and the tables scroll inside their box.
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 390, height: 800 });
    await hydrated(page, href);
    // One column: the third panel is below the first screen and draws once scrolled to.
    await page.locator('[data-panel="sys/gpu0/util"]').scrollIntoViewIfNeeded();
    await page.waitForSelector('[data-panel="sys/gpu0/util"] .chart-panel[data-x-range]');
    assertEquals(
      await page.evaluate("document.documentElement.scrollWidth"),
      await page.evaluate("innerWidth"),
      "nothing wider than the phone's screen",
    );
    await screenshot(page, "workspace-phone");
    assertEquals(errors, []);
  } finally {
    await rig.close();
  }
});

Deno.test("a workspace's panels below the first screen draw once scrolled to, band and readout exact", async () => {
  const rig = await startConsoleRig();
  try {
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await rig.call(method, path, body);
      assert(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      return res.json;
    };
    // 3 runs × 8 metrics × 3,000 points: more than a grid panel reads, so each is downsampled
    // and drawn with its band. Run 0's last metric has a spike between kept points' values.
    const N = 3000;
    const keys = Array.from({ length: 8 }, (_, k) => `eval/k${k}`);
    const SPIKE = { step: 1501, value: 9 };
    const value = (k: number, i: number, step: number) =>
      k === 7 && i === 0 && step === SPIKE.step
        ? SPIKE.value
        : Math.round(((1 + k) * Math.exp(-step / (400 + 150 * i)) + 0.01 * (step % 7)) * 1e5) /
          1e5;
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await call("POST", "/api/sdk/runs", {
        project: "wide",
        experiment: "panels",
        name: `run-${i}`,
      });
      const points = keys.flatMap((key, k) =>
        Array.from({ length: N }, (_, step) => ({
          key,
          step,
          value: value(k, i, step),
          wall_time: 1_780_000_000 + step,
        }))
      );
      for (let from = 0; from < points.length; from += 10_000) {
        await call("POST", `/api/sdk/runs/${run.id}/log`, {
          points: points.slice(from, from + 10_000),
        });
      }
      await call("POST", `/api/sdk/runs/${run.id}/log`, { status: "SUCCEEDED" });
      runs.push(run.id);
    }
    const exp = (await call("GET", "/api/experiments?project=wide")).items
      .find((e: { name: string }) => e.name === "panels");
    const { page, errors } = await rig.context(rig.adminToken);
    await page.setViewportSize({ width: 1280, height: 700 });
    const asked: string[][] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/api/runs/metrics:query")) asked.push(r.postDataJSON().keys);
    });
    const view = new URLSearchParams({ metrics: keys.join(","), runs: runs.join(",") });
    await hydrated(page, `${rig.url}/experiments/${exp.id}?${view}`);
    const panel = (key: string) => page.locator(`.chart-panel[data-metric="${key}"]`);
    await panel(keys[0]).and(page.locator("[data-drawn-points]")).waitFor();

    // The last panel is well below the first screen: nothing read or drawn for it yet.
    const last = keys[7];
    const below = await panel(last).evaluate((el) =>
      el.getBoundingClientRect().top - el.ownerDocument.documentElement.clientHeight
    );
    assert(below > 200, `the last panel starts ${below} px below the screen`);
    assertEquals(await panel(last).getAttribute("data-drawn-points"), null);
    assert(!asked.some((k) => k.includes(last)), `no read of ${last} yet: ${asked}`);

    // Scrolled to, it reads its series once and draws every run with its band.
    await panel(last).scrollIntoViewIfNeeded();
    await panel(last).and(page.locator("[data-drawn-points]")).waitFor();
    await until(() => asked.some((k) => k.includes(last)), 10_000, `the read of ${last} seen`);
    // Once, in one query with the panels scrolled near with it; no panel reads twice.
    assertEquals(asked.filter((k) => k.includes(last)).length, 1, `${asked}`);
    assertEquals(asked.flat().length, new Set(asked.flat()).size, `${asked}`);
    const drawn = await until(
      () =>
        panel(last).evaluate((el) => {
          // deno-lint-ignore no-explicit-any -- chart.js as the page loaded it
          const ch = (globalThis as any).Chart.getChart(el.querySelector("canvas"));
          // deno-lint-ignore no-explicit-any -- the panel's datasets carry runId and role
          const sets = ch.data.datasets.map((d: any) => ({
            runId: d.runId,
            role: d.role,
            bandColor: d.bandColor,
            bandHi: d.band?.hi.map((p: { y: number | null }) => p.y) ?? null,
            ys: d.data.map((p: { y: number | null }) => p.y),
          }));
          return sets.filter((d: { role: string }) => d.role === "line").length === 3 ? sets : null;
        }),
      60_000,
      "the scrolled-to panel drawn",
    ) as {
      runId: string;
      role: string;
      bandColor: string;
      bandHi: (number | null)[] | null;
      ys: (number | null)[];
    }[];
    const lineOf = (id: string) => drawn.find((d) => d.runId === id && d.role === "line")!;
    for (const id of runs) {
      assert(lineOf(id).bandHi, `a band for ${id}`);
      assert(lineOf(id).bandColor.includes("0.12"), `faint: ${lineOf(id).bandColor}`);
    }
    const hi0 = lineOf(runs[0]).bandHi!;
    assertEquals(Math.max(...hi0.filter((y) => y !== null) as number[]), SPIKE.value);

    // Hovering it reads each run's stored value at the step under the pointer, exactly.
    const box = (await panel(last).locator(".chart-box").boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
    const tip = panel(last).locator(".chart-tip");
    await tip.waitFor();
    const title = (await tip.locator(".chart-tip-title").textContent())!;
    const step = Number(/^step ([\d,]+)/.exec(title)![1].replaceAll(",", ""));
    for (const [i, id] of runs.entries()) {
      assertEquals(
        await tip.locator(`.chart-tip-row[data-run="${id}"] .chart-tip-value`).textContent(),
        fmtMetric(value(7, i, step)),
        `run ${i} at step ${step}`,
      );
    }
    await screenshot(page, "workspace-scrolled");
    assertEquals(errors, []);
  } finally {
    await rig.close();
  }
});
