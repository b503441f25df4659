/**
 * The console's forms without a browser: a write action without its confirmation asks on a
 * page of its own, a confirmed one acts and returns with a notice, a read session is refused
 * whatever it sends, a refused submission names its fields, and an unknown run is a 404 page.
 */
import { assert, assertEquals } from "./assert.ts";
import { consoleSession as sessionOf, type Harness, withHarness } from "./_harness.ts";

function post(h: Harness, cookie: string, path: string, form: Record<string, string>) {
  return h.app.fetch(
    new Request(`http://gpuctl.test${path}`, {
      method: "POST",
      headers: { cookie, origin: "http://gpuctl.test" },
      body: new URLSearchParams(form),
      redirect: "manual",
    }),
  );
}

async function queuedJob(h: Harness): Promise<string> {
  const res = await h.call("POST", "/api/jobs", {
    body: { name: "waits", command: ["true"], working_dir: "/tmp", gpus: 1 },
  });
  return res.json.id;
}

Deno.test("cancel without its confirmation asks first; confirmed, it cancels and says so", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "admin");
    const id = await queuedJob(h);
    const ask = await post(h, cookie, `/jobs/${id}/cancel`, { next: "/jobs" });
    assertEquals(ask.status, 200);
    const page = await ask.text();
    assert(page.includes(`Cancel job ${id}?`) && page.includes('name="confirmed"'), page);
    assertEquals((await h.call("GET", `/api/jobs/${id}`)).json.status, "QUEUED");
    const done = await post(h, cookie, `/jobs/${id}/cancel`, { next: "/jobs", confirmed: "1" });
    assertEquals(done.status, 303);
    assert(
      done.headers.get("location")!.startsWith("/jobs?notice="),
      done.headers.get("location")!,
    );
    assertEquals((await h.call("GET", `/api/jobs/${id}`)).json.status, "CANCELLED");
    // Another site's address in `next` is not followed.
    const again = await post(h, cookie, `/jobs/${id}/retry`, {
      next: "//evil.test/",
      confirmed: "1",
    });
    assert(again.headers.get("location")!.startsWith("/?notice="), again.headers.get("location")!);
  });
});

Deno.test("a read session's forms are refused with a page that says why, and change nothing", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "read");
    const id = await queuedJob(h);
    for (
      const [path, form] of [
        [`/jobs/${id}/cancel`, { confirmed: "1" }],
        ["/jobs", { name: "x", command: "true", working_dir: "/", gpus: "0" }],
        ["/checkpoints/c-1/evaluate", { suite: "s", confirmed: "1" }],
        ["/runs/r-1/primary", { key: "loss", direction: "min" }],
      ] as const
    ) {
      const res = await post(h, cookie, path, form);
      assertEquals(res.status, 403, path);
      assert((await res.text()).includes("needs a token of scope &quot;write&quot;"), path);
    }
    assertEquals((await h.call("GET", `/api/jobs/${id}`)).json.status, "QUEUED");
    assertEquals((await h.call("GET", "/api/jobs")).json.items.length, 1);
  });
});

Deno.test("a refused submission comes back 400 with each field's problem and what was typed", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "admin");
    const res = await post(h, cookie, "/jobs", {
      name: "<b>x</b>",
      command: "python train.py",
      working_dir: "",
      gpus: "-1",
    });
    assertEquals(res.status, 400);
    const page = await res.text();
    assert(page.includes('id="f-working_dir-error"'), page);
    assert(page.includes('id="f-gpus-error"'), page);
    assert(
      page.includes('value="&lt;b>x&lt;/b>"') || page.includes('value="&lt;b&gt;x&lt;/b&gt;"'),
      page,
    );
    assertEquals((await h.call("GET", "/api/jobs")).json.items.length, 0);
  });
});

Deno.test("an unknown run is a 404 page inside the console, naming the id", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "read");
    const res = await h.app.fetch(
      new Request("http://gpuctl.test/runs/r-nope", { headers: { cookie } }),
    );
    assertEquals(res.status, 404);
    const page = await res.text();
    assert(page.includes("Run &quot;r-nope&quot; does not exist"), page);
    assert(page.includes("Sign out"), "inside the shell");
  });
});
