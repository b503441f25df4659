import { assertEquals } from "../tests/assert.ts";
import { memoryLogger } from "../lib/log.ts";
import { PassLoop } from "./pass_loop.ts";

/** Waits (bounded) until `cond` holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

Deno.test("PassLoop: triggers while a pass is pending make one pass; none before start or after stop", async () => {
  let passes = 0;
  let wake: ((delayMs?: number) => void) | null = null;
  let unsubscribed = 0;
  const loop = new PassLoop(memoryLogger(), {
    name: "test",
    intervalMs: 3_600_000,
    pass: () => passes++,
    wake: (trigger) => {
      wake = trigger;
      return [() => unsubscribed++];
    },
  });
  loop.trigger();
  await new Promise((r) => setTimeout(r, 20));
  assertEquals(passes, 0, "a loop not started runs no pass");
  loop.start();
  wake!();
  wake!();
  loop.trigger();
  await until(() => passes === 1, "the joined pass");
  await new Promise((r) => setTimeout(r, 20));
  assertEquals(passes, 1, "three triggers while pending: one pass");
  loop.trigger();
  await until(() => passes === 2, "the next pass");
  loop.trigger(10_000);
  loop.stop();
  assertEquals(unsubscribed, 1);
  await new Promise((r) => setTimeout(r, 20));
  assertEquals(passes, 2, "stop cancels the pending pass");
});

Deno.test("PassLoop: a failing pass is logged with its name and the loop goes on", async () => {
  const log = memoryLogger();
  let calls = 0;
  const loop = new PassLoop(log, {
    name: "sweep",
    intervalMs: 3_600_000,
    pass: () => {
      calls++;
      throw new Error("store unavailable");
    },
    wake: () => [],
  });
  loop.start();
  try {
    loop.trigger();
    await until(() => calls === 1, "the first pass");
    loop.trigger();
    await until(() => calls === 2, "a pass after the failure");
    const line = log.lines.find((l) => l.includes("sweep pass failed"));
    assertEquals(line?.includes("store unavailable"), true, log.lines.join("\n"));
  } finally {
    loop.stop();
  }
});
