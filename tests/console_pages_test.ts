/**
 * The console's pages in Chromium against a real server and an agent with fake GPUs: every
 * page renders without console errors, the failure card of an OOM run, markup in a run name
 * shown as text, a job submitted from the browser that runs, its live log, cancel behind a
 * confirmation, validation errors next to their fields, and a read session without write
 * controls. Each step saves a screenshot into test-artifacts/console/.
 */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, type Session, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const TRAIN = `${ROOT}/examples/synthetic/train.py`;
const MARKUP = "<img src=x onerror=alert(1)>";

async function hydrated(s: Session, url: string): Promise<void> {
  await s.page.goto(url);
  await s.page.waitForSelector("html[data-islands=hydrated]");
}

Deno.test("the console's pages in Chromium, with a running agent", async (t) => {
  const rig = await startConsoleRig({ fakeGpus: 2 });
  const ended = async (id: string) =>
    await until(
      async () => {
        const j = (await rig.call("GET", `/api/jobs/${id}`)).json;
        return ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"].includes(j.status) ? j : null;
      },
      60_000,
      `job ${id} ended`,
    );
  try {
    const submit = async (body: Record<string, unknown>) => {
      const res = await rig.call("POST", "/api/jobs", {
        working_dir: rig.home,
        gpus: 1,
        project: "vision",
        experiment: "sweep",
        ...body,
      });
      assertEquals(res.status, 201, res.text);
      return res.json.id as string;
    };
    const oomJob = await submit({
      name: "oom",
      command: ["python3", TRAIN, "--steps", "100", "--fail-oom-at", "5"],
    });
    const markupJob = await submit({
      name: MARKUP,
      command: ["python3", TRAIN, "--steps", "30"],
      max_steps: 30,
    });
    const oomRun = (await ended(oomJob)).run_id as string;
    const markupRun = (await ended(markupJob)).run_id as string;
    const admin = await rig.context(rig.adminToken);

    await t.step("every page renders without console errors, light and dark", async () => {
      const pages: [string, string][] = [
        ["/", "dashboard"],
        ["/runs", "runs"],
        ["/experiments", "experiments"],
        [`/runs/${oomRun}`, "run-failed"],
        [`/runs/${markupRun}`, "run-succeeded"],
        [`/runs/${markupRun}?tab=metrics`, "run-metrics"],
        [`/runs/${markupRun}?tab=checkpoints`, "run-checkpoints"],
        [`/runs/${markupRun}?tab=evaluations`, "run-evaluations"],
        [`/runs/${markupRun}?tab=events`, "run-events"],
        ["/jobs", "jobs"],
        ["/nodes", "nodes"],
        ["/events", "events"],
        ["/events?severity=critical&live=1", "events-critical-live"],
      ];
      for (const [path, name] of pages) {
        await hydrated(admin, `${rig.url}${path}`);
        await admin.page.waitForSelector(".fleet[data-live=connected]");
        assertEquals(admin.errors, [], path);
        await screenshot(admin.page, `page-${name}`);
      }
      await admin.page.emulateMedia({ colorScheme: "dark" });
      for (const [path, name] of pages.slice(0, 3)) {
        await hydrated(admin, `${rig.url}${path}`);
        await screenshot(admin.page, `page-${name}-dark`);
      }
      await admin.page.emulateMedia({ colorScheme: "light" });
      await admin.page.setViewportSize({ width: 390, height: 800 });
      await hydrated(admin, `${rig.url}/`);
      await screenshot(admin.page, "page-dashboard-phone");
      await hydrated(admin, `${rig.url}/jobs`);
      await screenshot(admin.page, "page-jobs-phone");
      await admin.page.setViewportSize({ width: 1280, height: 720 });
      assertEquals(admin.errors, []);
    });

    await t.step("the failure card shows for an OOM run, and retry warns", async () => {
      await hydrated(admin, `${rig.url}/runs/${oomRun}`);
      const card = await admin.page.textContent(".failure-card");
      assert(card!.includes("out of memory"), card!);
      assert(card!.includes("Suggested fixes"), card!);
      const retry = await admin.page.textContent(".run-actions button[data-action]");
      assert(retry!.includes("will fail the same way"), retry!);
      await screenshot(admin.page, "failure-card");
    });

    await t.step("a run named like markup renders as text", async () => {
      let dialogs = 0;
      admin.page.on("dialog", (d) => {
        dialogs++;
        d.dismiss();
      });
      for (const path of [`/runs/${markupRun}`, "/runs", "/jobs", "/events"]) {
        await hydrated(admin, `${rig.url}${path}`);
        assertEquals(await admin.page.locator("main img").count(), 0, path);
      }
      await hydrated(admin, `${rig.url}/runs/${markupRun}`);
      assertEquals(await admin.page.textContent(".run-title"), MARKUP);
      assertEquals(dialogs, 0);
      assertEquals(admin.errors, []);
      await screenshot(admin.page, "markup-run");
    });

    await t.step("a refused submission names each field and keeps what was typed", async () => {
      const { page } = admin;
      await hydrated(admin, `${rig.url}/jobs?submit=1`);
      await page.fill("#f-command", "python3 train.py");
      await page.fill("#f-gpus", "two");
      await Promise.all([page.waitForURL(`${rig.url}/jobs`), page.click("#submit .primary")]);
      assert((await page.textContent("#f-name-error"))!.includes("must not be empty"));
      assert((await page.textContent("#f-gpus-error"))!.includes('"two" is not a whole number'));
      assert((await page.textContent("#f-working_dir-error"))!.includes("must not be empty"));
      assertEquals(await page.inputValue("#f-command"), "python3 train.py");
      assertEquals(await page.inputValue("#f-gpus"), "two");
      await screenshot(page, "submit-refused");
      // The refusal itself is a 400, which Chromium reports; nothing else may be.
      assertEquals(admin.errors.filter((e) => !e.includes("400 (Bad Request)")), []);
      admin.errors.length = 0;
    });

    await t.step("a write session sets the experiment's primary metric from a run", async () => {
      const { page } = admin;
      await hydrated(admin, `${rig.url}/runs/${markupRun}?tab=metrics`);
      const row = page.locator("tr", { hasText: "eval/accuracy" });
      await row.locator("select").selectOption("max");
      await Promise.all([
        page.waitForSelector(".notice"),
        row.locator("button[data-action=primary]").click(),
      ]);
      assert((await page.textContent(".notice"))!.includes('"eval/accuracy"'));
      const run = (await rig.call("GET", `/api/runs/${markupRun}`)).json;
      assertEquals(run.primary_metric.key, "eval/accuracy");
      assertEquals(run.primary_metric.direction, "max");
      await screenshot(page, "primary-set");
    });

    let browserJob = "";
    await t.step("a job submitted from the browser appears in Jobs and runs", async () => {
      const { page } = admin;
      await hydrated(admin, `${rig.url}/jobs?submit=1`);
      await page.fill("#f-name", "from the browser");
      await page.fill(
        "#f-command",
        `python3 ${TRAIN} --steps 3000 --sleep 0.05 --eval-every 5`,
      );
      await page.fill("#f-working_dir", rig.home);
      await page.fill("#f-gpus", "1");
      await page.fill("#f-max_steps", "3000");
      await page.click("#submit .primary");
      await page.waitForSelector(".notice");
      browserJob = /#(j-\w+)$/.exec(page.url())![1];
      assert((await page.textContent(".notice"))!.includes("from the browser"));
      // The row turns RUNNING without a reload.
      await page.waitForSelector(`tr[data-job="${browserJob}"][data-status=RUNNING]`, {
        timeout: 30_000,
      });
      await screenshot(page, "submitted-running");
    });

    await t.step("the live log grows while the job prints", async () => {
      const job = (await rig.call("GET", `/api/jobs/${browserJob}`)).json;
      const { page } = admin;
      await hydrated(admin, `${rig.url}/runs/${job.run_id}`);
      await page.waitForSelector(".log-tail[data-state=connected]");
      const count = async () => Number(await page.textContent(".log-count"));
      const before = await count();
      await until(async () => await count() >= before + 3, 30_000, "three more log lines");
      await screenshot(page, "live-log");
    });

    await t.step("cancel asks for confirmation before it cancels", async () => {
      const { page } = admin;
      await hydrated(admin, `${rig.url}/jobs`);
      const row = `tr[data-job="${browserJob}"]`;
      await page.click(`${row} button[data-action=Cancel]`);
      await page.waitForSelector(`${row} .confirm-q`);
      await screenshot(page, "cancel-confirm");
      assertEquals((await rig.call("GET", `/api/jobs/${browserJob}`)).json.status, "RUNNING");
      await page.click(`${row} button[data-confirm=yes]`);
      assertEquals((await ended(browserJob)).status, "CANCELLED");
      await page.waitForSelector(`tr[data-job="${browserJob}"][data-status=CANCELLED]`);
      assertEquals(admin.errors, []);
    });

    await t.step(
      "a read session sees no write controls, and the server refuses anyway",
      async () => {
        const made = await rig.call("POST", "/api/tokens", { name: "viewer", scope: "read" });
        const viewer = await rig.context(made.json.token);
        const { page } = viewer;
        for (
          const path of ["/", "/jobs", `/runs/${oomRun}`, `/runs/${markupRun}?tab=checkpoints`]
        ) {
          await hydrated(viewer, `${rig.url}${path}`);
          assertEquals(await page.locator("main form[method=post]").count(), 0, path);
          assertEquals(await page.locator("main button[data-action]").count(), 0, path);
          assertEquals(await page.locator(".title-line .actions").count(), 0, path);
        }
        await screenshot(page, "read-jobs");
        const refused = await page.evaluate(async (id) => {
          const res = await fetch(`/jobs/${id}/retry`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: "confirmed=1",
          });
          return res.status;
        }, oomJob);
        assertEquals(refused, 403);
        assertEquals((await rig.call("GET", `/api/jobs/${oomJob}`)).json.status, "FAILED");
        assertEquals(viewer.errors.filter((e) => !e.includes("403")), []);
      },
    );

    await t.step("a checkpoint is evaluated from its row, and the result is listed", async () => {
      const { page } = admin;
      await hydrated(admin, `${rig.url}/runs/${markupRun}?tab=checkpoints`);
      const form = page.locator("tr[data-checkpoint] form").first();
      // The project has no eval_command, so the row asks for one.
      await form.locator("input[name=command]").fill(
        `python3 ${ROOT}/examples/synthetic/evaluate.py`,
      );
      await Promise.all([page.waitForSelector(".notice"), form.locator("button").click()]);
      assert((await page.textContent(".notice"))!.includes("queued as job"));
      await until(
        async () => {
          const cps = (await rig.call("GET", `/api/runs/${markupRun}/checkpoints`)).json.items;
          return cps[0].evaluations[0]?.status === "COMPLETED";
        },
        60_000,
        "the evaluation completed",
      );
      await hydrated(admin, `${rig.url}/runs/${markupRun}?tab=evaluations`);
      assert((await page.textContent("tr[data-evaluation]"))!.includes("eval/loss"));
      await screenshot(page, "evaluated");
    });

    await t.step(
      "the Events page's live switch streams new events, and says so in the URL",
      async () => {
        const { page } = admin;
        await hydrated(admin, `${rig.url}/events?type=JOB_QUEUED`);
        await page.check(".live-switch input");
        await until(() => page.url().endsWith("live=1"), 5_000, "live=1 in the URL");
        const id = await submit({ name: "watched live", command: ["true"], gpus: 8 });
        await page.waitForSelector(`.event-list li:has-text("${id}")`, { timeout: 20_000 });
        await page.uncheck(".live-switch input");
        await screenshot(page, "events-live");
        await rig.call("POST", `/api/jobs/${id}/cancel`);
      },
    );

    await t.step("keyboard: every page's g shortcut opens it, / focuses the search", async () => {
      const { page } = admin;
      // The shortcut each nav link advertises in its title ("g s") is the one that works.
      await hydrated(admin, `${rig.url}/`);
      const links = await page.locator("nav[aria-label=Pages] a").evaluateAll((as) =>
        as.map((a) => [a.getAttribute("href"), a.getAttribute("title")])
      );
      assertEquals(links.length, 7);
      for (const [href, title] of links) {
        const key = /^g (\w)$/.exec(title ?? "")?.[1];
        assert(key, `${href} advertises a shortcut: ${title}`);
        await hydrated(admin, `${rig.url}${href === "/" ? "/runs" : "/"}`);
        await page.keyboard.press("g");
        await Promise.all([page.waitForURL(`${rig.url}${href}`), page.keyboard.press(key)]);
      }
      await hydrated(admin, `${rig.url}/runs`);
      await page.keyboard.press("/");
      assertEquals(await page.evaluate("document.activeElement?.getAttribute('name')"), "q");
    });

    await t.step(
      "an open page says it is reconnecting while the server restarts, then goes on live",
      async () => {
        const { page } = admin;
        await hydrated(admin, `${rig.url}/`);
        await page.waitForSelector(".fleet[data-live=connected]");
        await rig.stopServer();
        await page.waitForSelector(".reconnecting", { timeout: 15_000 });
        await screenshot(page, "reconnecting");
        await rig.startServer();
        await page.waitForSelector(".fleet[data-live=connected]", { timeout: 30_000 });
        assertEquals(await page.locator(".reconnecting").count(), 0);
        // Still signed in, and changes reach the page again without a reload.
        const id = await submit({ name: "after the restart", command: ["true"], gpus: 8 });
        await page.waitForSelector(`a[href="/jobs#${id}"]`, { timeout: 20_000 });
        admin.errors.length = 0; // the stream's refused reconnects while the server was away
      },
    );
  } finally {
    await rig.close();
  }
});
