/**
 * Provenance and lineage in Chromium against a real server and an agent with a fake GPU: a
 * job in a dirty git work tree, a fork of it, a mark set from the run page's form. The Code tab
 * shows the diff with its lines coloured by the stylesheet (no CSP error), and the experiment's
 * workspace shows the tree. Screenshots `run-code`, `run-lineage` and `experiment-tree` in
 * test-artifacts/console/.
 */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";
import { git } from "./_git.ts";

Deno.test("the Code tab and the experiment's tree in Chromium", async () => {
  const rig = await startConsoleRig({ fakeGpus: 1 });
  const ended = (id: string) =>
    until(
      async () => {
        const j = (await rig.call("GET", `/api/jobs/${id}`)).json;
        return ["SUCCEEDED", "FAILED"].includes(j.status) ? j : null;
      },
      60_000,
      `job ${id} ended`,
    );
  try {
    const repo = `${rig.home}/repo`;
    await Deno.mkdir(repo);
    await git(repo, "init", "-q", "-b", "warmup");
    await Deno.writeTextFile(`${repo}/train.py`, "lr = 0.1\nwarmup = 0\nprint('trained')\n");
    await git(repo, "add", ".");
    await git(repo, "commit", "-q", "-m", "base");
    await Deno.writeTextFile(`${repo}/train.py`, "lr = 0.01\nwarmup = 100\nprint('trained')\n");
    const job = (await rig.call("POST", "/api/jobs", {
      name: "base",
      command: ["python3", "train.py"],
      working_dir: repo,
      gpus: 1,
      project: "vision",
      experiment: "tree",
    })).json;
    const parent = (await ended(job.id)).run_id as string;
    const fork = (await rig.call("POST", `/api/runs/${parent}/fork`, {
      overrides: { args: { lr: 0.003 } },
    })).json;
    const child = (await ended(fork.id)).run_id as string;

    const s = await rig.context(rig.adminToken);
    const { page } = s;
    await page.goto(`${rig.url}/runs/${parent}?tab=code`);
    assertEquals(
      await page.textContent("code.commit"),
      (await git(repo, "rev-parse", "HEAD")).trim(),
    );
    assertEquals(await page.locator("pre.diff .diff-add").allTextContents(), [
      "+lr = 0.01\n",
      "+warmup = 100\n",
    ]);
    const added = await page.locator("pre.diff .diff-add").first().evaluate((el) =>
      // deno-lint-ignore no-explicit-any -- runs in the page, where window is the browser's
      (globalThis as any).getComputedStyle(el).color
    );
    const context = await page.locator("pre.diff .diff-ctx").first().evaluate((el) =>
      // deno-lint-ignore no-explicit-any -- runs in the page, where window is the browser's
      (globalThis as any).getComputedStyle(el).color
    );
    assert(added !== context, `added lines are coloured: ${added} vs ${context}`);
    await screenshot(page, "run-code");

    await page.goto(`${rig.url}/runs/${child}`);
    await page.selectOption("#mark-verdict", "kept");
    await page.fill("#mark-reason", "lower lr with warmup trains");
    await Promise.all([page.waitForURL(/notice=/), page.click("button[data-action=mark]")]);
    assertEquals(await page.textContent(".lineage-panel .mark"), "kept");
    await screenshot(page, "run-lineage");

    const exp = (await rig.call("GET", "/api/experiments")).json.items
      .find((e: { name: string }) => e.name === "tree");
    await page.goto(`${rig.url}/experiments/${exp.id}`);
    await page.waitForSelector("html[data-islands=hydrated]");
    const nested = page.locator(`li[data-tree-run="${parent}"] li[data-tree-run="${child}"]`);
    assertEquals(await nested.count(), 1);
    assert((await nested.textContent())!.includes("lr=0.003"));
    await page.locator(".lineage-tree").scrollIntoViewIfNeeded();
    await screenshot(page, "experiment-tree");
    assertEquals(s.errors, [], "no console errors (a CSP violation is one)");
  } finally {
    await rig.close();
  }
});
