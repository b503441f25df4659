import { assertEquals } from "../tests/assert.ts";
import { createFakeGpus } from "./gpu/mod.ts";
import type { NewDataFrame } from "./frames.ts";
import { silentLogger } from "./log.ts";
import { Telemetry, type TelemetryJob } from "./telemetry.ts";

const GIB = 1024 ** 3;

function setup(free: Record<string, number>) {
  const gpus = createFakeGpus(2);
  const emitted: NewDataFrame[] = [];
  let step = 0;
  const job: TelemetryJob = {
    ref: { job_id: "j-1", attempt: 1, run_id: "r-1" },
    gpu_indices: [1],
    working_dir: "/work/j1",
    pids: () => [100, 101],
    nextSysStep: () => step++,
  };
  const telemetry = new Telemetry({
    probe: gpus,
    host: { cpuPct: () => 25, memory: () => ({ totalMb: 1000, usedMb: 400 }) },
    dataDir: "/data",
    jobs: () => [job],
    emit: (frame) => Promise.resolve(emitted.push(frame)),
    log: silentLogger,
    sampleMs: 1000,
    now: () => 1_700_000_000_000,
    diskUsage: (path) => ({ freeBytes: (free[path] ?? 100) * GIB, totalBytes: 500 * GIB }),
  });
  return { gpus, emitted, telemetry };
}

Deno.test("Telemetry sends each job the readings of its own GPUs on stream sys", async () => {
  const { gpus, emitted, telemetry } = setup({});
  gpus.setLoad(0, { util_pct: 11 });
  gpus.setLoad(1, { util_pct: 97, memory_used_mb: 30000, temp_c: 70, power_w: 300 });
  assertEquals(await telemetry.runOnce(), { metricsFrames: 1, events: 0 });
  await telemetry.runOnce();
  const frames = emitted.filter((f) => f.type === "metrics");
  assertEquals(frames.length, 2);
  const [first, second] = frames;
  if (first.type !== "metrics" || second.type !== "metrics") throw new Error("unreachable");
  assertEquals(first.stream, "sys");
  assertEquals(first.run_id, "r-1");
  assertEquals(
    first.points.map((p) => [p.key, p.step, p.value]),
    [
      ["sys/gpu1/util", 0, 97],
      ["sys/gpu1/mem_used_mb", 0, 30000],
      ["sys/gpu1/temp_c", 0, 70],
      ["sys/gpu1/power_w", 0, 300],
      ["sys/cpu_pct", 0, 25],
      ["sys/mem_used_mb", 0, 400],
    ],
  );
  assertEquals(second.points[0].step, 1, "the step counts samples");
  const latest = telemetry.latest();
  assertEquals(latest.gpus.map((g) => g.util_pct), [11, 97]);
  assertEquals([latest.cpu_pct, latest.mem_used_mb, latest.disk_free_mb], [25, 400, 102400]);
});

Deno.test("Telemetry raises FOREIGN_GPU_PROCESS once per (gpu, pid), ignoring the jobs' own", async () => {
  const { gpus, emitted, telemetry } = setup({});
  gpus.setLoad(1, { processes: [{ pid: 100, used_mb: 1000 }, { pid: 4242, used_mb: 500 }] });
  await telemetry.runOnce();
  await telemetry.runOnce();
  const events = emitted.flatMap((f) => f.type === "event" ? [f.event] : []);
  assertEquals(events.length, 1);
  assertEquals(events[0].type, "FOREIGN_GPU_PROCESS");
  assertEquals(events[0].severity, "warning");
  assertEquals(events[0].data, { gpu_index: 1, pid: 4242, used_mb: 500 });
  assertEquals(events[0].job_id, "j-1");
  assertEquals(telemetry.latest().foreign, [{ gpu_index: 1, pid: 4242, used_mb: 500 }]);
});

Deno.test("Telemetry raises DISK_LOW per path and level", async () => {
  const free: Record<string, number> = { "/data": 8, "/work/j1": 50 };
  const { emitted, telemetry } = setup(free);
  await telemetry.runOnce();
  await telemetry.runOnce();
  free["/work/j1"] = 1;
  await telemetry.runOnce();
  const events = emitted.flatMap((f) => f.type === "event" ? [f.event] : []);
  assertEquals(
    events.map((e) => [e.type, e.severity, e.data?.path, e.job_id]),
    [
      ["DISK_LOW", "warning", "/data", undefined],
      ["DISK_LOW", "critical", "/work/j1", "j-1"],
    ],
  );
});
