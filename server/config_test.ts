import { assertEquals, assertThrows } from "../tests/assert.ts";
import { loadServerConfig, parseConfig, rulesFromYaml } from "./config.ts";
import { SSE_MAX_STREAMS, SSE_MAX_STREAMS_PER_TOKEN } from "./config.ts";

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

Deno.test("server.yaml: stream caps have named defaults and are read from the file", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-config-" });
  try {
    const first = await loadServerConfig(home);
    assertEquals(first.sse, {
      maxStreams: SSE_MAX_STREAMS,
      maxStreamsPerToken: SSE_MAX_STREAMS_PER_TOKEN,
    });
    await Deno.writeTextFile(
      `${home}/server.yaml`,
      (await Deno.readTextFile(`${home}/server.yaml`)) +
        "max_sse_streams: 50\nmax_sse_streams_per_token: 5\n",
    );
    assertEquals((await loadServerConfig(home)).sse, { maxStreams: 50, maxStreamsPerToken: 5 });
    assertThrows(() => parseConfig("max_sse_streams: 0\n", "f"), "max_sse_streams");
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
