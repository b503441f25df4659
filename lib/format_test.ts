import { assertEquals } from "../tests/assert.ts";
import {
  fmtBytes,
  fmtDuration,
  fmtInt,
  fmtMb,
  fmtMetric,
  fmtNumber,
  fmtPct,
  fmtRelative,
  secondsBetween,
} from "./format.ts";

Deno.test("fmtNumber() writes a number the same way on every face", () => {
  const table: [number, string][] = [
    [0, "0"],
    [12345, "12345"], // whole numbers below a million exactly, not 12350
    [-7, "-7"],
    [0.07555161, "0.07555"],
    [1.23456, "1.235"],
    [0.001, "0.001"],
    [0.000123456, "1.235e-4"],
    [1234567, "1.235e+6"],
    [2.5e9, "2.500e+9"],
    [NaN, "NaN"],
    [Infinity, "Infinity"],
    [-Infinity, "-Infinity"],
  ];
  for (const [v, want] of table) assertEquals(fmtNumber(v), want, `fmtNumber(${v})`);
  assertEquals([fmtMetric(null), fmtMetric(undefined, ""), fmtMetric("n/a"), fmtMetric(0.5)], [
    "–",
    "",
    "n/a",
    "0.5",
  ]);
});

Deno.test("fmtDuration() turns to days after 24 hours, with zero-padded second parts", () => {
  const table: [number | null, string][] = [
    [null, "–"],
    [-3, "0s"],
    [45, "45s"],
    [725, "12m 05s"],
    [3840, "1h 04m"],
    [86399, "23h 59m"],
    [86400 + 3 * 3600, "1d 03h"],
    [50 * 3600, "2d 02h"],
  ];
  for (const [s, want] of table) assertEquals(fmtDuration(s), want, `fmtDuration(${s})`);
});

Deno.test("sizes, counts, percentages and times", () => {
  assertEquals([fmtInt(1200), fmtInt(null), fmtInt(NaN)], ["1,200", "–", "–"]);
  assertEquals([fmtBytes(512), fmtBytes(3_400_000), fmtBytes(1.2e9)], [
    "512 B",
    "3.4 MB",
    "1.2 GB",
  ]);
  assertEquals([fmtMb(512), fmtMb(12288)], ["512 MB", "12.0 GB"]);
  assertEquals([fmtPct(-0.4042), fmtPct(0.03), fmtPct(0)], ["-40.4%", "+3%", "0%"]);
  const now = Date.parse("2026-12-01T12:00:00Z");
  assertEquals(
    [
      fmtRelative("2026-12-01T11:59:55Z", now),
      fmtRelative("2026-12-01T11:57:00Z", now),
      fmtRelative("2026-12-01T14:00:00Z", now),
      fmtRelative(null, now),
    ],
    ["just now", "3 min ago", "in 2 h", "–"],
  );
  assertEquals(secondsBetween("2026-12-01T11:59:00Z", null, now), 60);
  assertEquals(secondsBetween("2026-12-01T11:59:00Z", "2026-12-01T11:58:00Z", now), 0);
  assertEquals(secondsBetween(null, null, now), null);
  assertEquals(secondsBetween("garbage", null, now), null);
});
