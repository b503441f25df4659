import assert from "node:assert/strict";
import { containerEnv, containerName, createDockerRunner, dockerRunArgs } from "./docker_runner.ts";
import type { RunSpec } from "./types.ts";

// The runner against the real engine, with the conformance suite, is in
// tests/docker_runner_test.ts. Here a `docker` shim runs testdata/fake_docker.py, which runs
// the "container" as a local process and keeps its state in this temp dir: it stands in for
// what the real engine cannot show on a host without the NVIDIA container runtime (`--gpus`),
// and for checks that end before any docker command runs.
const stateDir = Deno.makeTempDirSync({ prefix: "gpuctl_fake_docker_" });
const fakeDocker = new URL("./testdata/fake_docker.py", import.meta.url).pathname;
const shim = `${stateDir}/docker`;
// The interpreter itself, not a version manager's `python3` shim (which costs ~200 ms a call).
const python = new TextDecoder().decode(
  new Deno.Command("python3", { args: ["-c", "import sys; print(sys.executable)"] }).outputSync()
    .stdout,
).trim();
Deno.writeTextFileSync(shim, `#!/bin/sh\nexec "${python}" "${fakeDocker}" "${stateDir}" "$@"\n`);
Deno.chmodSync(shim, 0o755);
globalThis.addEventListener("unload", () => Deno.removeSync(stateDir, { recursive: true }));

const makeRunner = () => createDockerRunner({ docker: shim });

function spec(dir: string, extra: Partial<RunSpec> = {}): RunSpec {
  const runId = `d${crypto.randomUUID().slice(0, 8)}`;
  return {
    run_id: runId,
    job_id: "j-1",
    attempt: 1,
    command: ["python3", "-c", "print('hi')"],
    shell: false,
    working_dir: dir,
    env: {},
    gpu_indices: [],
    runner: "docker",
    image: "img:1",
    run_dir: `${dir}/runs/${runId}`,
    grace_s: 1,
    ...extra,
  };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_docker_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("dockerRunArgs() builds docker run with host network, GPUs, mounts, workdir, env and argv", () => {
  const s = spec("/data/exp", {
    run_id: "r-42",
    gpu_indices: [2, 3],
    env: { CUDA_VISIBLE_DEVICES: "2,3", GPUCTL_RUN_ID: "r-42", ODD: "a b;$(x)" },
  });
  assert.deepEqual(dockerRunArgs(s, { readOnlyMounts: ["/opt/gpuctl/sdk/python"] }), [
    "run",
    "--name",
    "gpuctl-r-42",
    "--label",
    "gpuctl.run_id=r-42",
    "--network",
    "host",
    "--gpus",
    '"device=2,3"',
    "-v",
    "/data/exp:/data/exp",
    "-v",
    "/opt/gpuctl/sdk/python:/opt/gpuctl/sdk/python:ro",
    "-w",
    "/data/exp",
    "--env-file",
    `${s.run_dir}/docker.env`,
    "img:1",
    "python3",
    "-c",
    "print('hi')",
  ]);
});

Deno.test("containerEnv() renumbers the job's host GPUs from 0 and keeps every other variable", () => {
  const s = spec("/w", {
    gpu_indices: [2, 3],
    env: { CUDA_VISIBLE_DEVICES: "2,3", GPUCTL_RUN_ID: "r-42", ODD: "a b;$(x)" },
  });
  assert.deepEqual(containerEnv(s), {
    CUDA_VISIBLE_DEVICES: "0,1",
    GPUCTL_RUN_ID: "r-42",
    ODD: "a b;$(x)",
  });
});

Deno.test("docker runner: a multi-line variable, which --env-file cannot pass, is DISPATCH_FAILED", async () => {
  await withDir(async (dir) => {
    const s = spec(dir, { env: { KEY_PEM: "line1\nline2" } });
    const exit = await (await makeRunner().start(s, { onLine: () => {} })).exited;
    assert.equal(exit.failure_class, "DISPATCH_FAILED");
    assert.match(exit.reason, /KEY_PEM/);
  });
});

Deno.test("dockerRunArgs() leaves out --gpus for CPU jobs and runs a shell string with bash -lc", () => {
  const args = dockerRunArgs(spec("/w", { command: "echo $HOME && ls", shell: true }));
  assert.equal(args.includes("--gpus"), false);
  assert.deepEqual(args.slice(-4), ["img:1", "bash", "-lc", "echo $HOME && ls"]);
});

Deno.test("dockerRunArgs() mounts the run's own folder read-write and the ingest socket's folder read-only", () => {
  const s = spec("/data/exp", {
    env: { GPUCTL_RUN_DIR: "/agent/runs/r-1/files" },
  });
  const args = dockerRunArgs(s, { readOnlyMounts: ["/agent/ingest"] });
  const mounts = args.flatMap((a, i) => args[i - 1] === "-v" ? [a] : []);
  assert.deepEqual(mounts, [
    "/data/exp:/data/exp",
    "/agent/runs/r-1/files:/agent/runs/r-1/files",
    "/agent/ingest:/agent/ingest:ro",
  ]);
});

Deno.test("containerName() replaces characters docker refuses", () => {
  assert.equal(containerName("run/1 x"), "gpuctl-run-1-x");
});

Deno.test("docker runner: with real GPUs, docker run gets --gpus for the job's GPUs and the job sees them from 0", async () => {
  await withDir(async (dir) => {
    const s = spec(dir, {
      command: ["bash", "-c", 'echo "cvd=$CUDA_VISIBLE_DEVICES"'],
      gpu_indices: [1, 3],
      env: { CUDA_VISIBLE_DEVICES: "1,3", K: "v" },
    });
    const lines: string[] = [];
    const handle = await makeRunner().start(s, { onLine: (l) => void lines.push(l.text) });
    assert.equal((await handle.exited).failure_class, null);
    const argv = JSON.parse(
      await Deno.readTextFile(`${stateDir}/${containerName(s.run_id)}.argv.json`),
    );
    assert.deepEqual(argv, ["docker", ...dockerRunArgs(s)]);
    assert.deepEqual(argv.slice(argv.indexOf("--gpus"), argv.indexOf("--gpus") + 2), [
      "--gpus",
      '"device=1,3"',
    ]);
    assert.deepEqual(lines, ["cvd=0,1"]);
  });
});

Deno.test("dockerRunArgs() and containerEnv() with fake GPUs: no --gpus, and the host's indices stay", () => {
  const s = spec("/w", { gpu_indices: [1, 3], env: { CUDA_VISIBLE_DEVICES: "1,3" } });
  assert.equal(dockerRunArgs(s, { gpus: false }).includes("--gpus"), false);
  assert.deepEqual(containerEnv(s, false), { CUDA_VISIBLE_DEVICES: "1,3" });
});

Deno.test("dockerRunArgs() puts the configured docker run options before the image", () => {
  const args = dockerRunArgs(spec("/w"), { runArgs: ["--memory", "8g", "--shm-size", "2g"] });
  const image = args.indexOf("img:1");
  assert.deepEqual(args.slice(image - 4, image + 1), [
    "--memory",
    "8g",
    "--shm-size",
    "2g",
    "img:1",
  ]);
});

Deno.test("docker runner: no docker CLI or no image is DISPATCH_FAILED", async () => {
  await withDir(async (dir) => {
    const noCli = createDockerRunner({ docker: `${dir}/missing-docker` });
    const a = await (await noCli.start(spec(dir), { onLine: () => {} })).exited;
    assert.equal(a.failure_class, "DISPATCH_FAILED");
    assert.match(a.reason, /docker CLI/);
    const b = await (await makeRunner().start(spec(dir, { image: null }), { onLine: () => {} }))
      .exited;
    assert.deepEqual([b.failure_class, b.reason], [
      "DISPATCH_FAILED",
      "no image was given for a docker job",
    ]);
  });
});
