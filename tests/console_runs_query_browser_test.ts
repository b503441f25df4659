/**
 * The Runs page's query_runs filter and a budget refusal, in Chromium against a real server:
 * a `where` on config with `order_by` lists the matching runs in that order, a run registered
 * later that matches appears in its place (the island reads `POST /api/runs:query` again) and
 * one that does not match stays out; a signed-in token past its budget submits the job form
 * and reads the refusal naming the budget (its Check button first: a dry run). Screenshots
 * `runs-query`, `budget-dry-run` and `budget-refusal` in
 * test-artifacts/console/.
 */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";

Deno.test("the Runs page lists query_runs' answer and a budget refusal shows on the job form, in Chromium", async () => {
  const rig = await startConsoleRig();
  try {
    const register = async (name: string, lr: number) =>
      (await rig.call("POST", "/api/sdk/runs", {
        project: "vision",
        experiment: "lr",
        name,
        config: { lr },
      })).json.id as string;
    await register("lr-0.1", 0.1);
    await register("lr-0.003", 0.003);
    await register("lr-0.0003", 0.0003);

    const s = await rig.context(rig.adminToken);
    const { page } = s;
    const where = JSON.stringify({ config: { lr: { lt: 0.01 } } });
    await page.goto(
      `${rig.url}/runs?where=${encodeURIComponent(where)}&order_by=config.lr`,
    );
    await page.waitForSelector("html[data-islands=hydrated]");
    const names = () =>
      page.locator("[data-query-runs] tr[data-run] td.run-name > a").allTextContents();
    assertEquals((await names()).map((t) => t.trim()), ["lr-0.0003", "lr-0.003"]);
    assert(
      (await page.textContent("[data-query-answer]"))!.includes("2 matched of 3 looked at"),
    );
    assertEquals(await page.inputValue("input[name=where]"), where);

    const asked = page.waitForRequest((r) =>
      r.url().endsWith("/api/runs:query") && r.method() === "POST"
    );
    await register("lr-0.001", 0.001);
    await register("lr-0.5", 0.5);
    const request = await asked;
    assertEquals(JSON.parse(request.postData()!).where.config, { lr: { lt: 0.01 } });
    await until(
      async () => (await names()).length === 3,
      20_000,
      "the new matching run listed",
    );
    assertEquals((await names()).map((t) => t.trim()), ["lr-0.0003", "lr-0.001", "lr-0.003"]);
    // The counts are read again with the list.
    await until(
      async () => (await page.textContent("[data-query-answer]"))!.includes("3 matched of 5"),
      20_000,
      "the counts read again",
    );
    await screenshot(page, "runs-query");

    // A `where` that is not a query: the problem, naming the field, and no runs.
    await page.goto(
      `${rig.url}/runs?where=${encodeURIComponent('{"config": {"lr": {"lt": "x"}}}')}`,
    );
    assert((await page.textContent("[data-query-error]"))!.startsWith("where.config.lr"));
    assertEquals(await page.locator("tr[data-run]").count(), 0);

    // A token with a budget: the job form's refusal names it, and nothing is queued.
    const bot = (await rig.call("POST", "/api/tokens", {
      name: "notebook",
      scope: "write",
      budget: { max_gpus: 1 },
    })).json.token as string;
    const b = await rig.context(bot);
    await b.page.goto(`${rig.url}/jobs?submit=1#submit`);
    await b.page.fill("input[name=name]", "wide");
    await b.page.fill("[name=command]", "python train.py");
    await b.page.fill("input[name=working_dir]", "/tmp");
    await b.page.fill("input[name=gpus]", "1");
    await Promise.all([
      b.page.waitForLoadState("load"),
      b.page.click("#submit form button[data-dry-run]"),
    ]);
    const plan = await b.page.textContent("[data-dry-run-result]");
    assert(plan!.includes("Nothing was stored. Budget after: max_gpus: 0 of 1 used."), plan!);
    assertEquals(await b.page.inputValue("input[name=name]"), "wide");
    await screenshot(b.page, "budget-dry-run");
    await b.page.fill("input[name=gpus]", "2");
    await Promise.all([
      b.page.waitForLoadState("load"),
      b.page.click("#submit form button[type=submit]"),
    ]);
    const alert = await b.page.locator("p.field-error[role=alert]").first().textContent();
    assert(alert!.includes('budget max_gpus of token "notebook"'), alert!);
    assert(alert!.includes("2 GPUs requested, more than the 1"), alert!);
    assertEquals((await rig.call("GET", "/api/jobs")).json.items.length, 0);
    await screenshot(b.page, "budget-refusal");
    // The two pages answered 400 on purpose (the bad `where`, the refused form); nothing else.
    const expected = /status of 400 \(Bad Request\)/;
    assertEquals([...s.errors, ...b.errors].filter((e) => !expected.test(e)), []);
    assertEquals([...s.errors, ...b.errors].length, 2);
  } finally {
    await rig.close();
  }
});
