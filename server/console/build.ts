// deno-lint-ignore-file no-console -- `deno task build`'s entry point talks to its user
/**
 * `deno task build`: writes the console's page table (routes/_manifest.ts) from routes/, and
 * bundles the islands into static/build/ (skipped when current).
 */
import { buildIslands, currentIslands } from "./assets.ts";
import { writeRouteManifest } from "./route_manifest.ts";

if (import.meta.main) {
  console.log(
    writeRouteManifest() ? "wrote routes/_manifest.ts" : "routes/_manifest.ts up to date",
  );
  const force = Deno.args.includes("--force");
  const current = currentIslands();
  if (current.manifest && !force) {
    console.log(`islands up to date: static/build/${current.manifest.boot}`);
  } else {
    const started = performance.now();
    const m = await buildIslands();
    const ms = Math.round(performance.now() - started);
    console.log(`built ${m.islands.length} island(s), ${m.files.length} files in ${ms} ms`);
  }
}
