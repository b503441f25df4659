import { assertEquals, assertThrows } from "../tests/assert.ts";
import { parseConfig, rulesFromYaml } from "./config.ts";

Deno.test("server.yaml: unknown or mistyped fields are named", () => {
  assertThrows(() => parseConfig("port: eighty\n", "/x/server.yaml"), '"/x/server.yaml": port:');
  assertThrows(() => parseConfig("prot: 1\n", "/x/server.yaml"), "prot");
  assertThrows(() => parseConfig("port: [\n", "/x/server.yaml"), "not valid YAML");
  assertEquals(parseConfig("port: 9000\nhost: 0.0.0.0\n", "f").port, 9000);
});

Deno.test("rules: snake_case settings map onto the rules, unknown ones are refused", () => {
  const cfg = rulesFromYaml({ stalled_after_s: 60, loss_spike_window: 30 }, "f");
  assertEquals([cfg.stalledAfterS, cfg.lossSpikeWindow], [60, 30]);
  assertThrows(
    () => rulesFromYaml({ stalled_after: 60 }, "f"),
    "rules.stalled_after: unknown rule setting",
  );
  assertThrows(() => rulesFromYaml({ stalled_after_s: -1 }, "f"), "stalledAfterS");
});
