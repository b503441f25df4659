import assert from "node:assert/strict";
import { INITIAL_PROCESS_CAPACITY, openNvml, type OpenNvmlOptions } from "./nvml.ts";
import { compileFakeNvml, type FakeNvmlEnv, setFakeNvmlEnv } from "./_fake_nvml_library.ts";
import { assertProbeConforms } from "./_probe_conformance.ts";
import type { GpuProbe } from "./types.ts";

// One Deno.test with steps: the stand-in is compiled once, and its configuration lives in
// process-wide environment variables, so the steps must not run concurrently.
Deno.test("openNvml() over a C stand-in for libnvidia-ml", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_fake_nvml_" });
  try {
    const libraryPath = await compileFakeNvml(dir);
    const v1LibraryPath = await compileFakeNvml(dir, { v1Only: true });

    /** Configures the stand-in, opens it, and returns the probe and what it logged. */
    const open = (env: FakeNvmlEnv, options: OpenNvmlOptions = {}) => {
      setFakeNvmlEnv(env);
      const logs: string[] = [];
      const result = openNvml({ libraryPath, log: (msg) => logs.push(msg), ...options });
      if (result.probe === null) assert.fail(`openNvml failed: ${result.reason}`);
      return { probe: result.probe, logs };
    };
    const withProbe = (probe: GpuProbe, fn: () => void): void => {
      try {
        fn();
      } finally {
        probe.close();
      }
    };

    await t.step("passes the GpuProbe conformance suite", () => {
      const { probe, logs } = open({
        FAKE_NVML_GPUS: "3",
        FAKE_NVML_COMPUTE_PROCS: "0:1234:512,2:99:na",
      });
      assert.equal(probe.kind, "nvml");
      assertProbeConforms(probe, 3);
      assert.deepEqual(logs, []);
    });

    await t.step("reads names, UUIDs and readings through NVML's struct layouts", () => {
      const { probe } = open({
        FAKE_NVML_GPUS: "2",
        FAKE_NVML_COMPUTE_PROCS: "0:1234:512,1:99:na",
      });
      withProbe(probe, () => {
        assert.equal(probe.driverVersion(), "550.54.15");
        assert.deepEqual(probe.devices(), [
          {
            index: 0,
            uuid: "GPU-5eed0000-0000-4000-8000-000000000000",
            name: "Stand-in GPU 0",
            memory_total_mb: 81559,
            fake: false,
          },
          {
            index: 1,
            uuid: "GPU-5eed0000-0000-4000-8000-000000000001",
            name: "Stand-in GPU 1",
            memory_total_mb: 81559,
            fake: false,
          },
        ]);
        assert.deepEqual(probe.sample(), [
          {
            index: 0,
            uuid: "GPU-5eed0000-0000-4000-8000-000000000000",
            memory_used_mb: 1031,
            memory_total_mb: 81559,
            util_pct: 20,
            temp_c: 40,
            power_w: 150,
            processes: [{ pid: 1234, used_mb: 512 }],
          },
          {
            index: 1,
            uuid: "GPU-5eed0000-0000-4000-8000-000000000001",
            memory_used_mb: 2055,
            memory_total_mb: 81559,
            util_pct: 30,
            temp_c: 41,
            power_w: 151.5,
            processes: [{ pid: 99, used_mb: null }],
          },
        ]);
      });
    });

    await t.step("reports an unsupported field as null, silently, and keeps the rest", () => {
      const { probe, logs } = open({
        FAKE_NVML_GPUS: "2",
        FAKE_NVML_NOT_SUPPORTED: "power@1,temp@0,driver@0",
      });
      withProbe(probe, () => {
        const [gpu0, gpu1] = probe.sample();
        assert.equal(gpu0.temp_c, null);
        assert.equal(gpu0.power_w, 150);
        assert.equal(gpu1.power_w, null);
        assert.equal(gpu1.temp_c, 41);
        assert.equal(gpu1.util_pct, 30);
        assert.equal(gpu0.error, undefined);
        assert.equal(gpu1.error, undefined);
        assert.equal(probe.driverVersion(), null);
        assert.deepEqual(logs, []);
      });
    });

    await t.step("logs a field failing with another code once and reports it as null", () => {
      const { probe, logs } = open({ FAKE_NVML_GPUS: "1", FAKE_NVML_FAILING: "util@0" });
      withProbe(probe, () => {
        assert.equal(probe.sample()[0].util_pct, null);
        assert.equal(probe.sample()[0].util_pct, null);
        assert.equal(probe.sample()[0].memory_used_mb, 1031);
        assert.equal(logs.length, 1, logs.join("\n"));
        assert.match(logs[0], /util of GPU 0: UNKNOWN \(999: Unknown Error\)/);
      });
    });

    await t.step("reports a lost GPU with GPU_IS_LOST and still samples the others", () => {
      const { probe, logs } = open({ FAKE_NVML_GPUS: "3" });
      withProbe(probe, () => {
        Deno.env.set("FAKE_NVML_LOST", "1");
        const samples = probe.sample();
        assert.deepEqual(samples[1], {
          index: 1,
          uuid: "GPU-5eed0000-0000-4000-8000-000000000001",
          memory_used_mb: null,
          memory_total_mb: null,
          util_pct: null,
          temp_c: null,
          power_w: null,
          processes: [],
          error: "GPU_IS_LOST",
        });
        assert.equal(samples[0].util_pct, 20);
        assert.equal(samples[2].util_pct, 40);
        assert.equal(samples[2].error, undefined);
        probe.sample();
        assert.equal(logs.length, 1, "a lost GPU is logged once, not every sample");
        assert.match(logs[0], /GPU 1 \(GPU-5eed.*\) cannot be read: GPU_IS_LOST/);

        Deno.env.delete("FAKE_NVML_LOST");
        assert.equal(probe.sample()[1].util_pct, 30);
        assert.equal(logs.length, 2);
        assert.match(logs[1], /GPU 1 .* can be read again/);
      });
    });

    await t.step("lists a GPU that is lost at open with its error", () => {
      const { probe } = open({ FAKE_NVML_GPUS: "2", FAKE_NVML_LOST: "0" });
      withProbe(probe, () => {
        const [gpu0, gpu1] = probe.devices();
        assert.deepEqual(gpu0, {
          index: 0,
          uuid: "",
          name: "",
          memory_total_mb: 0,
          fake: false,
          error: "GPU_IS_LOST",
        });
        assert.equal(gpu1.name, "Stand-in GPU 1");
        assert.equal(probe.sample()[0].error, "GPU_IS_LOST");
        assert.equal(probe.sample()[1].memory_used_mb, 2055);
      });
    });

    await t.step("retries a process list longer than the first buffer with NVML's count", () => {
      const many = INITIAL_PROCESS_CAPACITY * 2 + 5;
      const { probe, logs } = open({
        FAKE_NVML_GPUS: "2",
        FAKE_NVML_MANY_PROCS: `1:${many}`,
      });
      withProbe(probe, () => {
        const expected = Array.from({ length: many }, (_, k) => ({
          pid: 100000 + k,
          used_mb: k + 1,
        }));
        assert.deepEqual(probe.sample()[1].processes, expected);
        assert.deepEqual(probe.sample()[1].processes, expected, "and again, in one call");
        assert.deepEqual(probe.sample()[0].processes, []);
        assert.deepEqual(logs, []);
      });
    });

    await t.step("merges compute and graphics processes by pid", () => {
      const { probe } = open({
        FAKE_NVML_GPUS: "1",
        FAKE_NVML_COMPUTE_PROCS: "0:1234:512,0:55:na",
        FAKE_NVML_GRAPHICS_PROCS: "0:1234:600,0:777:5,0:55:9",
      });
      withProbe(probe, () => {
        assert.deepEqual(probe.sample()[0].processes, [
          { pid: 1234, used_mb: 600 },
          { pid: 55, used_mb: 9 },
          { pid: 777, used_mb: 5 },
        ]);
      });
    });

    await t.step("falls back to the v1 process layout when _v3 is missing", () => {
      const many = INITIAL_PROCESS_CAPACITY + 3;
      const { probe, logs } = open(
        {
          FAKE_NVML_GPUS: "2",
          FAKE_NVML_COMPUTE_PROCS: "0:1234:512,0:4321:na,0:8:7",
          FAKE_NVML_MANY_PROCS: `1:${many}`,
        },
        { libraryPath: v1LibraryPath },
      );
      withProbe(probe, () => {
        const [gpu0, gpu1] = probe.sample();
        assert.deepEqual(gpu0.processes, [
          { pid: 1234, used_mb: 512 },
          { pid: 4321, used_mb: null },
          { pid: 8, used_mb: 7 },
        ]);
        assert.equal(gpu1.processes.length, many);
        assert.deepEqual(gpu1.processes.at(-1), { pid: 100000 + many - 1, used_mb: many });
        assert.deepEqual(logs, []);
      });
    });

    await t.step("opens with zero GPUs", () => {
      const { probe } = open({ FAKE_NVML_GPUS: "0" });
      withProbe(probe, () => {
        assert.deepEqual(probe.devices(), []);
        assert.deepEqual(probe.sample(), []);
      });
    });

    await t.step("returns null with the code's name when nvmlInit_v2 fails", () => {
      setFakeNvmlEnv({ FAKE_NVML_INIT_ERROR: "9" });
      const result = openNvml({ libraryPath });
      assert.equal(result.probe, null);
      assert.equal(
        result.reason,
        `Cannot initialise NVML from "${libraryPath}": nvmlInit_v2 returned ` +
          `DRIVER_NOT_LOADED (9: Driver Not Loaded)`,
      );
    });

    await t.step("returns null with a reason when the library is missing", () => {
      const missing = `${dir}/absent/libnvidia-ml.so.1`;
      const result = openNvml({ libraryPath: missing });
      assert.equal(result.probe, null);
      assert.match(result.reason!, /^Cannot load NVML from ".*absent\/libnvidia-ml\.so\.1": /);
    });

    await t.step("returns null with a reason when the library is not NVML", () => {
      const result = openNvml({ libraryPath: "libc.so.6" });
      assert.equal(result.probe, null);
      assert.match(result.reason!, /^Cannot load NVML from "libc\.so\.6": .*nvml/);
    });
  } finally {
    setFakeNvmlEnv();
    await Deno.remove(dir, { recursive: true });
  }
});
