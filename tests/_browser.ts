/**
 * Console tests in a real browser: a real server process, Debian's Chromium driven by
 * Playwright, and a screenshot of each step's page in test-artifacts/console/.
 */
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { prepareIslands } from "../server/console/assets.ts";
import { api, nodeOnline, type Proc, startAgentProcess, startServerProcess } from "./_processes.ts";

export const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = new URL("../test-artifacts/console/", import.meta.url).pathname;

/** A server with its island bundles, and a browser, for one test file. */
export interface ConsoleRig {
  /** A temporary folder of the rig's own (jobs may work in it). */
  home: string;
  url: string;
  adminToken: string;
  /** The API as the admin, by bearer token. */
  call: ReturnType<typeof api>;
  browser: Browser;
  /** Stops the server process (the agent stays and keeps trying to reconnect). */
  stopServer(): Promise<void>;
  /** Starts it again on the same port over the same folder. */
  startServer(): Promise<void>;
  /** A fresh browser context (its own cookies), signed in with `token` unless null. */
  context(token: string | null): Promise<Session>;
  close(): Promise<void>;
}

export interface Session {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught exceptions the page reported so far. */
  errors: string[];
}

/** Fails with what to do when Chromium is not installed (CI installs it in .ci/run). */
function requireChromium(): void {
  try {
    Deno.statSync(CHROMIUM);
  } catch {
    throw new Error(
      `The console's browser tests need Chromium at ${CHROMIUM}: ` +
        "install it with `apt-get update && apt-get install -y chromium` (.ci/run does)",
    );
  }
}

/** A server (and with `fakeGpus`, an agent with that many fake GPUs) and Chromium. */
export async function startConsoleRig(opts: { fakeGpus?: number } = {}): Promise<ConsoleRig> {
  requireChromium();
  const islands = await prepareIslands({ build: true });
  if (!islands.manifest) throw new Error(`Cannot build the islands: ${islands.problem}`);
  const home = await Deno.makeTempDir({ prefix: "gpuctl-console-" });
  await Deno.mkdir(`${home}/server`);
  let server = await startServerProcess(`${home}/server`);
  let serverUp = true;
  let agent: Proc | null = null;
  let browser: Browser;
  try {
    if (opts.fakeGpus !== undefined) {
      agent = startAgentProcess({
        server: server.url,
        token: server.agentToken,
        dataDir: `${home}/agent`,
        fakeGpus: opts.fakeGpus,
      });
      await nodeOnline(api(server.url, server.adminToken));
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Playwright gives each launch a new empty profile directory of its own.
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  } catch (err) {
    await agent?.kill();
    await server.proc.kill();
    throw err;
  }
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  const contexts: BrowserContext[] = [];
  return {
    home,
    url: server.url,
    adminToken: server.adminToken,
    call: api(server.url, server.adminToken),
    browser,
    async stopServer() {
      await server.proc.kill();
      serverUp = false;
    },
    async startServer() {
      // The same folder and port: the same database, tokens and session key.
      server = await startServerProcess(`${home}/server`, server.port);
      serverUp = true;
    },
    async context(token) {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 720 },
        colorScheme: "light",
      });
      contexts.push(context);
      // Generous: on a loaded machine a page and its streams take a while; a wait ends as
      // soon as its condition holds.
      context.setDefaultTimeout(60_000);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(String(e)));
      if (token !== null) await signIn(page, server.url, token);
      return { context, page, errors };
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close();
      await agent?.kill();
      if (serverUp) await server.proc.kill();
      await Deno.remove(home, { recursive: true });
    },
  };
}

/** Signs in through the form, as a person would, and waits for the console's start page. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(`${base}/`), page.click("button[type=submit]")]);
}

/** Saves a full-page screenshot as test-artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}
