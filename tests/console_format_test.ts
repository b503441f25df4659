/** How the console writes numbers, durations and times (the same on the server and in islands). */
import { assertEquals } from "./assert.ts";
import {
  fmtDuration,
  fmtInt,
  fmtMetric,
  fmtProgress,
  fmtRelative,
  progressFraction,
  statusTone,
} from "../islands/_format.ts";

Deno.test("durations read as 45s, 12m 05s, 1h 04m, 2d 03h", () => {
  const cases: [number | null, string][] = [
    [45.4, "45s"],
    [725, "12m 05s"],
    [3840, "1h 04m"],
    [183600, "2d 03h"],
    [null, "–"],
  ];
  for (const [s, want] of cases) assertEquals(fmtDuration(s), want, String(s));
});

Deno.test("times read relative to now, both ways", () => {
  const now = Date.parse("2026-12-01T12:00:00Z");
  const cases: [string, string][] = [
    ["2026-12-01T11:59:55Z", "just now"],
    ["2026-12-01T11:59:30Z", "30 s ago"],
    ["2026-12-01T11:57:00Z", "3 min ago"],
    ["2026-12-01T14:00:00Z", "in 2 h"],
    ["2026-11-27T12:00:00Z", "4 d ago"],
  ];
  for (const [at, want] of cases) assertEquals(fmtRelative(at, now), want, at);
});

Deno.test("numbers: thousands separated, metrics to four digits, progress with its end", () => {
  assertEquals(fmtInt(1200), "1,200");
  assertEquals(fmtMetric(0.123456), "0.1235");
  assertEquals(fmtMetric(12345.678), "12350");
  assertEquals(fmtMetric(0.0000123), "1.230e-5");
  assertEquals(fmtMetric("NaN"), "NaN");
  assertEquals(fmtProgress(1200, 5000), "1,200 / 5,000");
  assertEquals(fmtProgress(7, null), "7");
  assertEquals(progressFraction(4999, 5000), 1);
  assertEquals(progressFraction(3, null), null);
});

Deno.test("status colours mean the same everywhere", () => {
  assertEquals(
    ["RUNNING", "SUCCEEDED", "FAILED", "LOST", "QUEUED", "CANCELLED", "OFFLINE"].map(statusTone),
    ["running", "succeeded", "failed", "failed", "queued", "cancelled", "failed"],
  );
});
