/**
 * The Experiments page in Chromium against a real server: a project and an experiment created
 * in place, a primary metric set in the metric definitions drawer (and Esc closing it), the
 * list filtered by a project chip and by the search that `/` focuses. Screenshots
 * `experiments` and `experiments-dark` in test-artifacts/console/.
 */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, type Session, startConsoleRig } from "./_browser.ts";

async function hydrated(s: Session, url: string): Promise<void> {
  await s.page.goto(url);
  await s.page.waitForSelector("html[data-islands=hydrated]");
}

/** The experiment names the list shows, in order. */
async function listed(s: Session): Promise<string[]> {
  return await s.page.locator(".exp-table tbody .exp-name > a").allTextContents();
}

Deno.test("experiments are created, given a primary metric and filtered in the browser", async () => {
  const rig = await startConsoleRig();
  try {
    const s = await rig.context(rig.adminToken);
    const { page } = s;
    const base = `${rig.url}/experiments`;

    // With nothing yet, the page teaches and the create drawer is open.
    await hydrated(s, base);
    assert((await page.textContent(".exp-empty"))!.includes("gpuctl job submit --project"));
    await screenshot(page, "experiments-empty");
    await page.fill("#p-name", "vision");
    await page.fill("#p-description", "image models");
    await Promise.all([page.waitForURL(/notice=/), page.click("text=Create project")]);
    assert((await page.textContent(".notice"))!.includes('Project "vision" created'));

    await page.click("#create > summary");
    await page.selectOption("#x-project", "vision");
    await page.fill("#x-name", "lr-sweep");
    await Promise.all([page.waitForURL(/notice=/), page.click("text=Create experiment")]);
    assertEquals(await listed(s), ["lr-sweep"]);
    const workspace = await page.getAttribute(".exp-name > a", "href");
    assert(/^\/experiments\/[^/]+$/.test(workspace!), workspace!);

    // Runs of that experiment and of another project, with an accuracy and a loss.
    const run = async (project: string, experiment: string, acc: number[], status?: string) => {
      const r = await rig.call("POST", "/api/sdk/runs", { project, experiment });
      assertEquals(r.status, 201, r.text);
      const logged = await rig.call("POST", `/api/sdk/runs/${r.json.id}/log`, {
        points: acc.flatMap((v, step) => [
          { key: "eval/acc", step, value: v },
          { key: "eval/loss", step, value: 1 - v },
        ]),
        ...(status ? { status } : {}),
      });
      assertEquals(logged.status < 300, true, logged.text);
      return r.json.id as string;
    };
    const best = await run("vision", "lr-sweep", [0.5, 0.93, 0.9], "SUCCEEDED");
    await run("vision", "lr-sweep", [0.2], "FAILED");
    await run("nlp", "bert", [0.4, 0.6]);

    // The primary metric, set in the drawer for the experiment.
    await hydrated(s, base);
    assertEquals(await page.textContent(`.exp-table tr:has-text("lr-sweep") code`), "eval/loss ↓");
    await page.click("#metrics > summary");
    await page.selectOption("#d-scope", "experiment:vision/lr-sweep");
    await page.fill("#d-key", "eval/acc");
    await page.selectOption("#d-direction", "max");
    await page.check("input[name=primary]");
    await Promise.all([page.waitForURL(/metrics=1/), page.click("text=Save definition")]);
    await page.waitForSelector("html[data-islands=hydrated]");
    assert(await page.evaluate("document.querySelector('#metrics').open"), "the drawer stays open");
    const row = page.locator('.exp-table tr:has-text("lr-sweep")');
    assertEquals(await row.locator("code").textContent(), "eval/acc ↑");
    assertEquals(await row.locator(`a[href="/runs/${best}"]`).textContent(), "0.93");
    const resolved = page.locator('.exp-resolution-table tr[data-key="eval/acc"] .exp-from');
    assertEquals(await resolved.textContent(), "experiment vision / lr-sweep");
    // Another experiment chosen in the drawer: its accuracy goes by the key's name.
    await Promise.all([
      page.waitForURL(/resolve=/),
      (async () => {
        await page.selectOption("#resolve", { label: "nlp / bert" });
        await page.click(".exp-resolution button");
      })(),
    ]);
    assertEquals(await resolved.textContent(), "its name");
    await page.goBack();
    await page.waitForSelector("html[data-islands=hydrated]");
    assertEquals(await resolved.textContent(), "experiment vision / lr-sweep");
    await screenshot(page, "experiments");
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot(page, "experiments-dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 390, height: 800 });
    await screenshot(page, "experiments-phone");
    await page.setViewportSize({ width: 1280, height: 720 });

    // Esc closes the drawer.
    await page.locator("h1").click();
    await page.keyboard.press("Escape");
    await page.waitForFunction("!document.querySelector('#metrics').open");

    // A chip narrows the list to its project; `/` focuses the search, which keeps the chip.
    assertEquals(new Set(await listed(s)), new Set(["lr-sweep", "bert"]));
    await Promise.all([
      page.waitForURL(/project=vision/),
      page.click('.exp-chips a:has-text("vision")'),
    ]);
    await page.waitForSelector("html[data-islands=hydrated]");
    assertEquals(await listed(s), ["lr-sweep"]);
    await page.keyboard.press("/");
    await page.waitForFunction("document.activeElement?.getAttribute('name') === 'q'");
    await page.keyboard.type("zzz");
    await Promise.all([page.waitForURL(/q=zzz/), page.keyboard.press("Enter")]);
    assert(new URL(page.url()).searchParams.get("project") === "vision", page.url());
    assertEquals(await listed(s), []);
    assert((await page.textContent(".exp-empty"))!.includes("zzz"));
    // "All" drops the project and keeps the search.
    await Promise.all([
      page.waitForURL((u) => !u.searchParams.has("project")),
      page.click('.exp-chips a:has-text("All")'),
    ]);
    assertEquals(new URL(page.url()).searchParams.get("q"), "zzz");
    await page.fill("input[name=q]", "BER");
    await Promise.all([page.waitForURL(/q=BER/), page.keyboard.press("Enter")]);
    assertEquals(await listed(s), ["bert"]);
    assertEquals(s.errors, []);
  } finally {
    await rig.close();
  }
});
