/**
 * The console's static assets: the stylesheet (hashed in memory at start) and the island
 * bundles (built by `deno bundle` into `static/build/`, described by its manifest).
 *
 * Bundles are rebuilt only when the islands' sources change: the manifest records a hash of
 * every file under `islands/` and `lib/` and of the dependency pins (deno.json, deno.lock), and a server
 * whose checkout hashes differently treats the build as stale. Builds go into a temporary
 * folder first and only then move in: every output name carries its content hash, so two
 * servers building at once write identical files, and the manifest is replaced in one rename.
 */
import { createHash } from "node:crypto";
import { z } from "zod";

/** The repository root this server runs from. */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/** Bump when the build's shape changes, so old builds count as stale. */
const BUILD_FORMAT = 2;

const manifestSchema = z.object({
  format: z.literal(BUILD_FORMAT),
  source_hash: z.string(),
  /** The entry the page loads: `boot-<hash>.js`. */
  boot: z.string(),
  /** Every file of the build (entry, islands, shared chunks). */
  files: z.array(z.string()),
  islands: z.array(z.string()),
  /**
   * Each island's module and the chunks it imports, to `modulepreload` on a page that shows
   * it: the browser then fetches and compiles them while it parses the page, instead of
   * finding them one import at a time after the boot script runs.
   */
  preload: z.record(z.string(), z.array(z.string())),
});

/** What `static/build/manifest.json` says about the built bundles. */
export type IslandManifest = z.infer<typeof manifestSchema>;

/** The console's static files, ready to serve. */
export interface ConsoleAssets {
  /** `/static/style-<hash>.css` */
  stylesheetPath: string;
  /** The island build; null when it is missing or stale and could not be built. */
  islands: IslandManifest | null;
  /** Why islands are not interactive, when they are not. */
  islandsProblem: string | null;
  /** The bytes and type of a served file, by its path under /static/. */
  file(name: string): { body: Uint8Array<ArrayBuffer>; type: string } | null;
}

/** The islands: each `islands/<Name>.tsx` whose name does not start with `_`. */
export function islandNames(root = REPO_ROOT): string[] {
  return [...Deno.readDirSync(`${root}/islands`)]
    .filter((e) => e.isFile && /^[A-Z][A-Za-z0-9]*\.tsx$/.test(e.name))
    .map((e) => e.name.slice(0, -4))
    .sort();
}

/**
 * A hash of everything a build depends on: the islands' sources, the shared formatting module
 * under lib/ and the API limits they import, and the dependency pins.
 */
export function islandsSourceHash(root = REPO_ROOT): string {
  const hash = createHash("sha256").update(`format ${BUILD_FORMAT}\n`);
  const files: string[] = [];
  const walk = (dir: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(`${root}/${dir}`)];
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return;
      throw err;
    }
    for (const e of entries) {
      if (e.isDirectory) walk(`${dir}/${e.name}`);
      else if (e.isFile) files.push(`${dir}/${e.name}`);
    }
  };
  walk("islands");
  walk("lib");
  files.sort().push("protocol/limits.ts", "deno.json", "deno.lock");
  for (const f of files) {
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(`${root}/${f}`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    hash.update(`${f}\n${bytes.length}\n`).update(bytes);
  }
  return hash.digest("hex").slice(0, 16);
}

/** The manifest of the current build, or null when there is none (or it is unreadable). */
export function readManifest(root = REPO_ROOT): IslandManifest | null {
  try {
    return manifestSchema.parse(
      JSON.parse(Deno.readTextFileSync(`${buildDir(root)}/manifest.json`)),
    );
  } catch {
    return null;
  }
}

const buildDir = (root: string) => `${root}/static/build`;

const contentHash = (bytes: Uint8Array) =>
  createHash("sha256").update(bytes).digest("base64url").replace(/[-_]/g, "").slice(0, 10);

/** `files` of the build in `dir` and every file they import statically, in the order found. */
export function staticImports(files: string[], dir: string): string[] {
  const seen = new Set<string>();
  const visit = (f: string) => {
    if (seen.has(f)) return;
    seen.add(f);
    const text = Deno.readTextFileSync(`${dir}/${f}`);
    // `import("./x.js")` (an island loaded when a page shows it) is left out.
    for (const m of text.matchAll(/(?:from|import)\s*"\.\/([^"]+\.js)"/g)) visit(m[1]);
  };
  files.forEach(visit);
  return [...seen];
}

/** Bundles every island with `deno bundle` and installs the build; returns its manifest. */
export async function buildIslands(root = REPO_ROOT): Promise<IslandManifest> {
  const sourceHash = islandsSourceHash(root);
  const names = islandNames(root);
  await Deno.mkdir(buildDir(root), { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: buildDir(root), prefix: ".tmp-" });
  try {
    const loaders = names.map((n) =>
      `  ${n}: () => import(${JSON.stringify(`${root}/islands/${n}.tsx`)}),`
    );
    await Deno.writeTextFile(
      `${tmp}/boot.ts`,
      `import { hydrateIslands } from ${JSON.stringify(`${root}/islands/_boot.ts`)};\n` +
        `hydrateIslands({\n${loaders.join("\n")}\n});\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--config",
        `${root}/deno.json`,
        "--platform",
        "browser",
        "--code-splitting",
        "--minify",
        "--outdir",
        `${tmp}/out`,
        `${tmp}/boot.ts`,
      ],
      cwd: root,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    if (!out.success) {
      throw new Error(
        `Cannot build the console's islands: deno bundle failed:\n${
          new TextDecoder().decode(out.stderr).trim()
        }`,
      );
    }
    // The entry is the one name esbuild does not hash; name it by its content like the rest.
    const bootBytes = await Deno.readFile(`${tmp}/out/boot.js`);
    const boot = `boot-${contentHash(bootBytes)}.js`;
    await Deno.rename(`${tmp}/out/boot.js`, `${tmp}/out/${boot}`);
    const files: string[] = [];
    for await (const e of Deno.readDir(`${tmp}/out`)) {
      if (e.isFile && e.name.endsWith(".js")) files.push(e.name);
    }
    const preload: Record<string, string[]> = {};
    for (const n of names) {
      const entry = files.find((f) => new RegExp(`^${n}-[A-Z0-9]+\\.js$`).test(f));
      if (entry) preload[n] = staticImports([entry], `${tmp}/out`);
    }
    for (const f of files) await Deno.rename(`${tmp}/out/${f}`, `${buildDir(root)}/${f}`);
    const manifest: IslandManifest = {
      format: BUILD_FORMAT,
      source_hash: sourceHash,
      boot,
      files: files.sort(),
      islands: names,
      preload,
    };
    await Deno.writeTextFile(`${tmp}/manifest.json`, JSON.stringify(manifest, null, 2) + "\n");
    await Deno.rename(`${tmp}/manifest.json`, `${buildDir(root)}/manifest.json`);
    return manifest;
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/** The checkout's island build when it is current; otherwise null and why. */
export function currentIslands(
  root = REPO_ROOT,
): { manifest: IslandManifest | null; problem: string | null } {
  const current = readManifest(root);
  if (current && current.source_hash === islandsSourceHash(root)) {
    return { manifest: current, problem: null };
  }
  return {
    manifest: null,
    problem: `island bundles in ${buildDir(root)} are ${
      current ? "out of date" : "missing"
    }: run \`deno task build\` (pages work, but their live parts stay static)`,
  };
}

/**
 * The island build for this checkout: the existing one when it is current, else a new one
 * when `build` is allowed. Never throws: a build that cannot be had leaves the console
 * working without interactive parts, and `problem` says why and what to run.
 */
export async function prepareIslands(
  opts: { build: boolean; root?: string },
): Promise<{ manifest: IslandManifest | null; problem: string | null; built: boolean }> {
  const root = opts.root ?? REPO_ROOT;
  const current = currentIslands(root);
  if (current.manifest || !opts.build) return { ...current, built: false };
  try {
    return { manifest: await buildIslands(root), problem: null, built: true };
  } catch (err) {
    const readOnly = err instanceof Deno.errors.PermissionDenied ||
      err instanceof Deno.errors.NotCapable || (err as { code?: string }).code === "EROFS";
    return {
      manifest: null,
      problem: readOnly
        ? `island bundles in ${buildDir(root)} are missing or out of date and ` +
          `cannot be built there (${(err as Error).message}): run \`deno task build\` in a ` +
          "writable checkout (pages work, but their live parts stay static)"
        : `${(err as Error).message} (pages work, but their live parts stay static)`,
      built: false,
    };
  }
}

const TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
};

/** Loads the stylesheet and indexes the island build for serving. */
export function loadConsoleAssets(
  islands: { manifest: IslandManifest | null; problem: string | null },
  root = REPO_ROOT,
): ConsoleAssets {
  const css = Deno.readFileSync(`${root}/static/style.css`);
  const stylesheet = `style-${contentHash(css)}.css`;
  const served = new Map<string, string>([[stylesheet, `${root}/static/style.css`]]);
  for (const f of islands.manifest?.files ?? []) served.set(`build/${f}`, `${buildDir(root)}/${f}`);
  const cache = new Map<string, Uint8Array<ArrayBuffer>>([[stylesheet, css]]);
  return {
    stylesheetPath: `/static/${stylesheet}`,
    islands: islands.manifest,
    islandsProblem: islands.problem,
    file(name) {
      const path = served.get(name);
      if (!path) return null;
      let body = cache.get(name);
      if (!body) {
        try {
          body = Deno.readFileSync(path);
        } catch {
          return null;
        }
        cache.set(name, body);
      }
      return { body, type: TYPES[name.slice(name.lastIndexOf(".") + 1)] };
    },
  };
}
