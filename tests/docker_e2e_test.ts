/**
 * End to end with a real Docker engine: `deno task server`, `deno task agent --fake-gpus 1`
 * whose docker CLI reaches a private dockerd (tests/_dockerd.ts), and `runner: docker` jobs
 * in the small local image. The SDK in the container reaches the agent through the mounted
 * ingest socket; TensorBoard files and checkpoints written in the container land on the run;
 * a missing image gets its card; a real PyTorch script (torch from the framework tier's
 * virtualenv, mounted read-only) records what a process job records.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { frameworkPython, frameworkVenvDir } from "./_frameworks.ts";
import { dockerMissing, startEngine, type TestEngine } from "./_dockerd.ts";
import {
  api,
  logText,
  nodeOnline,
  spawnDeno,
  startServerProcess,
  taskArgs,
  waitJob,
} from "./_processes.ts";

const missing = dockerMissing();
const skip = missing !== null && Deno.env.get("CI") !== "true";
const venv = frameworkPython();

/** A stdlib writer of TensorBoard event files (TFRecord framing, masked CRC-32C). */
const TB_WRITER = `
import struct, time
_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)
def _crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
def _varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | 0x80 if n else b])
        if not n:
            return out
def _ld(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload
def _event(step, body):
    return _varint(1 << 3 | 1) + struct.pack("<d", time.time()) + _varint(2 << 3) + _varint(step) + body
def _record(data):
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", _crc(head)) + data + struct.pack("<I", _crc(data))
class Events:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.f.write(_record(_event(0, _ld(3, b"brain.Event:2"))))
    def scalar(self, tag, value, step):
        v = _ld(1, tag.encode()) + _varint(2 << 3 | 5) + struct.pack("<f", value)
        self.f.write(_record(_event(step, _ld(5, _ld(1, v)))))
        self.f.flush()
`;

const TRAIN = `${TB_WRITER}
import os, socket
from gpuctl import run
os.makedirs("runs", exist_ok=True)
os.makedirs("ckpt", exist_ok=True)
tb = Events(f"runs/events.out.tfevents.{int(time.time())}.{socket.gethostname()}")
print("CVD=" + os.environ.get("CUDA_VISIBLE_DEVICES", "?"), "uid=" + str(os.getuid()), flush=True)
for step in range(4):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    tb.scalar("tb/accuracy", 0.5 + step / 10, step)
    with open(f"ckpt/ckpt-{step}.pt", "wb") as f:
        f.write(b"weights")
    time.sleep(0.3)
run.finish()
print("done", flush=True)
`;

const TORCH_TRAIN = `
import os, sys, types
# TensorFlow is in this virtualenv too: TensorBoard would import it (tens of seconds) only to
# fall back to its own stub writer, which it uses at once with this module present.
sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
import torch
from torch.utils.tensorboard import SummaryWriter
from gpuctl import run
torch.manual_seed(0)
x = torch.randn(64, 4)
y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
writer = SummaryWriter("runs")
os.makedirs("checkpoints", exist_ok=True)
for step in range(1, 6):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    writer.add_scalar("train/loss", loss.item(), step)
    run.log({"sdk/loss": loss.item()}, step=step)
    torch.save(model.state_dict(), f"checkpoints/ckpt-{step}.pt")
    print(f"step {step} loss {loss.item():.4f}", flush=True)
writer.close()
run.finish()
`;

/** A server, and an agent whose docker CLI reaches `engine`, with `agent.yaml` lines. */
async function startCluster(engine: TestEngine, agentYaml: string[]) {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-e2e-docker-" });
  await Deno.mkdir(`${home}/server`);
  await Deno.mkdir(`${home}/agent-home`);
  await Deno.writeTextFile(`${home}/agent-home/agent.yaml`, agentYaml.join("\n") + "\n");
  const server = await startServerProcess(`${home}/server`);
  const startAgent = () =>
    spawnDeno([
      ...taskArgs("agent"),
      "--server",
      server.url,
      "--token",
      server.agentToken,
      "--data-dir",
      `${home}/agent`,
      "--node-id",
      "docker-node",
      "--fake-gpus",
      "1",
      "--heartbeat-s",
      "1",
      "--sample-s",
      "1",
    ], { GPUCTL_HOME: `${home}/agent-home`, ...engine.env });
  const agent = { proc: startAgent() };
  const call = api(server.url, server.adminToken);
  const stop = async () => {
    await agent.proc.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true }).catch(() => {});
  };
  try {
    await nodeOnline(call);
  } catch (err) {
    const said = agent.proc.output().slice(-3000);
    await stop();
    throw new Error(`${(err as Error).message}; agent output:\n${said}`);
  }
  return { home, call, agent, startAgent, stop };
}

async function series(call: ReturnType<typeof api>, runId: string, key: string) {
  const res = await call("POST", "/api/runs/metrics:query", { runs: [runId], keys: [key] });
  const s = res.json.series[0];
  return { steps: (s?.steps ?? []) as number[], values: (s?.values ?? []) as number[] };
}

async function checkpointSteps(call: ReturnType<typeof api>, runId: string): Promise<number[]> {
  const res = await call("GET", `/api/runs/${runId}/checkpoints`);
  return res.json.items.map((c: { step: number }) => c.step).sort((a: number, b: number) => a - b);
}

/** Polls until `fn` holds (the agent sends points and checkpoints within a few seconds). */
async function eventually(what: string, fn: () => Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

Deno.test({
  name: skip
    ? `docker jobs end to end (skipped: ${missing}; CI=true runs it)`
    : "docker jobs end to end: SDK, TensorBoard, checkpoints and logs from a container; a missing image's card",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const engine = await startEngine();
  let cluster: Awaited<ReturnType<typeof startCluster>> | null = null;
  try {
    const mounts = venv.python === null ? [] : venvMounts();
    cluster = await startCluster(
      engine,
      mounts.length === 0 ? [] : [
        `docker_run_args: ${JSON.stringify(mounts.flatMap((m) => ["-v", `${m}:${m}:ro`]))}`,
      ],
    );
    const { call, home } = cluster;
    const work = `${home}/work`;
    await Deno.mkdir(work);
    await Deno.writeTextFile(`${work}/train.py`, TRAIN);

    await t.step(
      "the SDK, TensorBoard files and checkpoints written in the container land on the run",
      async () => {
        const id = (await call("POST", "/api/jobs", {
          name: "in-a-container",
          command: ["python3", "train.py"],
          working_dir: work,
          gpus: 1,
          runner: "docker",
          image: engine.image,
          checkpoint_dir: "ckpt",
        })).json.id;
        const job = await waitJob(call, id, ["SUCCEEDED", "FAILED"], 60_000);
        assertEquals(job.status, "SUCCEEDED", JSON.stringify(job));
        // Fake GPUs: no --gpus, and the job has its slot's index.
        assertEquals(await logText(call, job.run_id), ["CVD=0 uid=0", "done"]);
        assertEquals((await series(call, job.run_id, "train/loss")).steps, [0, 1, 2, 3]);
        await eventually(
          "the TensorBoard points",
          async () => (await series(call, job.run_id, "tb/accuracy")).steps.length === 4,
        );
        const tb = await series(call, job.run_id, "tb/accuracy");
        assertEquals(tb.values.map((v) => Math.round(v * 10) / 10), [0.5, 0.6, 0.7, 0.8]);
        await eventually(
          "the checkpoints",
          async () => (await checkpointSteps(call, job.run_id)).length === 4,
        );
        assertEquals(await checkpointSteps(call, job.run_id), [0, 1, 2, 3]);
        // The files are the container's root's: what a user gets without job_user.
        assertEquals(Deno.statSync(`${work}/ckpt/ckpt-3.pt`).uid, 0);
        assertEquals(await engine.containers(), []);
      },
    );

    await t.step(
      "a missing image fails DISPATCH_FAILED, and the card says to build or load it on the node",
      async () => {
        const id = (await call("POST", "/api/jobs", {
          name: "no-image",
          command: ["python3", "-c", "print('never')"],
          working_dir: work,
          gpus: 0,
          runner: "docker",
          image: "gpuctl-test/not-here:2",
        })).json.id;
        const job = await waitJob(call, id, ["FAILED"], 60_000);
        assertEquals(job.failure_class, "DISPATCH_FAILED");
        const card = (await call("GET", `/api/runs/${job.run_id}/failure`)).json;
        assertStringIncludes(
          JSON.stringify(card),
          "build it there (docker build -t gpuctl-test/not-here:2 .) or load it (docker load -i FILE)",
        );
        assertEquals(await engine.containers(), []);
      },
    );

    await t.step(
      "an agent killed with its docker client leaves no orphan container once it is back",
      async () => {
        const id = (await call("POST", "/api/jobs", {
          name: "outlives-its-agent",
          command: ["python3", "-c", "import time\nprint('up', flush=True)\ntime.sleep(600)"],
          working_dir: work,
          gpus: 0,
          runner: "docker",
          image: engine.image,
          grace_s: 0,
        })).json.id;
        const first = await waitJob(call, id, ["RUNNING"], 60_000);
        await eventually(
          "its first line",
          async () => (await logText(call, first.run_id)).length > 0,
        );
        // As a service manager that kills the agent's whole cgroup would: the agent, the
        // wrapper and the docker client die; the container, in the engine's cgroup, runs on.
        await cluster!.agent.proc.kill("SIGKILL");
        const wrapper = JSON.parse(
          await Deno.readTextFile(`${home}/agent/runs/${first.run_id}/pid.json`),
        ).pid;
        Deno.kill(-wrapper, "SIGKILL");
        const name = `gpuctl-${first.run_id}`;
        const running = await engine.docker("inspect", "--format", "{{.State.Running}}", name);
        assertEquals(running.stdout.trim(), "true", "the container outlived its agent");

        cluster!.agent.proc = cluster!.startAgent();
        await eventually(
          "the old container to go",
          async () => !(await engine.containers()).includes(name),
          60_000,
        );
        // The attempt ended AGENT_RESTART, which is requeued: a new attempt, a new run.
        await eventually(
          "the next attempt",
          async () => (await call("GET", `/api/jobs/${id}`)).json.attempt === 2,
          30_000,
        );
        const events = (await call("GET", `/api/events?run_id=${first.run_id}&limit=50`)).json;
        assertStringIncludes(JSON.stringify(events), "AGENT_RESTART");
        await call("POST", `/api/jobs/${id}/cancel`, {});
        await waitJob(call, id, ["CANCELLED"], 60_000);
        await eventually(
          "no container at all",
          async () => (await engine.containers()).length === 0,
          30_000,
        );
      },
    );

    await t.step({
      name: venv.python === null
        ? `a real PyTorch job in a container (skipped: ${venv.reason})`
        : "a real PyTorch job in a container records its metrics, checkpoints and logs",
      ignore: venv.python === null,
      fn: async () => {
        await Deno.writeTextFile(`${work}/torch_train.py`, TORCH_TRAIN);
        const id = (await call("POST", "/api/jobs", {
          name: "torch-in-a-container",
          command: [`${frameworkVenvDir()}/bin/python`, "torch_train.py"],
          working_dir: work,
          gpus: 0,
          runner: "docker",
          image: engine.image,
          checkpoint_dir: "checkpoints",
        })).json.id;
        const job = await waitJob(call, id, ["SUCCEEDED", "FAILED"], 180_000);
        const log = await logText(call, job.run_id);
        assertEquals(job.status, "SUCCEEDED", log.slice(-20).join("\n"));
        const steps = log.filter((l) => /^step \d loss/.test(l));
        assertEquals(steps.length, 5, log.join("\n"));
        assertEquals((await series(call, job.run_id, "sdk/loss")).steps, [1, 2, 3, 4, 5]);
        await eventually(
          "the TensorBoard points",
          async () => (await series(call, job.run_id, "train/loss")).steps.length === 5,
        );
        const tb = await series(call, job.run_id, "train/loss");
        const sdk = await series(call, job.run_id, "sdk/loss");
        assert(tb.values.every((v, i) => Math.abs(v - sdk.values[i]) < 1e-4), "same losses");
        assert(tb.values[4] < tb.values[0], "the loss went down");
        await eventually(
          "the checkpoints",
          async () => (await checkpointSteps(call, job.run_id)).length === 5,
        );
        assertEquals(await checkpointSteps(call, job.run_id), [1, 2, 3, 4, 5]);
        assertEquals(await engine.containers(), []);
      },
    });
  } finally {
    await cluster?.stop();
    engine.stop();
  }
});

/**
 * What the container needs to run the framework virtualenv's python: the venv, and the
 * Python installation it was made from (its `home` in pyvenv.cfg).
 */
function venvMounts(): string[] {
  const dir = frameworkVenvDir();
  const cfg = Deno.readTextFileSync(`${dir}/pyvenv.cfg`);
  const home = /^home\s*=\s*(.+)$/m.exec(cfg)?.[1].trim();
  const base = home ? Deno.realPathSync(`${home}/..`) : null;
  // A venv of the system's python (/usr/bin) runs on the image's own /usr.
  return base && base !== "/usr" && base !== "/" ? [dir, base] : [dir];
}
