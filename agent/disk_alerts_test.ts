import { assertEquals } from "../tests/assert.ts";
import { diskLevel, nextDiskAlerts } from "./disk_alerts.ts";

const GIB = 1024 ** 3;
const disk = (freeGib: number, totalGib: number) => ({
  freeBytes: freeGib * GIB,
  totalBytes: totalGib * GIB,
});

Deno.test("diskLevel() warns below 10 GiB or 5 % and is critical below 2 GiB or 1 %", () => {
  const cases: [number, number, string][] = [
    [50, 500, "ok"],
    [9.9, 500, "warning"], // under 10 GiB
    [20, 1000, "warning"], // 2 %
    [1.9, 500, "critical"], // under 2 GiB
    [9, 1000, "critical"], // 0.9 %
    [10, 100, "ok"],
    [0, 0, "critical"],
  ];
  for (const [free, total, level] of cases) {
    assertEquals(diskLevel(disk(free, total)), level, `${free} GiB free of ${total} GiB`);
  }
});

Deno.test("nextDiskAlerts() raises once per path and level until the disk recovers", () => {
  let raised = new Map();
  const step = (readings: [string, number][]) => {
    const out = nextDiskAlerts(
      raised,
      readings.map(([path, free]) => ({ path, usage: disk(free, 500) })),
    );
    raised = out.raised;
    return out.alerts.map((a) => `${a.path}:${a.level}`);
  };
  assertEquals(step([["/data", 50], ["/job", 8]]), ["/job:warning"]);
  assertEquals(step([["/data", 50], ["/job", 7]]), [], "still warning: no repeat");
  assertEquals(step([["/job", 1]]), ["/job:critical"]);
  assertEquals(step([["/job", 5]]), [], "better but still low: no event");
  assertEquals(step([["/job", 1]]), [], "critical again without recovering: no repeat");
  assertEquals(step([["/job", 100]]), [], "recovered");
  assertEquals(step([["/job", 1]]), ["/job:critical"], "a new fall alerts again");
});
