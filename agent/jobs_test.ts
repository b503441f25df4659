import { assert, assertEquals } from "../tests/assert.ts";
import { tfeventsPath } from "../tests/fixtures/mod.ts";
import type { DispatchSpec } from "../protocol/agent.ts";
import { eventually } from "./_fake_server.ts";
import { dispatchSpec, FakeRunner } from "./_testing.ts";
import type { NewDataFrame } from "./frames.ts";
import { JobManager } from "./jobs.ts";
import { silentLogger } from "./log.ts";
import { loadState } from "./state_file.ts";

async function setup(
  dataDir?: string,
  lease: { fenceAfterS?: number; clock?: { ms: number } } = {},
) {
  const dir = dataDir ?? await Deno.makeTempDir();
  const runner = new FakeRunner();
  const frames: NewDataFrame[] = [];
  const jobs = new JobManager({
    dataDir: dir,
    runners: { process: runner, docker: null },
    emit: (frame) => Promise.resolve(frames.push(frame)),
    jobEnv: (spec: DispatchSpec) => ({ GPUCTL_RUN_ID: spec.run_id }),
    log: silentLogger,
    now: () => 1_700_000_000_000,
    watchPollMs: 20,
    logFlushMs: 10,
    fenceAfterS: lease.fenceAfterS ?? null,
    monotonic: lease.clock ? () => lease.clock!.ms : undefined,
  });
  return { dir, runner, frames, jobs };
}

const states = (frames: NewDataFrame[]) =>
  frames.flatMap((f) => f.type === "job_state" ? [f.state] : []);
const lines = (frames: NewDataFrame[]) =>
  frames.flatMap((f) => f.type === "logs" ? f.lines.map((l) => `${l.seq}:${l.text}`) : []);

Deno.test("JobManager starts a dispatched attempt and reports RUNNING, its output, then EXITED", async () => {
  const { dir, runner, frames, jobs } = await setup();
  try {
    jobs.dispatch(dispatchSpec({ working_dir: dir }));
    jobs.dispatch(dispatchSpec({ working_dir: dir })); // repeated: ignored
    await eventually("the start", () => runner.started.length === 1);
    const { spec, handle } = runner.started[0];
    assertEquals(spec.run_dir, `${dir}/runs/r-abc`);
    assertEquals(spec.env, { GPUCTL_RUN_ID: "r-abc" });
    await eventually("RUNNING", () => states(frames).includes("RUNNING"));
    assertEquals(jobs.running(), [{
      job_id: "j-1",
      attempt: 2,
      run_id: "r-abc",
      pid: 4242,
      state: "RUNNING",
    }]);
    assertEquals(jobs.findRun("r-abc"), { job_id: "j-1", attempt: 2, run_id: "r-abc" });
    handle.print("1", "2");
    handle.end({ log_tail: ["1", "2"] });
    await jobs.idle();
    assertEquals(states(frames), ["RUNNING", "EXITED"]);
    assertEquals(lines(frames), ["1:1", "2:2"]);
    const end = frames.at(-1)!;
    assert(end.type === "job_state");
    assertEquals([end.exit_code, end.failure_class, end.log_tail], [0, null, ["1", "2"]]);
    assertEquals(jobs.running(), []);
    assertEquals((await loadState(jobs.statePath)).attempts, []);
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("JobManager reports DISPATCH_FAILED without RUNNING when the runner could not start", async () => {
  const { dir, runner, frames, jobs } = await setup();
  try {
    runner.failStart = `working directory "/nope" does not exist`;
    jobs.dispatch(dispatchSpec({ working_dir: "/nope" }));
    await eventually("the end", () => frames.length > 0);
    await jobs.idle();
    assertEquals(states(frames), ["DISPATCH_FAILED"]);
    const end = frames[0];
    assert(end.type === "job_state");
    assertEquals(end.reason, `working directory "/nope" does not exist`);
    jobs.dispatch(dispatchSpec({ runner: "docker", image: "x", job_id: "j-2", run_id: "r-2" }));
    await eventually("the docker end", () => frames.length === 2);
    assertEquals(states(frames), ["DISPATCH_FAILED", "DISPATCH_FAILED"]);
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("JobManager cancels with the grace period the server gave", async () => {
  const { dir, runner, frames, jobs } = await setup();
  try {
    jobs.dispatch(dispatchSpec({ working_dir: dir }));
    await eventually("RUNNING", () => states(frames).includes("RUNNING"));
    jobs.cancel("j-1", 1, 0, "wrong attempt"); // not running here: ignored
    jobs.cancel("j-1", 2, 0, "stale copy");
    await jobs.idle();
    assertEquals(runner.started[0].handle.cancels, [0]);
    assertEquals(states(frames), ["RUNNING", "CANCELLED"]);
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("JobManager leaves attempts running on stop and a new one reattaches after the last line", async () => {
  const first = await setup();
  try {
    first.jobs.dispatch(dispatchSpec({ working_dir: first.dir }));
    await eventually("RUNNING", () => states(first.frames).includes("RUNNING"));
    first.runner.started[0].handle.print("a", "b", "c");
    await first.jobs.stop();
    assert(first.runner.started[0].handle.detached, "the handle was detached, not cancelled");
    assertEquals(lines(first.frames), ["1:a", "2:b", "3:c"], "pending lines were flushed on stop");
    const saved = await loadState(first.jobs.statePath);
    assertEquals(saved.attempts.length, 1);
    assertEquals(saved.attempts[0].last_line_seq, 3);
    assertEquals(saved.attempts[0].handle, { run_id: "r-abc", runner: "process", fake: true });

    const second = await setup(first.dir);
    assertEquals(await second.jobs.restore(), 1);
    await eventually("the reattach", () => second.runner.reattached.length === 1);
    assertEquals(second.runner.reattached[0].lastSeq, 3);
    assertEquals(second.jobs.running().map((r) => r.run_id), ["r-abc"]);
    const { handle } = second.runner.reattached[0];
    handle.print("d");
    handle.end({ exit_code: 1, failure_class: "EXIT_CODE", reason: "exited with code 1" });
    await second.jobs.idle();
    assertEquals(lines(second.frames), ["4:d"]);
    assertEquals(states(second.frames), ["EXITED"], "RUNNING was already sent by the first agent");
    await second.jobs.stop();
  } finally {
    await Deno.remove(first.dir, { recursive: true });
  }
});

Deno.test("JobManager repeats a cancel the previous agent had begun", async () => {
  const first = await setup();
  try {
    first.jobs.dispatch(dispatchSpec({ working_dir: first.dir }));
    await eventually("RUNNING", () => states(first.frames).includes("RUNNING"));
    first.runner.started[0].handle.cancelEnds = false;
    first.jobs.cancel("j-1", 2, 7, "user");
    assertEquals(first.jobs.running()[0].state, "STOPPING");
    await first.jobs.stop();
    const second = await setup(first.dir);
    await second.jobs.restore();
    await eventually("the reattach", () => second.runner.reattached.length === 1);
    await eventually(
      "the cancel again",
      () => second.runner.reattached[0].handle.cancels.length === 1,
    );
    assertEquals(second.runner.reattached[0].handle.cancels, [7]);
    await second.jobs.idle();
    assertEquals(states(second.frames), ["CANCELLED"]);
    await second.jobs.stop();
  } finally {
    await Deno.remove(first.dir, { recursive: true });
  }
});

Deno.test("JobManager ends reattached attempts that are gone with what the runner knows", async () => {
  const first = await setup();
  try {
    first.jobs.dispatch(dispatchSpec({ working_dir: first.dir }));
    await eventually("RUNNING", () => states(first.frames).includes("RUNNING"));
    await first.jobs.stop();
    const second = await setup(first.dir);
    second.runner.reattachEnded = {
      exit_code: null,
      failure_class: "AGENT_RESTART",
      reason: "the process ended while no agent watched it",
    };
    await second.jobs.restore();
    await second.jobs.idle();
    assertEquals(states(second.frames), ["GONE"]);
    assertEquals((await loadState(second.jobs.statePath)).attempts, []);
    await second.jobs.stop();
  } finally {
    await Deno.remove(first.dir, { recursive: true });
  }
});

Deno.test("JobManager sends new TensorBoard scalars and settled checkpoints, not older files", async () => {
  const { dir, runner, frames, jobs } = await setup();
  const fixtures = tfeventsPath("torch-logs");
  try {
    await Deno.mkdir(`${dir}/runs`);
    await Deno.mkdir(`${dir}/ckpt`);
    await Deno.writeTextFile(`${dir}/ckpt/old-step-1.pt`, "old");
    const [older, newer] = [...Deno.readDirSync(fixtures)].map((e) => e.name).sort();
    await Deno.copyFile(`${fixtures}/${older}`, `${dir}/runs/${older}`); // before the attempt
    jobs.start();
    jobs.dispatch(dispatchSpec({ working_dir: dir, checkpoint_dir: "ckpt" }));
    await eventually("RUNNING", () => states(frames).includes("RUNNING"));
    await Deno.copyFile(`${fixtures}/${newer}`, `${dir}/runs/${newer}`);
    await Deno.writeTextFile(`${dir}/ckpt/model-step-7.pt`, "weights");
    await eventually("metrics", () => frames.some((f) => f.type === "metrics"));
    runner.started[0].handle.end();
    await jobs.idle();
    const metrics = frames.flatMap((f) => f.type === "metrics" ? f.points : []);
    // Only the file written during the attempt (value = 2*step); the older one was there before.
    assertEquals(
      metrics.map((p) => [p.key, p.step, p.value]),
      Array.from({ length: 100 }, (_, step) => ["y=x", step, 2 * step]),
    );
    const checkpoints = frames.flatMap((f) => f.type === "checkpoint" ? [f.checkpoint] : []);
    const written = (await Deno.stat(`${dir}/ckpt/model-step-7.pt`)).mtime!.getTime() / 1000;
    assertEquals(checkpoints.map(({ fingerprint: _, ...c }) => c), [{
      path: `${dir}/ckpt/model-step-7.pt`,
      size_bytes: 7,
      mtime: written,
      step: 7,
    }]);
    assert(/^[0-9a-f]{64}$/.test(checkpoints[0].fingerprint ?? ""), "a fingerprint");
    assertEquals(states(frames), ["RUNNING", "EXITED"]);
    assertEquals(frames.at(-1)!.type, "job_state", "the end comes after every other frame");
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A JobManager whose spool refuses every frame while `disk.full` (ENOSPC). */
async function setupFullDisk() {
  const dir = await Deno.makeTempDir();
  const runner = new FakeRunner();
  const frames: NewDataFrame[] = [];
  const disk = { full: true, refused: 0 };
  const jobs = new JobManager({
    dataDir: dir,
    runners: { process: runner, docker: null },
    emit: (frame) => {
      if (disk.full) {
        disk.refused++;
        return Promise.reject(new Error("No space left on device (os error 28)"));
      }
      frames.push(frame);
      return Promise.resolve();
    },
    jobEnv: () => ({}),
    log: silentLogger,
    now: () => 1_700_000_000_000,
    watchPollMs: 20,
    logFlushMs: 10,
  });
  return { dir, runner, frames, disk, jobs };
}

Deno.test("a full disk loses nothing: refused frames wait, in order, and the end waits for them", async () => {
  const { dir, runner, frames, disk, jobs } = await setupFullDisk();
  try {
    jobs.start();
    jobs.dispatch(dispatchSpec({ working_dir: dir }));
    await eventually("the start", () => runner.started.length === 1);
    const { handle } = runner.started[0];
    handle.print("1", "2");
    await eventually("refusals", () => disk.refused >= 3);
    assertEquals(frames, [], "nothing got through while the disk was full");
    disk.full = false; // space freed: the next watcher poll sends what waited
    await eventually("the waiting frames", () => lines(frames).length === 2);
    handle.print("3");
    await eventually("line 3", () => lines(frames).length === 3);
    disk.full = true; // full again as the job ends: the end waits for the disk
    handle.end();
    await eventually("a refused end", () => disk.refused >= 6);
    disk.full = false;
    await jobs.idle();
    assertEquals(states(frames), ["RUNNING", "EXITED"]);
    assertEquals(lines(frames), ["1:1", "2:2", "3:3"]);
    assertEquals(frames.at(-1)!.type, "job_state");
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("scalars written while the disk is full arrive once, after the frames that waited", async () => {
  const { dir, runner, frames, disk, jobs } = await setupFullDisk();
  const fixtures = tfeventsPath("torch-logs");
  try {
    await Deno.mkdir(`${dir}/runs`);
    jobs.start();
    jobs.dispatch(dispatchSpec({ working_dir: dir }));
    await eventually("the start", () => runner.started.length === 1);
    const newer = [...Deno.readDirSync(fixtures)].map((e) => e.name).sort().at(-1)!;
    await Deno.copyFile(`${fixtures}/${newer}`, `${dir}/runs/${newer}`);
    await eventually("several refused polls", () => disk.refused >= 5);
    disk.full = false;
    await eventually("the scalars", () => frames.some((f) => f.type === "metrics"));
    runner.started[0].handle.end();
    await jobs.idle();
    const steps = frames.flatMap((f) => f.type === "metrics" ? f.points.map((p) => p.step) : []);
    assertEquals(steps, Array.from({ length: 100 }, (_, step) => step), "each point once");
    assertEquals(states(frames), ["RUNNING", "EXITED"]);
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the fence: out of contact past fence_after_s, the agent stops its attempts as NODE_LOST; wait jobs run on", async () => {
  const clock = { ms: 0 };
  const { dir, runner, frames, jobs } = await setup(undefined, { fenceAfterS: 10, clock });
  try {
    jobs.dispatch(dispatchSpec({ working_dir: dir, grace_s: 3 }));
    jobs.dispatch(dispatchSpec({
      working_dir: dir,
      job_id: "j-wait",
      run_id: "r-wait",
      on_node_lost: "wait",
    }));
    await eventually("both RUNNING", () => states(frames).length === 2);
    clock.ms = 8_000;
    assertEquals(jobs.checkLease(), []);
    jobs.renewLease(7_000); // the server answered a heartbeat sent at 7 s
    clock.ms = 17_000;
    assertEquals(jobs.checkLease(), []); // 10 s since the renewal: not past the lease
    clock.ms = 17_001;
    assertEquals(jobs.checkLease(), [{ job_id: "j-1", attempt: 2, run_id: "r-abc" }]);
    assertEquals(jobs.checkLease(), []); // once
    const fenced = runner.started.find((s) => s.spec.run_id === "r-abc")!;
    const waiting = runner.started.find((s) => s.spec.run_id === "r-wait")!;
    assertEquals([fenced.handle.cancels, waiting.handle.cancels], [[3], []]);
    await eventually("the end", () => states(frames).length === 3);
    const end = frames.findLast((f) => f.type === "job_state")!;
    assert(end.type === "job_state");
    assertEquals([end.state, end.failure_class], ["EXITED", "NODE_LOST"]);
    assert(
      end.reason!.includes("no contact with the server for 10 s (fence_after_s 10)"),
      end.reason!,
    );
    const event = frames.find((f) => f.type === "event");
    assert(event?.type === "event" && event.event.type === "JOB_FENCED", JSON.stringify(event));
    assertEquals(jobs.running().map((p) => p.job_id), ["j-wait"]);
    await jobs.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the fence counts on across an agent restart from the last renewal", async () => {
  const firstClock = { ms: 0 };
  const first = await setup(undefined, { fenceAfterS: 10, clock: firstClock });
  try {
    firstClock.ms = 50_000;
    first.jobs.renewLease(49_000); // 1 s ago
    await eventually("the lease file", async () => {
      try {
        return (await Deno.readTextFile(first.jobs.leasePath)).includes("renewed_at_ms");
      } catch {
        return false;
      }
    });
    await first.jobs.stop();
    // The next agent's monotonic clock starts afresh; its wall clock (now() in setup) says
    // no time passed, so the lease it inherits is 1 s old, not new.
    const clock = { ms: 0 };
    const again = await setup(first.dir, { fenceAfterS: 10, clock });
    await again.jobs.restore();
    again.jobs.dispatch(dispatchSpec({ working_dir: first.dir }));
    await eventually("RUNNING", () => states(again.frames).includes("RUNNING"));
    clock.ms = 8_999;
    assertEquals(again.jobs.checkLease(), []);
    clock.ms = 9_001;
    assertEquals(again.jobs.checkLease().length, 1);
    await again.jobs.stop();
  } finally {
    await Deno.remove(first.dir, { recursive: true });
  }
});
