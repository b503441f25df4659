/**
 * Every source file opens with a comment saying what it is for: the first text of each tracked
 * non-test `.ts`/`.tsx` file (after an optional `#!` line) is a block or `//` comment. Tests
 * and tests/fixtures/ are left out; their names say what they hold.
 */
import { assertEquals } from "./assert.ts";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The first non-blank text of a file, past a `#!` line, begins a comment. */
function opensWithComment(text: string): boolean {
  let rest = text.replace(/^\uFEFF/, "");
  if (rest.startsWith("#!")) {
    const eol = rest.indexOf("\n");
    rest = eol === -1 ? "" : rest.slice(eol + 1);
  }
  rest = rest.trimStart();
  return rest.startsWith("//") || rest.startsWith("/*");
}

function isChecked(path: string): boolean {
  return /\.tsx?$/.test(path) && !/_test\.tsx?$/.test(path) && !path.endsWith(".d.ts") &&
    !path.startsWith("tests/fixtures/");
}

/** The repository's tracked files; a tree walk where git or the repository is not there. */
async function sourceFiles(): Promise<string[]> {
  try {
    const out = await new Deno.Command("git", {
      args: ["ls-files", "-z", "--", "*.ts", "*.tsx"],
      cwd: ROOT,
      stdout: "piped",
      stderr: "null",
    }).output();
    if (out.success) {
      return new TextDecoder().decode(out.stdout).split("\0").filter((p) => p !== "");
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const skip = new Set(["node_modules", ".git", "dist"]);
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory && !skip.has(entry.name)) walk(path);
      else if (entry.isFile) found.push(relative(ROOT, path).split(sep).join("/"));
    }
  };
  walk(ROOT);
  return found;
}

Deno.test("opensWithComment: a comment (after a #! line) counts; code, or nothing, does not", () => {
  assertEquals(opensWithComment("/** What this is. */\nexport const a = 1;\n"), true);
  assertEquals(opensWithComment("\n\n// What this is.\nexport const a = 1;\n"), true);
  assertEquals(opensWithComment("#!/usr/bin/env -S deno run\n/** What. */\nmain();\n"), true);
  assertEquals(opensWithComment('import { a } from "./a.ts";\n/** Late. */\n'), false);
  assertEquals(opensWithComment("#!/usr/bin/env -S deno run\nmain();\n// Late.\n"), false);
  assertEquals(opensWithComment(""), false);
});

Deno.test("every non-test source file opens with a comment saying what it is for", async () => {
  const files = (await sourceFiles()).filter(isChecked).sort();
  // A walk that found nothing would pass whatever the files say.
  if (files.length < 100) throw new Error(`found only ${files.length} source files under ${ROOT}`);
  const missing: string[] = [];
  for (const path of files) {
    const text = await Deno.readTextFile(join(ROOT, path));
    if (!opensWithComment(text)) missing.push(path);
  }
  assertEquals(missing, [], `these files do not open with a comment:\n  ${missing.join("\n  ")}`);
});
