import { assert, assertEquals } from "../tests/assert.ts";
import { dispatchSpec } from "./_testing.ts";
import { buildJobEnv, SDK_DIR, sdkDirFrom } from "./job_env.ts";

const ctx = {
  serverUrl: "http://srv:8600",
  ingestSocket: "/data/ingest/ingest.sock",
  runsDir: "/data/runs",
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
    GPUCTL_INGEST_URL: "http+unix://%2Fdata%2Fingest%2Fingest.sock/runs/r-abc",
    GPUCTL_RUN_DIR: "/data/runs/r-abc/files",
    PYTHONUNBUFFERED: "1",
    PYTHONPATH: "/repo/sdk/python",
    PYTHONDONTWRITEBYTECODE: "1",
  });
});

Deno.test("buildJobEnv() keeps bytecode out of the SDK's folder unless the job decides", () => {
  assertEquals(buildJobEnv(dispatchSpec(), ctx).PYTHONDONTWRITEBYTECODE, "1");
  const own = buildJobEnv(dispatchSpec({ env: { PYTHONDONTWRITEBYTECODE: "" } }), ctx);
  assertEquals(own.PYTHONDONTWRITEBYTECODE, "");
  const noSdk = buildJobEnv(dispatchSpec(), { ...ctx, sdkDir: null });
  assertEquals(noSdk.PYTHONDONTWRITEBYTECODE, undefined);
});

Deno.test("buildJobEnv() gives every run a folder of its own and a socket URL that outlives the agent", () => {
  const first = buildJobEnv(dispatchSpec({ run_id: "r-1" }), ctx);
  const second = buildJobEnv(dispatchSpec({ run_id: "r-2" }), ctx);
  assert(first.GPUCTL_RUN_DIR !== second.GPUCTL_RUN_DIR);
  // Only the data dir decides the URL: an agent started again gives (and serves) the same one.
  assertEquals(
    first.GPUCTL_INGEST_URL,
    buildJobEnv(dispatchSpec({ run_id: "r-1" }), ctx).GPUCTL_INGEST_URL,
  );
  assertEquals(
    decodeURIComponent(new URL(first.GPUCTL_INGEST_URL).hostname),
    "/data/ingest/ingest.sock",
  );
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
