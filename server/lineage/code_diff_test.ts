import { assert, assertEquals } from "../../tests/assert.ts";
import type { Provenance } from "../../protocol/provenance.ts";
import { compareCode, lineDiff, splitPatch } from "./code_diff.ts";

const patch = (path: string, from: string, to: string) =>
  `diff --git a/${path} b/${path}\nindex 1111111..2222222 100644\n--- a/${path}\n+++ b/${path}\n` +
  `@@ -1 +1 @@\n-${from}\n+${to}\n`;

function code(diff: string, commit = "a".repeat(40)): Provenance {
  return {
    kind: "git",
    working_dir: "/w",
    captured_at: "2026-01-01T00:00:00.000Z",
    problems: [],
    files: null,
    git: {
      root: "/w",
      subdir: "",
      commit,
      branch: "main",
      remote_url: null,
      diff,
      diff_bytes: diff.length,
      diff_sha256: "0".repeat(64),
      diff_omitted: null,
      untracked: [],
      untracked_count: 0,
    },
  };
}

Deno.test("lineDiff() keeps common lines and marks removed and added ones", () => {
  assertEquals(lineDiff(["a", "b", "c"], ["a", "x", "c", "d"]), [" a", "-b", "+x", " c", "+d"]);
  assertEquals(lineDiff([], ["a"]), ["+a"]);
  assertEquals(lineDiff(["a"], []), ["-a"]);
  assertEquals(lineDiff(["same"], ["same"]), [" same"]);
});

Deno.test("splitPatch() splits a git diff by file, named by its b side", () => {
  const files = splitPatch(patch("a.py", "x", "y") + patch("dir/b.py", "1", "2"));
  assertEquals([...files.keys()], ["a.py", "dir/b.py"]);
  assert(files.get("dir/b.py")!.startsWith("diff --git a/dir/b.py"));
});

Deno.test("compareCode() lists files each run changed differently, with a diff from a's patch to b's", () => {
  const a = code(patch("train.py", "lr = 0.1", "lr = 0.01") + patch("same.py", "1", "2"));
  const b = code(
    patch("train.py", "lr = 0.1", "lr = 0.003") + patch("same.py", "1", "2") +
      patch("new.py", "", "x"),
  );
  const c = compareCode({ id: "r-a", code: a }, { id: "r-b", code: b });
  assertEquals(c.same_code, false);
  assertEquals(c.files.map((f) => [f.path, f.change]), [["new.py", "only_b"], [
    "train.py",
    "differs",
  ]]);
  const train = c.files.find((f) => f.path === "train.py")!.diff.split("\n");
  assert(train.includes("-+lr = 0.01") && train.includes("++lr = 0.003"), train.join("\n"));
  assertEquals(compareCode({ id: "r-a", code: a }, { id: "r-c", code: a }).same_code, true);
});

Deno.test("compareCode() says what it cannot compare: other commits, a hashed-only diff, no snapshot", () => {
  const big = code("", "b".repeat(40));
  big.git!.diff = null;
  big.git!.diff_bytes = 2_000_000;
  const c = compareCode({ id: "r-a", code: code("") }, { id: "r-b", code: big });
  assert(c.problems.some((p) => p.includes("different commits")), c.problems.join("; "));
  assert(c.problems.some((p) => p.includes("hash only (2000000 bytes")), c.problems.join("; "));
  const none = compareCode({ id: "r-a", code: null }, { id: "r-b", code: code("") });
  assertEquals([none.same_code, none.problems], [false, ["run a has no code snapshot"]]);
});
