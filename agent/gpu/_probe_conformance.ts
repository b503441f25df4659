/**
 * Test support: the assertions every GpuProbe implementation must pass, run against the
 * NVML binding (over the C stand-in) and the fake GPUs alike.
 */
import assert from "node:assert/strict";
import type { GpuProbe } from "./types.ts";

/**
 * Checks the shape and ranges of everything `probe` reports for `gpuCount` healthy GPUs,
 * then closes it.
 */
export function assertProbeConforms(probe: GpuProbe, gpuCount: number): void {
  assert.ok(probe.kind === "nvml" || probe.kind === "fake", `kind ${probe.kind}`);
  const driver = probe.driverVersion();
  assert.ok(driver === null || (typeof driver === "string" && driver.length > 0));

  const devices = probe.devices();
  assert.equal(devices.length, gpuCount);
  devices.forEach((d, i) => {
    assert.equal(d.index, i, "devices are ordered by index 0..n-1");
    assert.match(d.uuid, /^GPU-/);
    assert.ok(d.name.length > 0, "every GPU has a name");
    assert.ok(Number.isInteger(d.memory_total_mb) && d.memory_total_mb > 0);
    assert.equal(d.fake, probe.kind === "fake");
    assert.equal(d.error, undefined);
  });
  assert.equal(new Set(devices.map((d) => d.uuid)).size, gpuCount, "UUIDs are unique");

  if (devices[0]) devices[0].uuid = "changed by the caller";
  assert.notEqual(probe.devices()[0]?.uuid, "changed by the caller", "devices() returns copies");

  for (let round = 0; round < 2; round++) {
    const samples = probe.sample();
    assert.equal(samples.length, gpuCount);
    samples.forEach((s, i) => {
      assert.equal(s.index, i);
      assert.equal(s.uuid, probe.devices()[i].uuid);
      assert.equal(s.error, undefined);
      assert.equal(s.memory_total_mb, probe.devices()[i].memory_total_mb);
      assertInRange(s.memory_used_mb, 0, s.memory_total_mb!, "memory_used_mb");
      assertInRange(s.util_pct, 0, 100, "util_pct");
      assertInRange(s.temp_c, 0, 150, "temp_c");
      assertInRange(s.power_w, 0, 2000, "power_w");
      assert.ok(Array.isArray(s.processes));
      for (const p of s.processes) {
        assert.ok(Number.isInteger(p.pid) && p.pid > 0, `pid ${p.pid}`);
        assert.ok(p.used_mb === null || (Number.isInteger(p.used_mb) && p.used_mb >= 0));
      }
      assert.equal(new Set(s.processes.map((p) => p.pid)).size, s.processes.length);
    });
  }

  probe.close();
  probe.close();
  assert.deepEqual(probe.sample(), [], "sample() after close() is empty");
  assert.equal(probe.devices().length, gpuCount, "devices() stays answerable after close()");
}

function assertInRange(value: number | null, min: number, max: number, field: string): void {
  assert.ok(
    typeof value === "number" && Number.isFinite(value) && value >= min && value <= max,
    `${field} = ${value}, expected a number in ${min}..${max}`,
  );
}
