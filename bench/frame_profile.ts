// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno run -A bench/frame_profile.ts`: where one agent data frame's time goes on the
 * server, in process (no sockets): the frame's text parsed (JSON, then the wire schema), the
 * gateway's apply (every SQL statement timed by its text, BEGIN and COMMIT apart, the rest of
 * the JavaScript), the ack encoded, and the fan-out to live readers (the series cache, the
 * rules engine and `--sse` metrics-stream listeners, as the real server has them).
 *
 * It drives the gateway's own ingest path (`IngestQueue`, `server/gateway/ingest_queue.ts`)
 * over a store in a temporary folder (WAL, as the server opens it), with `--runs` running
 * jobs of one node each, and reports per frame and per point for metrics frames of
 * `--points` points and logs frames of `--lines` lines, first one frame a transaction, then
 * `--group` frames a transaction (what the gateway does when frames arrive together).
 *
 * Flags: --frames N (a measurement, default 3000), --points N (default 40), --lines N
 * (default 4), --runs N (default 50), --sse N (default 5), --group N (default 50),
 * --no-checkpointer (WAL checkpoints inside the COMMIT, as before the server had a checkpointer).
 */
import { parseArgs } from "node:util";
import type { DataFrame, DispatchSpec } from "../protocol/agent.ts";
import { parseAgentFrame } from "../server/gateway/parse_frame.ts";
import { createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { startCheckpointer } from "../server/db/checkpointer.ts";
import { topics } from "../server/bus/bus.ts";
import { submitJob } from "../server/jobs/service.ts";
import { registerNode } from "../server/nodes/service.ts";
import { SchedulerLoop } from "../server/scheduler/loop.ts";
import { RulesEngine } from "../server/rules/engine.ts";
import { DEFAULT_RULES_CONFIG } from "../server/rules/mod.ts";
import { applyDataFrame } from "../server/gateway/apply_frame.ts";
import { IngestQueue } from "../server/gateway/ingest_queue.ts";
import type { FrameOutcome } from "../server/gateway/apply_frame.ts";
import process from "node:process";
import { encodeMetricValue } from "../protocol/metric_value.ts";

const { values } = parseArgs({
  options: {
    frames: { type: "string", default: "3000" },
    points: { type: "string", default: "40" },
    lines: { type: "string", default: "4" },
    runs: { type: "string", default: "50" },
    sse: { type: "string", default: "5" },
    group: { type: "string", default: "50" },
    "no-checkpointer": { type: "boolean", default: false },
  },
});
const FRAMES = Number(values.frames);
const POINTS = Number(values.points);
const LINES = Number(values.lines);
const RUNS = Number(values.runs);
const SSE = Number(values.sse);
const GROUP = Number(values.group);
const KEYS = ["loss", "acc", "lr", "grad_norm"];

const dir = await Deno.makeTempDir({ prefix: "gpuctl-frame-profile-" });
const db = openDatabase(`${dir}/gpuctl.db`);
for (const p of (Deno.env.get("PROFILE_PRAGMAS") ?? "").split(";").filter(Boolean)) {
  db.sqlite.exec(`PRAGMA ${p}`);
}
const ctx = createContext({ db, backupDir: `${dir}/backups` });
// As the server does: WAL checkpoints on a worker (`--no-checkpointer`: inside the COMMIT).
const checkpointer = values["no-checkpointer"] ? null : startCheckpointer(db);
const rules = new RulesEngine(ctx, { config: DEFAULT_RULES_CONFIG });
rules.start();

// Per SQL text: calls and time; BEGIN/COMMIT through exec.
const sqlTime = new Map<string, { calls: number; ms: number }>();
const note = (sql: string, ms: number) => {
  const key = sql.replace(/\s+/g, " ").trim().slice(0, 90);
  const e = sqlTime.get(key) ?? { calls: 0, ms: 0 };
  e.calls++;
  e.ms += ms;
  sqlTime.set(key, e);
};
const realPrepare = db.prepare.bind(db);
const wrapped = new Map<string, ReturnType<typeof db.prepare>>();
(db as { prepare: typeof db.prepare }).prepare = (sql: string) => {
  let w = wrapped.get(sql);
  if (w) return w;
  const stmt = realPrepare(sql);
  const timed = (name: "run" | "get" | "all") => (...args: unknown[]) => {
    const t = performance.now();
    // deno-lint-ignore no-explicit-any
    const r = (stmt[name] as any)(...args);
    note(sql, performance.now() - t);
    return r;
  };
  w = Object.assign(Object.create(stmt), {
    run: timed("run"),
    get: timed("get"),
    all: timed("all"),
  }) as ReturnType<typeof db.prepare>;
  wrapped.set(sql, w);
  return w;
};
const realExec = db.sqlite.exec.bind(db.sqlite);
db.sqlite.exec = (sql: string) => {
  const t = performance.now();
  realExec(sql);
  note(sql, performance.now() - t);
};

// A node per run, each running its one job.
const refs: { node: string; job_id: string; attempt: number; run_id: string }[] = [];
const dispatched: { node: string; spec: DispatchSpec }[] = [];
const scheduler = new SchedulerLoop(ctx, {
  connectedNodes: () => new Set(refs.length ? [] : Array.from({ length: RUNS }, (_, i) => `n${i}`)),
  foreignMemory: () => new Map(),
  sendDispatch: (node, spec) => {
    dispatched.push({ node, spec });
    return true;
  },
});
for (let i = 0; i < RUNS; i++) {
  registerNode(ctx, {
    type: "hello",
    node_id: `n${i}`,
    hostname: `n${i}`,
    agent_version: "profile",
    gpus: [],
    fake_gpus: true,
    cpu_count: 1,
    memory_mb: 1000,
    disk_free_mb: 100_000,
    labels: {},
    cpu_slots: 1,
    avoid_foreign_gpus: false,
    running: [],
  });
  submitJob(ctx, { name: `p${i}`, command: ["true"], working_dir: "/tmp", gpus: 0 });
}
scheduler.runOnce();
const seqs = new Map<string, number>();
const nextSeq = (node: string) => {
  const s = (seqs.get(node) ?? 0) + 1;
  seqs.set(node, s);
  return s;
};
for (const { node, spec } of dispatched) {
  const ref = { job_id: spec.job_id, attempt: spec.attempt, run_id: spec.run_id };
  refs.push({ node, ...ref });
  applyDataFrame(ctx, node, {
    type: "job_state",
    stream: "data",
    seq: nextSeq(node),
    ...ref,
    state: "RUNNING",
    pid: 1,
    ts: Date.now() / 1000,
  } as DataFrame);
}
if (refs.length !== RUNS) throw new Error(`${refs.length} of ${RUNS} jobs dispatched`);
// Live readers of the first runs' metrics streams, encoding each message as SSE would.
let sseBytes = 0;
for (let i = 0; i < SSE; i++) {
  ctx.bus.subscribe<{ points: unknown[] }>(topics.metrics(refs[i % RUNS].run_id), (m) => {
    sseBytes += JSON.stringify(m).length;
  });
}

let counter = 0;
function frameText(i: number, kind: "metrics" | "logs"): { node: string; text: string } {
  const r = refs[i % RUNS];
  const base = { stream: "data", seq: nextSeq(r.node), job_id: r.job_id, attempt: r.attempt };
  const wall = Date.now() / 1000;
  if (kind === "metrics") {
    const points = [];
    for (let p = 0; p < POINTS; p++, counter++) {
      points.push({
        key: KEYS[counter % KEYS.length],
        step: Math.floor(counter / KEYS.length),
        value: encodeMetricValue((counter % 1000) / 8),
        wall_time: wall,
      });
    }
    return {
      node: r.node,
      text: JSON.stringify({ type: "metrics", ...base, run_id: r.run_id, points }),
    };
  }
  const lines = [];
  for (let l = 0; l < LINES; l++) {
    lines.push({
      seq: counter++,
      ts: new Date().toISOString(),
      stream: "stdout",
      text: `line ${counter} ${"·".repeat(40)}`,
    });
  }
  return { node: r.node, text: JSON.stringify({ type: "logs", ...base, run_id: r.run_id, lines }) };
}

/** Wall and CPU (user + system) milliseconds of `fn`. */
function timed(fn: () => void): { wall: number; cpu: number } {
  const c = process.cpuUsage();
  const t = performance.now();
  fn();
  const wall = performance.now() - t;
  const d = process.cpuUsage(c);
  return { wall, cpu: (d.user + d.system) / 1000 };
}

interface Stages {
  json: { wall: number; cpu: number };
  schema: { wall: number; cpu: number };
  apply: { wall: number; cpu: number };
  ack: { wall: number; cpu: number };
}

/**
 * Runs `n` frames through each stage in turn (all parsed, all validated, all applied in
 * transactions of `group` frames, all acks encoded), so each stage's CPU time is read whole.
 */
function measure(kind: "metrics" | "logs", n: number, group: number): Stages {
  const texts = Array.from({ length: n }, (_, i) => frameText(i, kind));
  let raws: unknown[] = [];
  const json = timed(() => raws = texts.map((t) => JSON.parse(t.text)));
  let frames: DataFrame[] = [];
  const schema = timed(() =>
    frames = raws.map((r) => {
      const p = parseAgentFrame(r);
      if (!p.success) throw new Error(p.error.message);
      return p.data as DataFrame;
    })
  );
  const outcomes: FrameOutcome[] = [];
  const queue = new IngestQueue(ctx, {
    maxDelayMs: 0,
    maxFrames: group,
    schedule: () => {}, // a full group is flushed by add(); the rest below
  });
  const apply = timed(() => {
    frames.forEach((frame, i) =>
      queue.add(texts[i].node, frame, (result) => {
        if (!("outcome" in result)) throw new Error(String(result.error));
        outcomes.push(result.outcome);
      })
    );
    queue.flush();
  });
  const acks: string[] = [];
  const ack = timed(() => {
    for (const o of outcomes) if (o.ack) acks.push(JSON.stringify({ type: "ack", ...o.ack }));
  });
  if (acks.length !== n) throw new Error(`${acks.length} of ${n} frames acked`);
  return { json, schema, apply, ack };
}

function report(kind: "metrics" | "logs", group: number) {
  measure(kind, Math.min(500, FRAMES), group); // warm-up
  sqlTime.clear();
  const st = measure(kind, FRAMES, group);
  const us = (ms: number) => (ms / FRAMES * 1000).toFixed(1).padStart(7);
  const unit = kind === "metrics" ? POINTS : LINES;
  let sqlMs = 0;
  for (const e of sqlTime.values()) sqlMs += e.ms;
  const cpu = st.json.cpu + st.schema.cpu + st.apply.cpu + st.ack.cpu;
  const wall = st.json.wall + st.schema.wall + st.apply.wall + st.ack.wall;
  console.log(
    `\n${kind} frames of ${unit} ${kind === "metrics" ? "points" : "lines"}, ${group} a ` +
      `transaction, ${FRAMES} frames over ${RUNS} runs: CPU ${us(cpu).trim()} µs a frame ` +
      `(${(cpu / FRAMES / unit * 1000).toFixed(2)} µs a ${
        kind === "metrics" ? "point" : "line"
      }, ` +
      `${(FRAMES / (cpu / 1000)).toFixed(0)} frames/s a core), wall ${us(wall).trim()} µs`,
  );
  console.log(`  stage                       CPU µs  wall µs (a frame)`);
  const row = (name: string, s: { wall: number; cpu: number }) =>
    console.log(`  ${name.padEnd(26)} ${us(s.cpu)}  ${us(s.wall)}`);
  row("JSON.parse", st.json);
  row("wire schema", st.schema);
  row("apply, commit, fan-out", st.apply);
  row("ack encoded", st.ack);
  console.log(`  inside apply (wall µs a frame, calls a frame, statement):`);
  const rows = [...sqlTime.entries()].sort((a, b) => b[1].ms - a[1].ms);
  for (const [sql, e] of rows.slice(0, 12)) {
    console.log(`    ${us(e.ms)}  ${(e.calls / FRAMES).toFixed(2).padStart(6)}×  ${sql}`);
  }
  console.log(
    `    ${us(st.apply.wall - sqlMs)}          JavaScript: the applier, summaries, live ` +
      `fan-out after the commit (series cache, rules, ${SSE} SSE listeners)`,
  );
}

console.log(
  `frame profile: ${navigator.hardwareConcurrency} cores, load average ${
    Deno.loadavg().map((x) => x.toFixed(2)).join(" ")
  }; ${new Date().toISOString()}`,
);
for (const group of [1, GROUP]) {
  report("metrics", group);
  report("logs", group);
}
console.log(`\n(${sseBytes} bytes of SSE JSON encoded)`);
rules.stop();
await checkpointer?.stop();
db.close();
await Deno.remove(dir, { recursive: true });
