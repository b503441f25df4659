/**
 * The console's page table is generated from routes/ (`deno task build`): the committed
 * routes/_manifest.ts must be what the tree gives now, so a page added without a build fails
 * here (and in CI) instead of silently not being served.
 */
import { assertEquals } from "./assert.ts";
import { join } from "node:path";
import { MANIFEST_PATH, pageModules, routeManifest } from "../server/console/route_manifest.ts";
import { pageRoutes } from "../server/console/mod.ts";

Deno.test("routes/_manifest.ts is what `deno task build` writes from routes/ now", () => {
  assertEquals(
    Deno.readTextFileSync(MANIFEST_PATH),
    routeManifest(pageModules()),
    "routes/_manifest.ts is out of date: run `deno task build` and commit it",
  );
});

Deno.test("page modules: routes/<name>.tsx and routes/<name>/mod.tsx; parts, tests and tabs are not pages", () => {
  const dir = Deno.makeTempDirSync();
  try {
    for (const f of ["a.tsx", "_part.tsx", "a_test.tsx", "notes.md", "helper.ts"]) {
      Deno.writeTextFileSync(join(dir, f), "");
    }
    Deno.mkdirSync(join(dir, "run"));
    Deno.writeTextFileSync(join(dir, "run", "mod.tsx"), "");
    Deno.writeTextFileSync(join(dir, "run", "tab.tsx"), "");
    Deno.mkdirSync(join(dir, "parts"));
    Deno.writeTextFileSync(join(dir, "parts", "x.tsx"), "");
    Deno.mkdirSync(join(dir, "_hidden"));
    Deno.writeTextFileSync(join(dir, "_hidden", "mod.tsx"), "");
    assertEquals(pageModules(dir), ["a.tsx", "run/mod.tsx"]);
    const text = routeManifest(pageModules(dir));
    assertEquals(text.includes('import { routes as $run } from "./run/mod.tsx";'), true);
    assertEquals(text.includes("  ...$a,\n  ...$run,\n];"), true);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("every generated page is served: each page module adds at least one route", async () => {
  for (const page of pageModules()) {
    const mod = await import(`../routes/${page}`);
    assertEquals(Array.isArray(mod.routes) && mod.routes.length > 0, true, page);
    for (const route of mod.routes) assertEquals(pageRoutes.includes(route), true, page);
  }
});
