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
