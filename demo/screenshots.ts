// deno-lint-ignore-file no-console -- `deno task screenshots` says what it wrote
/**
 * `deno task screenshots`: starts the demo in a temporary GPUCTL_HOME, waits until its day
 * is under way (baseline done, the sweep training, the OOM failure diagnosed, a job queued),
 * and has Chromium save each console page into docs/screenshots/, light and dark.
 */
import { chromium } from "playwright-core";
import { demoSettled } from "./seed.ts";
import { startDemo } from "./server.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const OUT = `${ROOT}/docs/screenshots`;
const CHROMIUM = "/usr/bin/chromium";

if (import.meta.main) {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-screenshots-" });
  // A free port: the demo's own 8600 may be in use by a real server.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const demo = await startDemo({ home, port, quiet: true, sweepSleep: 0.5 });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync"],
  });
  try {
    await demoSettled(demo.call, demo.jobs);
    const runOf = async (job: string) =>
      (await demo.call("GET", `/api/jobs/${job}`)).json.run_id as string;
    const baseline = await runOf(demo.jobs.baseline);
    const oom = await runOf(demo.jobs.oom);
    const sweep = await runOf(demo.jobs.sweep[2]);
    const sweepRuns: string[] = [];
    for (const job of demo.jobs.sweep) sweepRuns.push(await runOf(job));
    const sweepRun = (await demo.call("GET", `/api/runs/${sweep}`)).json;
    const experiment = (await demo.call(
      "GET",
      `/api/experiments?project=${encodeURIComponent(sweepRun.project)}`,
    )).json.items.find((e: { name: string }) => e.name === sweepRun.experiment);
    const pages: [string, string][] = [
      ["dashboard", "/"],
      ["runs", "/runs"],
      ["experiments", "/experiments"],
      ["workspace", `/experiments/${experiment.id}`],
      ["compare", `/compare?runs=${sweepRuns.join(",")}`],
      ["run-running", `/runs/${sweep}`],
      ["run-failed", `/runs/${oom}`],
      ["run-metrics", `/runs/${baseline}?tab=metrics`],
      ["run-checkpoints", `/runs/${baseline}?tab=checkpoints`],
      ["run-evaluations", `/runs/${baseline}?tab=evaluations`],
      ["jobs", "/jobs"],
      ["nodes", "/nodes"],
      ["events", "/events"],
    ];
    await Deno.mkdir(OUT, { recursive: true });
    for (const scheme of ["light", "dark"] as const) {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        colorScheme: scheme,
      });
      const page = await context.newPage();
      await page.goto(`${demo.url}/login`);
      await page.fill("#token", demo.adminToken);
      await Promise.all([page.waitForURL(`${demo.url}/`), page.click("button[type=submit]")]);
      for (const [name, path] of pages) {
        await page.goto(`${demo.url}${path}`);
        await page.waitForSelector("html[data-islands=hydrated]");
        await page.waitForSelector(".fleet[data-live=connected]");
        const file = `${OUT}/${name}-${scheme}.png`;
        await page.screenshot({ path: file, fullPage: name !== "events" });
        console.log(file.slice(ROOT.length + 1));
      }
      await context.close();
    }
  } finally {
    await browser.close();
    await demo.stop();
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}
