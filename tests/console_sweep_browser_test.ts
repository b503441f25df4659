/**
 * A sweep's page in Chromium, against a real server and an agent with fake GPUs: the trials'
 * curves and the parameter scatter draw without console errors, the page follows the sweep
 * while it runs (trials that had no value yet when it opened appear in both charts), and the
 * table ends with the best trial first. Screenshots in
 * test-artifacts/console/.
 */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("a sweep's page draws its trials' curves and scatter live, the best trial first", async () => {
  const rig = await startConsoleRig({ fakeGpus: 2 });
  try {
    const created = await rig.call("POST", "/api/sweeps", {
      name: "lr-search",
      project: "sweeps",
      base: {
        name: "synthetic",
        // Each trial waits a few seconds before it trains, so the page opens before any trial
        // has a value: its scatter, and the curves, must then arrive while it is open.
        command: [
          "bash",
          "-c",
          `sleep 6; exec python3 ${ROOT}/examples/synthetic/train.py "$@"`,
          "trial",
          "--steps",
          "80",
          "--sleep",
          "0.03",
          "--eval-every",
          "10",
        ],
        working_dir: rig.home,
        gpus: 1,
      },
      parameters: { lr: { min: 0.01, max: 1, scale: "log", count: 3 } },
      max_parallel: 2,
      metric: "eval/loss",
    });
    assertEquals(created.status, 201, created.text);
    const id = created.json.id;
    const { page, errors, context } = await rig.context(rig.adminToken);
    try {
      await page.goto(`${rig.url}/sweeps/${id}`);
      await page.waitForSelector("html[data-islands=hydrated]");
      // Opened before any trial had a value: both charts (the trials' curves and the scatter)
      // come up as the trials report, without a reload.
      await until(
        async () => (await page.locator(".sweep-charts canvas").count()) === 2,
        60_000,
        "both sweep charts drawn",
      );
      await until(
        () =>
          page.evaluate(() => {
            // deno-lint-ignore no-explicit-any -- the page's DOM and its chart.js
            const g = globalThis as any;
            const canvas = g.document.querySelector(".sweep-charts canvas");
            return g.Chart.getChart(canvas).data.datasets.length > 0;
          }),
        60_000,
        "the trials' curves drawn",
      );
      await screenshot(page, "sweep-running");
      await until(
        async () => {
          const s = (await rig.call("GET", `/api/sweeps/${id}`)).json;
          return s.status !== "RUNNING" ? s : null;
        },
        120_000,
        "the sweep ended",
      );
      await page.reload();
      await page.waitForSelector("html[data-islands=hydrated]");
      const first = await page.locator("table tbody tr").first().locator("td").nth(1).textContent();
      const s = (await rig.call("GET", `/api/sweeps/${id}`)).json;
      assertEquals(Number(first), s.best.params.lr);
      await screenshot(page, "sweep-done");
      // Charts take their colours when drawn: a page opened in dark draws dark.
      await page.emulateMedia({ colorScheme: "dark" });
      await page.reload();
      await page.waitForSelector("html[data-islands=hydrated]");
      await screenshot(page, "sweep-done-dark");
      assertEquals(errors, []);
      assert((await page.content()).includes("lr-search"));
    } finally {
      await context.close();
    }
  } finally {
    await rig.close();
  }
});
