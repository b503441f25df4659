import { assertEquals } from "../tests/assert.ts";
import type { NewDataFrame } from "./frames.ts";
import { silentLogger } from "./log.ts";
import { Spool } from "./spool.ts";
import { SPOOL_FULL_EVENT_MS, spoolEmitter } from "./spool_emitter.ts";

const sys = (step: number): NewDataFrame => ({
  type: "metrics",
  stream: "sys",
  job_id: "j-1",
  attempt: 1,
  run_id: "r-1",
  points: [{ key: "sys/cpu_pct", step, value: 50 }],
});

Deno.test("spoolEmitter() reports dropped system metrics as one SPOOL_FULL event a minute", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir, { maxBytes: 4000, segmentBytes: 500 });
  let now = 0;
  const emit = spoolEmitter(spool, { log: silentLogger, now: () => now });
  try {
    for (let i = 0; i < 100; i++) await emit(sys(i));
    const events = async () =>
      (await spool.readAfter("data", 0)).frames.flatMap((f) => f.type === "event" ? [f.event] : []);
    const first = await events();
    assertEquals(first.map((e) => [e.type, e.severity]), [["SPOOL_FULL", "warning"]]);
    const dropped = first[0].data?.dropped as number;
    assertEquals(dropped > 0, true);
    for (let i = 100; i < 200; i++) await emit(sys(i));
    assertEquals((await events()).length, 1, "not again within a minute");
    now += SPOOL_FULL_EVENT_MS;
    await emit(sys(200));
    await emit(sys(201));
    const later = await events();
    assertEquals(later.length, 2);
    assertEquals((later[1].data?.dropped as number) > dropped, true);
  } finally {
    await spool.close();
    await Deno.remove(dir, { recursive: true });
  }
});
