/**
 * A model-based test (fast-check `commands`) of the job state machine against the real
 * services, the real scheduler pass and the real frame applier, with a fake clock and a
 * model of what each node's agent runs: submit, schedule, start, finish (success, exit code,
 * OOM, signal), cancel, retry, a node going silent (lease holds), the node coming back
 * (reattach, or its fenced copies reported), an agent that forgot its jobs, a heartbeat's
 * reconciliation, and time passing. After every command:
 *
 * - only legal transitions happened, and ended jobs stay ended unless retried by a person;
 * - attempts stay within `max_attempts` (infrastructure failures and manual retries apart);
 * - no job ever has two live copies (a copy is live until its agent has surely stopped it:
 *   connected, or within the lease and kill grace after its last contact);
 * - no GPU slot is held by two attempts, neither in the store nor on a node.
 */
import fc from "fast-check";
import { assert, assertEquals } from "./assert.ts";
import type { DispatchSpec, HelloFrame, JobStateFrame } from "../protocol/agent.ts";
import { type Context, createContext } from "../server/context.ts";
import { jobs as jobsDb, openDatabase } from "../server/db/mod.ts";
import type { JobState } from "../server/db/jobs.ts";
import { ConflictError } from "../server/errors.ts";
import { applyDataFrame } from "../server/gateway/apply_frame.ts";
import { cancelJob, retryJob, submitJob } from "../server/jobs/service.ts";
import { leaseHold } from "../server/nodes/lease.ts";
import {
  failVanishedAttempt,
  judgeOwnedProcess,
  liveAttemptsOn,
  markNodeOffline,
  registerNode,
} from "../server/nodes/service.ts";
import { SchedulerLoop } from "../server/scheduler/loop.ts";

const NODES = ["n1", "n2"];
const FENCE_S = 10;
const GRACE_S = 5;
const MARGIN_MS = 5_000;

/** A process an agent runs for an attempt. */
interface Copy {
  job_id: string;
  attempt: number;
  run_id: string;
  gpus: number[];
  reported_running: boolean;
}

/** The world: the server's context, the clock, and what each node's agent does. */
class World {
  ms = Date.parse("2026-01-01T00:00:00Z");
  ctx: Context;
  scheduler: SchedulerLoop;
  connected = new Set<string>();
  lastContact = new Map<string, number>();
  copies = new Map<string, Copy[]>(NODES.map((n) => [n, []]));
  seq = new Map<string, number>(NODES.map((n) => [n, 0]));
  jobs: string[] = [];
  manualRetries = new Map<string, number>();
  #ids = 0;

  constructor() {
    this.ctx = createContext({
      db: openDatabase(":memory:"),
      now: () => new Date(this.ms),
      newId: (p) => `${p}-${++this.#ids}`,
      backupDir: "/nonexistent",
      seriesCache: false,
    });
    this.scheduler = new SchedulerLoop(this.ctx, {
      connectedNodes: () => new Set(this.connected),
      foreignMemory: () => new Map(),
      sendDispatch: (node: string, spec: DispatchSpec) => {
        if (!this.connected.has(node)) return false;
        this.copies.get(node)!.push({
          job_id: spec.job_id,
          attempt: spec.attempt,
          run_id: spec.run_id,
          gpus: spec.gpu_indices,
          reported_running: false,
        });
        return true;
      },
    });
    for (const n of NODES) this.connect(n, []);
  }

  hello(node: string, running: Copy[]): HelloFrame {
    return {
      type: "hello",
      node_id: node,
      hostname: node,
      agent_version: "model",
      gpus: [0, 1].map((i) => ({
        index: i,
        uuid: `${node}-${i}`,
        name: "GPU",
        memory_total_mb: 1,
      })),
      fake_gpus: true,
      cpu_count: 4,
      memory_mb: 1000,
      disk_free_mb: 1000,
      labels: {},
      cpu_slots: 1,
      avoid_foreign_gpus: false,
      running: running.map((c) => ({ ...c, pid: 1, state: "RUNNING" as const })),
      fence_after_s: FENCE_S,
    };
  }

  connect(node: string, running: Copy[]): void {
    registerNode(this.ctx, this.hello(node, running));
    this.connected.add(node);
    this.lastContact.set(node, this.ms);
    this.reconcile(node);
  }

  /** A heartbeat's check: copies the server did not give this node are killed at once. */
  reconcile(node: string): void {
    for (const c of [...this.copies.get(node)!]) {
      const verdict = judgeOwnedProcess(this.ctx, node, { ...c, pid: 1, state: "RUNNING" });
      if (verdict && "stale" in verdict) this.end(node, c, { state: "CANCELLED" });
    }
  }

  /** The agent reports a job_state for a copy; `end` states also stop the copy. */
  report(node: string, c: Copy, state: Partial<JobStateFrame>): void {
    const seq = this.seq.get(node)! + 1;
    this.seq.set(node, seq);
    const outcome = applyDataFrame(this.ctx, node, {
      type: "job_state",
      stream: "data",
      seq,
      job_id: c.job_id,
      attempt: c.attempt,
      run_id: c.run_id,
      state: "RUNNING",
      ts: this.ms / 1000,
      ...state,
    } as JobStateFrame);
    if (outcome.kill) this.remove(node, c);
  }

  end(node: string, c: Copy, state: Partial<JobStateFrame>): void {
    this.remove(node, c);
    if (this.connected.has(node)) this.report(node, c, state);
  }

  remove(node: string, c: Copy): void {
    const list = this.copies.get(node)!;
    const i = list.indexOf(c);
    if (i >= 0) list.splice(i, 1);
  }

  /** Whether a node's agent may still run its copies: connected, or within lease and grace. */
  mayRun(node: string): boolean {
    return this.connected.has(node) ||
      this.ms < this.lastContact.get(node)! + (FENCE_S + GRACE_S) * 1000;
  }

  job(id: string): JobState {
    return jobsDb.getJob(this.ctx.db, id)!;
  }

  statuses(): Map<string, JobState> {
    return new Map(this.jobs.map((id) => [id, this.job(id)]));
  }
}

type Command = fc.Command<object, World>;

/** Picks the n-th item of a list, cycling; undefined when the list is empty. */
const pick = <T>(list: T[], n: number): T | undefined =>
  list.length ? list[n % list.length] : undefined;

class Submit implements Command {
  constructor(
    readonly gpus: number,
    readonly maxAttempts: number,
    readonly after: number | null,
    readonly wait: boolean,
  ) {}
  check = () => true;
  run(_: object, w: World) {
    const dep = this.after === null ? undefined : pick(w.jobs, this.after);
    const job = submitJob(w.ctx, {
      name: "model",
      command: ["train"],
      working_dir: "/w",
      gpus: this.gpus,
      max_attempts: this.maxAttempts,
      grace_s: GRACE_S,
      after: dep ? [dep] : undefined,
      on_node_lost: this.wait ? "wait" : "requeue",
    });
    w.jobs.push(job.id);
  }
  toString = () =>
    `submit(${this.gpus} GPUs, max ${this.maxAttempts}, after ${this.after}, wait ${this.wait})`;
}

class Schedule implements Command {
  check = () => true;
  run(_: object, w: World) {
    w.scheduler.runOnce();
  }
  toString = () => "schedule";
}

/** An agent starts a copy it was dispatched (reports RUNNING). */
class Start implements Command {
  constructor(readonly n: number) {}
  check = () => true;
  run(_: object, w: World) {
    const node = pick([...w.connected], this.n);
    const c = node && pick(w.copies.get(node)!.filter((c) => !c.reported_running), this.n);
    if (!node || !c) return;
    c.reported_running = true;
    w.report(node, c, { state: "RUNNING", pid: 1 });
  }
  toString = () => `start(${this.n})`;
}

const ENDINGS: Partial<JobStateFrame>[] = [
  { state: "EXITED", exit_code: 0 },
  { state: "EXITED", exit_code: 3 },
  { state: "EXITED", exit_code: 1, failure_class: "OOM" },
  { state: "EXITED", exit_code: null, signal: "SIGKILL", failure_class: "SIGNAL" },
  { state: "DISPATCH_FAILED" },
];

/** A copy on a connected node ends (the agent reports how). */
class Finish implements Command {
  constructor(readonly n: number, readonly how: number) {}
  check = () => true;
  run(_: object, w: World) {
    const node = pick([...w.connected], this.n);
    const c = node && pick(w.copies.get(node)!, this.n);
    if (!node || !c) return;
    w.end(node, c, ENDINGS[this.how % ENDINGS.length]);
  }
  toString = () => `finish(${this.n}, ${JSON.stringify(ENDINGS[this.how % ENDINGS.length])})`;
}

/** A person cancels a job; its agent, when connected, stops the copy and reports it. */
class Cancel implements Command {
  constructor(readonly n: number) {}
  check = () => true;
  run(_: object, w: World) {
    const id = pick(w.jobs, this.n);
    if (!id) return;
    try {
      cancelJob(w.ctx, id, "model");
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      return;
    }
    for (const node of w.connected) {
      for (const c of [...w.copies.get(node)!]) {
        if (c.job_id === id) w.end(node, c, { state: "CANCELLED" });
      }
    }
  }
  toString = () => `cancel(${this.n})`;
}

class Retry implements Command {
  constructor(readonly n: number) {}
  check = () => true;
  run(_: object, w: World) {
    const id = pick(w.jobs, this.n);
    if (!id) return;
    try {
      retryJob(w.ctx, id, "model");
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      return;
    }
    w.manualRetries.set(id, (w.manualRetries.get(id) ?? 0) + 1);
  }
  toString = () => `retry(${this.n})`;
}

/** A node's agent falls silent; the server marks it OFFLINE after `silentS` of silence. */
class GoSilent implements Command {
  constructor(readonly n: number, readonly silentS: number) {}
  check = () => true;
  run(_: object, w: World) {
    const node = pick([...w.connected], this.n);
    if (!node) return;
    w.connected.delete(node);
    const silentMs = this.silentS * 1000;
    w.lastContact.set(node, w.ms - silentMs);
    markNodeOffline(w.ctx, node, this.silentS, (job) =>
      leaseHold(
        { fenceAfterS: FENCE_S, graceS: job.grace_s ?? GRACE_S, marginMs: MARGIN_MS },
        silentMs,
        w.ctx.now(),
      ));
  }
  toString = () => `silent(${this.n}, ${this.silentS} s)`;
}

/**
 * A silent node's agent comes back: copies still within its lease are reported in hello;
 * those past it were stopped by the agent itself, and their ends are reported after.
 */
class Return implements Command {
  constructor(readonly n: number) {}
  check = () => true;
  run(_: object, w: World) {
    const node = pick(NODES.filter((n) => !w.connected.has(n)), this.n);
    if (!node) return;
    const inLease = w.ms < w.lastContact.get(node)! + FENCE_S * 1000;
    const copies = w.copies.get(node)!;
    const fenced = inLease ? [] : [...copies];
    for (const c of fenced) w.remove(node, c);
    w.connect(node, inLease ? [...copies] : []);
    for (const c of fenced) w.report(node, c, { state: "CANCELLED", reason: "fenced" });
  }
  toString = () => `return(${this.n})`;
}

/** An agent restarted without its state: its copies are gone; heartbeats stop listing them. */
class Forget implements Command {
  constructor(readonly n: number) {}
  check = () => true;
  run(_: object, w: World) {
    const node = pick([...w.connected], this.n);
    if (!node) return;
    w.copies.set(node, []);
    for (const a of liveAttemptsOn(w.ctx, node)) failVanishedAttempt(w.ctx, node, a, 2);
  }
  toString = () => `forget(${this.n})`;
}

class Reconcile implements Command {
  constructor(readonly n: number) {}
  check = () => true;
  run(_: object, w: World) {
    const node = pick([...w.connected], this.n);
    if (node) w.reconcile(node);
  }
  toString = () => `heartbeat(${this.n})`;
}

class Tick implements Command {
  constructor(readonly s: number) {}
  check = () => true;
  run(_: object, w: World) {
    w.ms += this.s * 1000;
  }
  toString = () => `tick(${this.s} s)`;
}

const ENDED = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** Every status change seen over all runs, to show the commands reach every corner. */
const seen = new Set<string>();

/** Status changes one command may cause (several steps may happen in one transaction). */
const LEGAL: Record<string, string[]> = {
  QUEUED: ["DISPATCHED", "CANCELLED", "FAILED", "RUNNING"],
  DISPATCHED: ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "LOST", "QUEUED"],
  RUNNING: ["SUCCEEDED", "FAILED", "CANCELLED", "LOST", "QUEUED"],
  LOST: ["RUNNING", "QUEUED", "SUCCEEDED", "FAILED", "CANCELLED"],
  SUCCEEDED: [],
  FAILED: [],
  CANCELLED: [],
};

function checkInvariants(w: World, before: Map<string, JobState>, cmd: Command): void {
  const retried = cmd instanceof Retry ? pick(w.jobs, cmd.n) : undefined;
  for (const [id, job] of w.statuses()) {
    const was = before.get(id);
    if (was && was.status !== job.status) seen.add(`${was.status}→${job.status}`);
    if (was && was.status !== job.status) {
      const legal = LEGAL[was.status].includes(job.status) ||
        (id === retried && job.status === "QUEUED");
      assert(legal, `${id}: ${was.status} → ${job.status} after ${cmd}`);
    }
    if (was && ENDED.has(was.status) && id !== retried) {
      assertEquals(job.status, was.status, `${id} left ${was.status} after ${cmd}`);
    }
    const used = job.attempt - job.infra_attempts;
    const allowed = job.max_attempts + (w.manualRetries.get(id) ?? 0);
    assert(
      used <= allowed,
      `${id}: attempt ${job.attempt} (${job.infra_attempts} infra) > ${allowed}`,
    );
  }
  // Never two live copies of one job.
  const live = new Map<string, string[]>();
  for (const node of NODES) {
    if (!w.mayRun(node)) continue;
    for (const c of w.copies.get(node)!) {
      live.set(c.job_id, [...(live.get(c.job_id) ?? []), `${node}#${c.attempt}`]);
    }
  }
  for (const [id, where] of live) {
    assert(where.length <= 1, `${id} runs twice: ${where} after ${cmd}`);
  }
  // No GPU slot held twice, in the store or on a node.
  for (const node of NODES) {
    const held = [...w.statuses().values()]
      .filter((j) => (j.status === "DISPATCHED" || j.status === "RUNNING") && j.node_id === node)
      .flatMap((j) => j.gpu_indices);
    assertEquals(new Set(held).size, held.length, `store: ${node} GPUs ${held} after ${cmd}`);
    const onNode = w.mayRun(node) ? w.copies.get(node)!.flatMap((c) => c.gpus) : [];
    assertEquals(new Set(onNode).size, onNode.length, `agent: ${node} GPUs ${onNode} after ${cmd}`);
  }
}

/** Runs each command, then checks every invariant against the state before it. */
class Checked implements Command {
  constructor(readonly inner: Command) {}
  check = () => true;
  run(m: object, w: World) {
    const before = w.statuses();
    this.inner.run(m, w);
    checkInvariants(w, before, this.inner);
  }
  toString = () => String(this.inner);
}

const submit = fc.tuple(
  fc.integer({ min: 0, max: 2 }),
  fc.integer({ min: 1, max: 3 }),
  fc.option(fc.nat(), { freq: 4 }),
  fc.boolean(),
)
  .map(([g, m, a, wait]) => new Submit(g, m, a, wait));
const start = fc.nat().map((n) => new Start(n));
const finish = fc.tuple(fc.nat(), fc.nat()).map(([n, how]) => new Finish(n, how));

// The common events come up more often than the rare ones (the list repeats them).
const commands = [
  submit,
  submit,
  fc.constant(new Schedule()),
  fc.constant(new Schedule()),
  start,
  start,
  finish,
  finish,
  fc.nat().map((n) => new Cancel(n)),
  fc.nat().map((n) => new Retry(n)),
  fc.tuple(fc.nat(), fc.integer({ min: 0, max: 14 })).map(([n, s]) => new GoSilent(n, s)),
  fc.nat().map((n) => new Return(n)),
  fc.nat().map((n) => new Return(n)),
  fc.nat().map((n) => new Forget(n)),
  fc.nat().map((n) => new Reconcile(n)),
  fc.integer({ min: 1, max: 25 }).map((s) => new Tick(s)),
].map((arb) => arb.map((c) => new Checked(c) as Command));

Deno.test("model: the job state machine keeps its invariants under any sequence of events", () => {
  fc.assert(
    fc.property(fc.commands(commands, { maxCommands: 60, size: "large" }), (cmds) => {
      const w = new World();
      try {
        fc.modelRun(() => ({ model: {}, real: w }), cmds);
      } finally {
        w.ctx.db.close();
      }
    }),
    { numRuns: 150, seed: 20261201 },
  );
  for (
    const t of [
      "QUEUED→DISPATCHED",
      "DISPATCHED→RUNNING",
      "RUNNING→SUCCEEDED",
      "RUNNING→FAILED",
      "RUNNING→QUEUED", // requeued
      "RUNNING→LOST",
      "LOST→RUNNING", // reattached
      "QUEUED→RUNNING", // reattached after a requeue
      "QUEUED→FAILED", // a dependency failed
      "QUEUED→CANCELLED",
      "FAILED→QUEUED", // retried by a person
    ]
  ) assert(seen.has(t), `no run went ${t}; seen: ${[...seen].join(", ")}`);
});
