import assert from "node:assert/strict";
import { CATALOGUE, causeById, FALLBACK_CAUSE_IDS } from "./catalogue.ts";

Deno.test("CATALOGUE holds at least 14 causes with unique ids", () => {
  const specific = CATALOGUE.filter((e) => !FALLBACK_CAUSE_IDS.has(e.id));
  assert.ok(specific.length >= 14, `${specific.length} specific causes`);
  assert.equal(new Set(CATALOGUE.map((e) => e.id)).size, CATALOGUE.length);
  assert.equal(causeById("cuda_oom")?.title, "CUDA out of memory");
  assert.equal(causeById("nope"), undefined);
});

Deno.test("every cause's retry advice says plainly what a retry will do", () => {
  for (const e of CATALOGUE) {
    if (e.retry === "fails_again") {
      assert.match(e.retry_advice, /^A retry .*(?:the same way|again)/, e.id);
    } else if (e.retry === "may_help") {
      assert.match(e.retry_advice, /^A retry may help/, e.id);
    } else {
      assert.match(e.retry_advice, /^(?:Cannot tell|Nothing failed)/, e.id);
    }
    if (e.id !== "cancelled") assert.ok(e.fixes.length > 0, `${e.id} has fixes`);
  }
});

Deno.test("every cause is exercised by a test with a log tail or exit status", async () => {
  let tests = "";
  for await (const f of Deno.readDir(new URL(".", import.meta.url))) {
    if (f.name.endsWith("_test.ts") && f.name !== "catalogue_test.ts") {
      tests += await Deno.readTextFile(new URL(f.name, import.meta.url));
    }
  }
  for (const e of CATALOGUE) {
    assert.ok(
      tests.includes(`cause: "${e.id}"`) || tests.includes(`"${e.id}"]`) ||
        tests.includes(`want: "${e.id}"`),
      `no test expects cause "${e.id}"`,
    );
  }
});
