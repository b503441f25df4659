import { assertEquals } from "../tests/assert.ts";
import { atLeast, compareSeverity, severitiesAtLeast, severityRank } from "./severity.ts";

Deno.test("severities rank info < warning < critical", () => {
  assertEquals(["info", "warning", "critical"].map(severityRank), [0, 1, 2]);
  assertEquals(["critical", "info", "warning"].sort(compareSeverity), [
    "info",
    "warning",
    "critical",
  ]);
  assertEquals(atLeast("warning", "info"), true);
  assertEquals(atLeast("warning", "warning"), true);
  assertEquals(atLeast("warning", "critical"), false);
  assertEquals(severitiesAtLeast("warning"), ["warning", "critical"]);
  assertEquals(severitiesAtLeast("info"), ["info", "warning", "critical"]);
});

Deno.test("an unknown severity ranks as the most severe, so no filter hides it", () => {
  assertEquals(severityRank("emergency"), 2);
  assertEquals(atLeast("emergency", "critical"), true);
  // Inherited object keys are not severities.
  assertEquals(severityRank("toString"), 2);
  assertEquals(compareSeverity("emergency", "critical"), 0);
});
