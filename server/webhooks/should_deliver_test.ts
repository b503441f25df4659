import { assertEquals } from "../../tests/assert.ts";
import type { Severity } from "../../protocol/vocabulary.ts";
import { shouldDeliver } from "./should_deliver.ts";

Deno.test("shouldDeliver() sends events at or above the hook's minimum severity", () => {
  const cases: [Severity, Severity, boolean][] = [
    ["warning", "info", false],
    ["warning", "warning", true],
    ["warning", "critical", true],
    ["info", "info", true],
    ["critical", "warning", false],
    ["critical", "critical", true],
  ];
  for (const [minSeverity, severity, want] of cases) {
    assertEquals(
      shouldDeliver({ minSeverity, types: null }, { severity, type: "X" }),
      want,
      `min ${minSeverity}, event ${severity}`,
    );
  }
});

Deno.test("shouldDeliver() sends only the listed types when the hook lists some", () => {
  const hook = { minSeverity: "info" as const, types: ["LOSS_NAN", "RUN_FAILED"] };
  assertEquals(shouldDeliver(hook, { severity: "critical", type: "LOSS_NAN" }), true);
  assertEquals(shouldDeliver(hook, { severity: "critical", type: "OOM" }), false);
  // Both conditions must hold.
  const strict = { minSeverity: "critical" as const, types: ["RUN_FAILED"] };
  assertEquals(shouldDeliver(strict, { severity: "warning", type: "RUN_FAILED" }), false);
});
