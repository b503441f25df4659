/**
 * A sweep's page in Chromium, against a real server and an agent with fake GPUs: the trials'
 * curves and the parameter scatter draw without console errors, the page follows the sweep
 * while it runs, and the table ends with the best trial first. Screenshots in
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
        command: [
          "python3",
          `${ROOT}/examples/synthetic/train.py`,
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
      // Both charts (the trials' curves and the scatter) come up; on a loaded machine the second
      // may be drawn a moment after the islands hydrated.
      await until(
        async () => (await page.locator(".sweep-charts canvas").count()) === 2,
        20_000,
        "both sweep charts drawn",
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
