import { assert, assertEquals } from "../tests/assert.ts";
import { dispatchSpec } from "./_testing.ts";
import { buildJobEnv, SDK_DIR, sdkDirFrom } from "./job_env.ts";

const ctx = {
  serverUrl: "http://srv:8600",
  ingestPort: 4321,
  sdkDir: "/repo/sdk/python",
  pythonPath: null,
};

Deno.test("buildJobEnv() sets exactly the assigned GPUs and the gpuctl variables", () => {
  const env = buildJobEnv(dispatchSpec({ gpu_indices: [3, 1], env: { LR: "0.1" } }), ctx);
  assertEquals(env, {
    LR: "0.1",
    CUDA_VISIBLE_DEVICES: "3,1",
    CUDA_DEVICE_ORDER: "PCI_BUS_ID",
    GPUCTL_SERVER_URL: "http://srv:8600",
    GPUCTL_RUN_ID: "r-abc",
    GPUCTL_JOB_ID: "j-1",
    GPUCTL_ATTEMPT: "2",
    GPUCTL_PROJECT: "proj",
    GPUCTL_EXPERIMENT: "exp",
    GPUCTL_INGEST_URL: "http://127.0.0.1:4321/runs/r-abc",
    PYTHONUNBUFFERED: "1",
    PYTHONPATH: "/repo/sdk/python",
  });
});

Deno.test("buildJobEnv() gives CPU-only jobs an empty CUDA_VISIBLE_DEVICES the job cannot override", () => {
  const env = buildJobEnv(
    dispatchSpec({ env: { CUDA_VISIBLE_DEVICES: "0,1,2,3", GPUCTL_RUN_ID: "forged" } }),
    ctx,
  );
  assertEquals(env.CUDA_VISIBLE_DEVICES, "");
  assertEquals(env.GPUCTL_RUN_ID, "r-abc");
});

Deno.test("buildJobEnv() puts the SDK first on PYTHONPATH and keeps the existing path", () => {
  assertEquals(
    buildJobEnv(dispatchSpec({ env: { PYTHONPATH: "/mine" } }), ctx).PYTHONPATH,
    "/repo/sdk/python:/mine",
  );
  assertEquals(
    buildJobEnv(dispatchSpec(), { ...ctx, pythonPath: "/agent/lib" }).PYTHONPATH,
    "/repo/sdk/python:/agent/lib",
  );
  assertEquals(buildJobEnv(dispatchSpec({ experiment: null }), ctx).GPUCTL_EXPERIMENT, "");
});

Deno.test("SDK_DIR points at this checkout's Python SDK", async () => {
  assert(SDK_DIR !== null);
  assert((await Deno.stat(`${SDK_DIR}/gpuctl/__init__.py`)).isFile);
  assertEquals(sdkDirFrom("file:///a%20b/agent/job_env.ts"), "/a b/sdk/python");
  assertEquals(sdkDirFrom("https://example.com/agent/job_env.ts"), null);
});
