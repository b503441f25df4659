/** Islands: server render inside a marker with JSON props, the build, and what a page ships. */
import { assert, assertEquals, assertFalse } from "./assert.ts";
import { Island, islandPropsJson } from "../components/island.tsx";
import LiveStatus from "../islands/LiveStatus.tsx";
import { renderPage } from "../server/console/page.tsx";
import {
  currentIslands,
  islandNames,
  islandsSourceHash,
  loadConsoleAssets,
  prepareIslands,
  REPO_ROOT,
} from "../server/console/assets.ts";

/** The current build, made once for this file when the checkout has none. */
const build = await prepareIslands({ build: true });
const assets = loadConsoleAssets(build);

const decode = (attr: string) =>
  attr.replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");

/** The islands in a rendered page: name and props, as the boot script will read them. */
function markers(html: string): { name: string; props: unknown }[] {
  return [...html.matchAll(/<gpuctl-island data-island="([^"]*)" data-props="([^"]*)">/g)]
    .map((m) => ({ name: m[1], props: JSON.parse(decode(m[2])) }));
}

const hostile = "</script><script>alert(1)</script><!-- \u2028 \" ' & \\ <b>é</b>";

Deno.test("island props round-trip through the page, even strings that end scripts", async () => {
  assert(build.manifest, build.problem ?? "");
  const res = renderPage(
    assets,
    "t",
    <Island component={LiveStatus} props={{ url: hostile }} />,
  );
  const html = await res.text();
  assertEquals(markers(html), [{ name: "LiveStatus", props: { url: hostile } }]);
  assertFalse(html.includes("</script><script>alert"), "no string ends an element");
  assertFalse(html.includes("<!-- "), "no string opens a comment");
  assertEquals((html.match(/<script/g) ?? []).length, 1, "only the boot script");
  assert(html.includes(`<script type="module" src="/static/build/${build.manifest.boot}">`));
});

Deno.test("two instances of one island carry their own props; its modules are preloaded once", async () => {
  assert(build.manifest, build.problem ?? "");
  const html = await renderPage(
    assets,
    "t",
    <div>
      <Island component={LiveStatus} props={{ url: "/a" }} />
      <Island component={LiveStatus} props={{ url: "/b" }} />
    </div>,
  ).text();
  assertEquals(markers(html), [
    { name: "LiveStatus", props: { url: "/a" } },
    { name: "LiveStatus", props: { url: "/b" } },
  ]);
  assertEquals((html.match(/<script/g) ?? []).length, 1, "one boot script for both");
  // The island's module and every chunk it imports, fetched while the page is parsed.
  const files = [...html.matchAll(/<link rel="modulepreload" href="\/static\/build\/([^"]+)"/g)]
    .map((m) => m[1]);
  const own = build.manifest.files.find((f) => f.startsWith("LiveStatus-"))!;
  assertEquals(files[0], own, "the island's own module first");
  assertEquals(files.length, new Set(files).size, "each once");
  const dir = new URL("../static/build/", import.meta.url).pathname;
  for (
    const m of Deno.readTextFileSync(`${dir}${own}`).matchAll(
      /(?:from|import)\s*"\.\/([^"]+\.js)"/g,
    )
  ) {
    assert(files.includes(m[1]), `${m[1]} preloaded`);
  }
  for (const f of files) assert(build.manifest.files.includes(f), f);
  assertFalse(files.some((f) => f.startsWith("Workspace-")), "not another island's");
});

Deno.test("a page without islands ships no script at all", async () => {
  const html = await renderPage(assets, "t", <p>static</p>).text();
  assertFalse(html.includes("<script"), html);
  assertFalse(html.includes("modulepreload"), html);
});

Deno.test("island props that would not survive JSON are refused, naming the value", () => {
  const cases: [unknown, string][] = [
    [{ a: { b: () => 1 } }, "props.a.b is a function"],
    [{ a: [1, undefined] }, "props.a[1] is undefined"],
    [{ when: new Date(0) }, "props.when is a Date object"],
    [{ n: NaN }, "props.n is NaN"],
  ];
  for (const [props, message] of cases) {
    let err: Error | null = null;
    try {
      islandPropsJson("X", props);
    } catch (e) {
      err = e as Error;
    }
    assert(err?.message.includes(message), `${message}: ${err?.message}`);
  }
  assertEquals(
    islandPropsJson("X", { a: [1, "s", null, true, { b: 2 }] }),
    '{"a":[1,"s",null,true,{"b":2}]}',
  );
});

Deno.test("every island is named like its file and imports nothing outside islands/", async () => {
  const names = islandNames();
  assert(names.includes("LiveStatus"));
  for (const name of names) {
    const mod = await import(`${REPO_ROOT}/islands/${name}.tsx`);
    assertEquals(mod.default.name, name, `islands/${name}.tsx's default export`);
  }
  // Every file under islands/ that ships to the browser (its tests stay home).
  const files = (dir: string): string[] =>
    [...Deno.readDirSync(`${REPO_ROOT}/${dir}`)].flatMap((e) =>
      e.isDirectory ? files(`${dir}/${e.name}`) : [`${dir}/${e.name}`]
    ).filter((f) => !f.endsWith("_test.ts"));
  for (const file of files("islands")) {
    const text = Deno.readTextFileSync(`${REPO_ROOT}/${file}`);
    for (const m of text.matchAll(/from\s+"([^"]+)"/g)) {
      const spec = m[1];
      // Browser libraries pinned in deno.json are fine; the server's code is not.
      // Relative imports stay inside islands/ (islands/chart/ reads ../_format.ts), except for
      // the dependency-free formatting module and API limits, and types from protocol/ (erased).
      const path = spec.startsWith(".")
        ? new URL(spec, `file://${REPO_ROOT}/${file}`).pathname
        : "";
      const typeOnly = new RegExp(
        `import type [^;]*?from\\s+"${spec.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}"`,
      )
        .test(text);
      const inside = path.startsWith(`${REPO_ROOT}/islands/`) ||
        path === `${REPO_ROOT}/lib/format.ts` || path === `${REPO_ROOT}/protocol/limits.ts` ||
        (typeOnly && path.startsWith(`${REPO_ROOT}/protocol/`));
      const ok = inside || /^preact(\/|$)|^@preact\/|^chart\.js$/.test(spec);
      assert(
        ok,
        `${file} imports "${spec}": islands import only islands/, lib/format.ts, ` +
          "protocol/limits.ts, types from " +
          "protocol/, Preact and chart.js",
      );
    }
  }
});

Deno.test("the build is current after building, and serves hashed files with immutable caching", async () => {
  assert(build.manifest);
  assertEquals(currentIslands().manifest?.boot, build.manifest.boot);
  assert(/^boot-[A-Za-z0-9]{10}\.js$/.test(build.manifest.boot), build.manifest.boot);
  const { withHarness } = await import("./_harness.ts");
  await withHarness(async (h) => {
    for (const f of build.manifest!.files) {
      const res = await h.app.fetch(new Request(`http://t/static/build/${f}`));
      assertEquals(res.status, 200, f);
      assertEquals(res.headers.get("cache-control"), "public, max-age=31536000, immutable");
      assert(res.headers.get("content-type")!.startsWith("text/javascript"), f);
      await res.body?.cancel();
    }
    for (const bad of ["build/manifest.json", "style.css", "build/../../deno.json", "x.js"]) {
      const res = await h.app.fetch(new Request(`http://t/static/${bad}`));
      assertEquals(res.status, 404, bad);
      await res.body?.cancel();
    }
  });
});

Deno.test("a checkout whose bundles are missing, stale, or cannot be written says so and what to run", async () => {
  const root = await Deno.makeTempDir({ prefix: "gpuctl-islands-" });
  try {
    await Deno.mkdir(`${root}/islands`);
    await Deno.writeTextFile(`${root}/islands/Hello.tsx`, "export default function Hello() {}\n");
    const missing = currentIslands(root);
    assertEquals(missing.manifest, null);
    assert(missing.problem!.includes("missing") && missing.problem!.includes("deno task build"));
    // A build of other sources (an island edited since) is stale, not served.
    await Deno.mkdir(`${root}/static/build`, { recursive: true });
    await Deno.writeTextFile(
      `${root}/static/build/manifest.json`,
      JSON.stringify({
        format: 2,
        source_hash: islandsSourceHash(root),
        boot: "boot-x.js",
        files: ["boot-x.js"],
        islands: ["Hello"],
        preload: { Hello: [] },
      }),
    );
    assertEquals(currentIslands(root).manifest?.boot, "boot-x.js");
    await Deno.writeTextFile(`${root}/islands/Hello.tsx`, "export default function Hello() {}//\n");
    const stale = currentIslands(root);
    assertEquals(stale.manifest, null);
    assert(stale.problem!.includes("out of date"), stale.problem!);
    await Deno.remove(`${root}/static`, { recursive: true });
    // A server that may not write there (a read-only checkout) keeps serving, without islands.
    const script = `${root}/probe.ts`;
    await Deno.writeTextFile(
      script,
      `import { prepareIslands } from ${
        JSON.stringify(`${REPO_ROOT}/server/console/assets.ts`)
      };\n` +
        `console.log(JSON.stringify(await prepareIslands({ build: true, root: ${
          JSON.stringify(root)
        } })));\n`,
    );
    const probe = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", `${REPO_ROOT}/deno.json`, "--allow-read", "--allow-env", script],
      cwd: REPO_ROOT,
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(probe.stdout);
    assert(probe.success, `${text}${new TextDecoder().decode(probe.stderr)}`);
    const out = JSON.parse(text.trim().split("\n").at(-1)!);
    assertEquals(out.manifest, null);
    assert(out.problem.includes("cannot be built there"), out.problem);
    assert(out.problem.includes("deno task build"), out.problem);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
