import assert from "node:assert/strict";
import { createFakeGpus } from "./fake_gpus.ts";
import { assertProbeConforms } from "./_probe_conformance.ts";

Deno.test("createFakeGpus() passes the GpuProbe conformance suite", () => {
  const gpus = createFakeGpus(4);
  gpus.setLoad(2, {
    util_pct: 100,
    memory_used_mb: 70000,
    processes: [{ pid: 31, used_mb: 70000 }, { pid: 32, used_mb: null }],
  });
  assert.equal(gpus.kind, "fake");
  assertProbeConforms(gpus, 4);
});

Deno.test("createFakeGpus() starts idle with stable UUIDs", () => {
  const gpus = createFakeGpus(2);
  assert.deepEqual(gpus.devices(), [
    { index: 0, uuid: "GPU-fake-0-811c9dc5", name: "Fake GPU", memory_total_mb: 81920, fake: true },
    { index: 1, uuid: "GPU-fake-1-811c9dc5", name: "Fake GPU", memory_total_mb: 81920, fake: true },
  ]);
  assert.deepEqual(gpus.sample()[1], {
    index: 1,
    uuid: "GPU-fake-1-811c9dc5",
    memory_used_mb: 0,
    memory_total_mb: 81920,
    util_pct: 0,
    temp_c: 30,
    power_w: 60,
    processes: [],
  });
  assert.equal(gpus.driverVersion(), "fake");
});

Deno.test("createFakeGpus() gives different nodes different UUIDs through uuidSeed", () => {
  const a = createFakeGpus(1, { uuidSeed: "node-a" }).devices()[0].uuid;
  const b = createFakeGpus(1, { uuidSeed: "node-b" }).devices()[0].uuid;
  assert.notEqual(a, b);
  assert.equal(createFakeGpus(1, { uuidSeed: "node-a" }).devices()[0].uuid, a);
  assert.match(a, /^GPU-fake-0-[0-9a-f]{8}$/);
});

Deno.test("setLoad() drives one GPU's readings and leaves the others idle", () => {
  const gpus = createFakeGpus(2, { memoryTotalMb: 24576, name: "Fake RTX 4090" });
  gpus.setLoad(0, { util_pct: 93, memory_used_mb: 20000, processes: [{ pid: 7, used_mb: 20000 }] });
  gpus.setLoad(0, { temp_c: 71 });
  const [busy, idle] = gpus.sample();
  assert.equal(busy.util_pct, 93, "fields left out keep their value");
  assert.equal(busy.memory_used_mb, 20000);
  assert.equal(busy.temp_c, 71);
  assert.deepEqual(busy.processes, [{ pid: 7, used_mb: 20000 }]);
  assert.equal(busy.memory_total_mb, 24576);
  assert.equal(idle.util_pct, 0);
  assert.deepEqual(idle.processes, []);
  assert.equal(gpus.devices()[0].name, "Fake RTX 4090");
});

Deno.test("setLoad() can make a GPU unreadable and heal it", () => {
  const gpus = createFakeGpus(2);
  gpus.setLoad(1, { util_pct: 50, error: "GPU_IS_LOST" });
  const lost = gpus.sample()[1];
  assert.equal(lost.error, "GPU_IS_LOST");
  assert.equal(lost.util_pct, null);
  assert.deepEqual(lost.processes, []);
  assert.equal(gpus.sample()[0].error, undefined);
  gpus.setLoad(1, { error: null });
  assert.equal(gpus.sample()[1].util_pct, 50);
  assert.equal(gpus.sample()[1].error, undefined);
});

Deno.test("setLoad() copies its input and sample() returns copies", () => {
  const gpus = createFakeGpus(1);
  const processes = [{ pid: 1, used_mb: 10 }];
  gpus.setLoad(0, { processes });
  processes[0].pid = 999;
  gpus.sample()[0].processes[0].used_mb = 0;
  assert.deepEqual(gpus.sample()[0].processes, [{ pid: 1, used_mb: 10 }]);
});

Deno.test("setLoad() rejects an unknown GPU and an impossible utilisation", () => {
  const gpus = createFakeGpus(2);
  assert.throws(() => gpus.setLoad(2, { util_pct: 1 }), /fake GPU 2: there are 2/);
  assert.throws(() => gpus.setLoad(0, { util_pct: 101 }), /util_pct must be 0\.\.100, got 101/);
  assert.throws(() => createFakeGpus(-1), RangeError);
});
