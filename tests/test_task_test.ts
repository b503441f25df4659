// `deno task test` and `.ci/run` on a small project of their own: a failing Deno test must not
// hide the Python suite, either suite failing fails the task, and CI's closing line counts both.
// The Deno tests are JavaScript so that nothing needs type-checking.

import { join } from "node:path";
import { assertEquals } from "./assert.ts";

const ROOT = new URL("../", import.meta.url);

interface Outcome {
  code: number;
  closing: string;
}

/** Runs `.ci/run` over a temporary project with this repository's `test` task and these tests. */
async function ciRun(denoTests: string, pythonTests: string): Promise<Outcome> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-test-task-" });
  try {
    const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
    await Deno.writeTextFile(join(dir, "deno.json"), JSON.stringify({ tasks: config.tasks }));
    await Deno.mkdir(join(dir, ".ci"));
    await Deno.copyFile(new URL(".ci/run", ROOT), join(dir, ".ci", "run"));
    await Deno.writeTextFile(join(dir, "a_test.js"), denoTests);
    await Deno.mkdir(join(dir, "sdk", "python"), { recursive: true });
    await Deno.writeTextFile(join(dir, "sdk", "python", "test_a.py"), pythonTests);
    const out = await new Deno.Command("bash", {
      args: [join(dir, ".ci", "run")],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
    return { code: out.code, closing: lines.at(-1) ?? "" };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const DENO_PASS = `Deno.test("one", () => {});\nDeno.test("two", () => {});\n`;
const DENO_FAIL =
  `Deno.test("one", () => {});\nDeno.test("two", () => { throw new Error("no"); });\n`;
const PY_PASS = `import unittest
class T(unittest.TestCase):
    def test_one(self): pass
    def test_two(self): pass
`;
const PY_FAIL = `import unittest
class T(unittest.TestCase):
    def test_one(self): pass
    def test_two(self): self.fail("no")
`;

Deno.test("deno task test runs the Python suite after a failing Deno test, and fails", async () => {
  assertEquals(await ciRun(DENO_FAIL, PY_PASS), { code: 1, closing: "3 passed, 1 failed" });
});

Deno.test("deno task test fails when only the Python suite failed", async () => {
  assertEquals(await ciRun(DENO_PASS, PY_FAIL), { code: 1, closing: "3 passed, 1 failed" });
});

Deno.test("deno task test passes when both suites pass, and CI counts both", async () => {
  assertEquals(await ciRun(DENO_PASS, PY_PASS), { code: 0, closing: "4 passed, 0 failed" });
});
