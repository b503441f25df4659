/** The console in a real browser: sign-in, hydration, scopes, cross-origin refusal, escaping. */
import { assert, assertEquals } from "./assert.ts";
import { screenshot, startConsoleRig } from "./_browser.ts";
import { until } from "./_processes.ts";
import { Island } from "../components/island.tsx";
import LiveStatus from "../islands/LiveStatus.tsx";
import { renderPage } from "../server/console/page.tsx";
import { currentIslands, loadConsoleAssets } from "../server/console/assets.ts";

Deno.test("the console in Chromium", async (t) => {
  const rig = await startConsoleRig();
  try {
    const admin = await rig.context(rig.adminToken);

    await t.step(
      "an admin signs in; / renders without console errors and its island goes live",
      async () => {
        const { page, errors } = admin;
        await page.waitForSelector("html[data-islands=hydrated]");
        await page.waitForSelector(".fleet[data-live=connected]");
        assertEquals(await page.textContent(".who-name"), "admin");
        assertEquals(await page.textContent(".who .badge"), "admin");
        assertEquals(await page.locator(".read-only").count(), 0);
        // A change on the server reaches the open page: the queue shows the new job.
        const job = await rig.call("POST", "/api/jobs", {
          name: "<b>not bold</b>",
          command: ["true"],
          working_dir: "/tmp",
          gpus: 1,
        });
        assertEquals(job.status, 201, job.text);
        await page.waitForSelector(`a[href="/jobs#${job.json.id}"]`);
        const shown = await page.textContent(`a[href="/jobs#${job.json.id}"]`);
        assertEquals(shown, "<b>not bold</b>", "shown as text");
        assertEquals(await page.locator("main b").count(), 0);
        assertEquals(await page.textContent(".fleet"), "0/0 GPUs busy·1 queued");
        assertEquals(errors, []);
        await screenshot(page, "admin-home");
      },
    );

    await t.step("the same page in the dark scheme", async () => {
      await admin.page.emulateMedia({ colorScheme: "dark" });
      await screenshot(admin.page, "admin-home-dark");
      await admin.page.emulateMedia({ colorScheme: "light" });
    });

    await t.step("two instances of one island hydrate with their own props", async () => {
      // A page of this origin with two LiveStatus islands on differently filtered streams.
      const html = await renderPage(
        loadConsoleAssets(currentIslands()),
        "two",
        <main>
          <Island component={LiveStatus} props={{ url: "/api/events/stream" }} />
          <Island component={LiveStatus} props={{ url: "/api/events/stream?severity=critical" }} />
        </main>,
      ).text();
      const { page, errors } = admin;
      await page.route(
        `${rig.url}/two-islands`,
        (r) => r.fulfill({ body: html, contentType: "text/html" }),
      );
      await page.goto(`${rig.url}/two-islands`);
      await until(
        async () => await page.locator(".live[data-state=connected]").count() === 2,
        60_000,
        "both islands live",
      );
      await rig.call("POST", "/api/jobs", {
        name: "second",
        command: ["true"],
        working_dir: "/tmp",
        gpus: 1,
      });
      await page.waitForSelector(".live-last");
      const counts = await page.locator(".live .muted").allTextContents();
      assertEquals(counts, ["1 since this page opened", "none since this page opened"]);
      assertEquals(errors, []);
      await screenshot(page, "two-islands");
      await page.goto(`${rig.url}/`);
    });

    await t.step(
      "a read token's session is marked read-only and cannot change anything",
      async () => {
        const made = await rig.call("POST", "/api/tokens", { name: "viewer", scope: "read" });
        const { page, errors } = await rig.context(made.json.token);
        await page.waitForSelector(".fleet[data-live=connected]");
        assertEquals(await page.textContent(".read-only"), "read-only");
        const status = await page.evaluate(async () => {
          const res = await fetch("/api/jobs", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ name: "x", command: ["true"], working_dir: "/", gpus: 0 }),
          });
          return `${res.status} ${(await res.json()).error.code}`;
        });
        assertEquals(status, "403 WriteScopeError");
        assertEquals(errors.filter((e) => !e.includes("403")), []);
        await screenshot(page, "read-home");
      },
    );

    await t.step(
      "a state change from another origin is refused, and the session stays",
      async () => {
        const before = (await rig.call("GET", "/api/tokens")).json.items.length;
        // Another origin on the same host (another port): the same site, so the browser still
        // sends the SameSite=Strict cookie; only the origin check stands in the way.
        const target = rig.url;
        const evil = Deno.serve(
          { hostname: "127.0.0.1", port: 0, onListen: () => {} },
          () =>
            new Response(
              `<!doctype html><form id=f method=post action="${target}/logout"></form>
           <script>
             fetch("${target}/api/tokens", { method: "POST", mode: "no-cors",
               credentials: "include", body: '{"name":"evil","scope":"admin"}' })
               .finally(() => document.getElementById("f").submit());
           </script>`,
              { headers: { "content-type": "text/html" } },
            ),
        );
        try {
          const { page } = admin;
          await page.goto(`http://127.0.0.1:${evil.addr.port}/`);
          await page.waitForURL(`${target}/logout`);
          await page.waitForSelector("h1");
          assert((await page.textContent("h1"))!.startsWith("Refused"), await page.content());
          await screenshot(page, "cross-origin-refused");
          const after = (await rig.call("GET", "/api/tokens")).json.items.length;
          assertEquals(after, before, "no token was made");
          await page.goto(`${target}/`);
          await page.waitForSelector(".fleet[data-live=connected]");
          assertEquals(await page.textContent(".who-name"), "admin", "still signed in");
        } finally {
          await evil.shutdown();
        }
      },
    );

    await t.step("a token named like markup renders as text", async () => {
      const name = "<img src=x onerror=alert(1)>";
      const made = await rig.call("POST", "/api/tokens", { name, scope: "read" });
      const { page, errors } = await rig.context(made.json.token);
      let dialogs = 0;
      page.on("dialog", (d) => {
        dialogs++;
        d.dismiss();
      });
      await page.waitForSelector(".fleet[data-live=connected]");
      assertEquals(await page.textContent(".who-name"), name);
      assertEquals(await page.locator("img").count(), 0);
      assertEquals(dialogs, 0);
      assertEquals(errors, []);
      await screenshot(page, "markup-name");
    });

    await t.step("signing out ends the session; pages then ask to sign in", async () => {
      const { page } = admin;
      await Promise.all([page.waitForURL(`${rig.url}/login`), page.click(".who button")]);
      await screenshot(page, "login");
      await page.goto(`${rig.url}/`);
      await until(() => page.url() === `${rig.url}/login`, 30_000, "redirect to /login");
      assertEquals(await page.locator("script").count(), 0, "the sign-in page ships no script");
    });
  } finally {
    await rig.close();
  }
});
