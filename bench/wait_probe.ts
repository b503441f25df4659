// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * What a read token's waits cost the server: MCP `wait_for_run` calls aimed at the event loop,
 * beside a heartbeating agent, with the worst event-loop stall and the worst gap between the
 * agent's lease renewals measured under each probe. `deno task bench:waits`; numbers go in
 * README "Trust model".
 *
 * - many: 1,000 waits on a running run from one read token;
 * - sweep: 100 sweep waits from event 0 over a log of `--events` events (default 58,000);
 * - steps: 5,000 step waits on a run that logs a metric batch every 20 ms;
 * each in batches of 100 calls (what the server took before batches were capped) and of 32.
 */
import { createGatewayHarness, FakeAgent } from "../tests/_fake_agent.ts";

/** Calls per request: the most a batch may hold (the old server took any number). */
const BATCH = 32;
const eventsFlag = Deno.args.find((a) => a.startsWith("--events="));
const EVENTS = eventsFlag ? Number(eventsFlag.slice("--events=".length)) : 58_000;

/** The longest time between ticks of a 10 ms timer while `fn` and what it started ran. */
function loopGapMeter() {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  return () => {
    clearInterval(timer);
    return Math.max(worst, performance.now() - last);
  };
}

/** A batch of `tools/call` messages in one POST, as a client may send them. */
function batch(base: string, token: string, calls: Record<string, unknown>[], signal: AbortSignal) {
  return fetch(`${base}/mcp`, {
    method: "POST",
    signal,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify(calls.map((args, i) => ({
      jsonrpc: "2.0",
      id: i + 1,
      method: "tools/call",
      params: { name: "wait_for_run", arguments: args },
    }))),
  });
}

/** Counts the answers of a batch by outcome: answered, refused (cap), other errors. */
async function outcomes(res: Response) {
  const text = await res.text();
  const counts = { ok: 0, capped: 0, error: 0, first_error: "", refused_requests: 0 };
  if (res.status === 413 || res.status === 429) {
    counts.refused_requests++;
    counts.first_error = text.slice(0, 200);
    return counts;
  }
  for (const m of text.matchAll(/^data: (.*)$/gm)) {
    const msg = JSON.parse(m[1]);
    const items = Array.isArray(msg) ? msg : [msg];
    for (const it of items) {
      if (!("result" in it) && !("error" in it)) continue;
      const errText = it.result?.isError ? it.result.content?.[0]?.text ?? "" : "";
      if (it.error || (errText && !/^TooManyWaits/.test(errText))) {
        counts.error++;
        counts.first_error ||= (errText || JSON.stringify(it.error)).slice(0, 200);
      } else if (errText) counts.capped++;
      else counts.ok++;
    }
  }
  return counts;
}

type Counts = Awaited<ReturnType<typeof outcomes>>;
const sum = (a: Counts, b: Counts): Counts => ({
  ok: a.ok + b.ok,
  capped: a.capped + b.capped,
  error: a.error + b.error,
  first_error: a.first_error || b.first_error,
  refused_requests: a.refused_requests + b.refused_requests,
});

/** `n` calls of `args` as requests of at most `per` calls each, all at once. */
function calls(n: number, per: number, args: () => Record<string, unknown>, signal: AbortSignal) {
  const requests = [];
  for (let left = n; left > 0; left -= per) {
    const k = Math.min(per, left);
    requests.push(
      batch(h.base, h.tokens.read, Array.from({ length: k }, args), signal).then(outcomes),
    );
  }
  return Promise.all(requests).then((all) => all.reduce(sum));
}

const h = await createGatewayHarness({ nodeTimeoutMs: 90_000, livenessIntervalMs: 100 });
const agent = await FakeAgent.connect(h.base, h.tokens.agent);
agent.hello({ fence_after_s: 60 });
await agent.until((a) => a.of("ack").length === 2);
// Lease renewals: the gap between two answered heartbeats is what the agent's fence counts.
let lastLease = performance.now();
let worstLeaseGap = 0;
const seen = { n: agent.of("lease").length };
const beat = setInterval(() => {
  agent.heartbeat();
  const n = agent.of("lease").length;
  if (n > seen.n) {
    const now = performance.now();
    worstLeaseGap = Math.max(worstLeaseGap, now - lastLease);
    lastLease = now;
    seen.n = n;
  }
}, 100);

const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "probe", name: "r" } }))
  .json;
// A sweep that stays RUNNING (its trials wait in the queue: no node has 8 GPUs).
const sweep = (await h.call("POST", "/api/sweeps", {
  body: {
    name: "probe",
    base: { name: "t", command: ["true"], working_dir: "/w", gpus: 8 },
    parameters: { lr: { values: [1, 2] } },
    metric: "loss",
  },
})).json;
if (!sweep.id) throw new Error(`no sweep: ${JSON.stringify(sweep)}`);
// The event log: `EVENTS` events straight into the store.
h.ctx.db.sqlite.prepare(
  `INSERT INTO events (ts, type, severity, message, data)
   WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < ?)
   SELECT '2026-01-01T00:00:00Z', 'CHECKPOINT_CREATED', 'info', 'probe event ' || x, '{"step":1}'
   FROM s`,
).run(EVENTS - 1);

async function probe(name: string, fn: (signal: AbortSignal) => Promise<unknown>) {
  worstLeaseGap = 0;
  lastLease = performance.now();
  const abort = new AbortController();
  const stop = loopGapMeter();
  const started = performance.now();
  const result = await fn(abort.signal);
  abort.abort();
  const stall = stop();
  console.log(JSON.stringify({
    probe: name,
    worst_loop_stall_ms: Math.round(stall),
    worst_lease_gap_ms: Math.round(worstLeaseGap),
    took_ms: Math.round(performance.now() - started),
    result,
  }));
  await new Promise((r) => setTimeout(r, 300));
}

await probe("idle: nothing but the heartbeats, 2 s (the machine's own noise)", async () => {
  await new Promise((r) => setTimeout(r, 2000));
  return {};
});

for (const per of [100, BATCH]) {
  await probe(
    `many: 1,000 waits on a run in requests of ${per}`,
    (signal) => calls(1000, per, () => ({ run_id: run.id, timeout_s: 2 }), signal),
  );

  await probe(
    `sweep: 100 sweep waits from event 0 over ${EVENTS} events in requests of ${per}`,
    (signal) =>
      calls(100, per, () => ({ sweep_id: sweep.id, after_event_id: 0, timeout_s: 1 }), signal),
  );

  await probe(
    `steps: 5,000 step waits in requests of ${per}, a metric batch every 20 ms`,
    async (signal) => {
      let step = 0;
      const writer = setInterval(() => {
        const points = Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, step, value: step }));
        step++;
        h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } }).catch(() => {});
      }, 20);
      try {
        const counts = await calls(
          5000,
          per,
          () => ({ run_id: run.id, until: "step>=100000000", timeout_s: 3 }),
          signal,
        );
        return { ...counts, metric_batches: step };
      } finally {
        clearInterval(writer);
      }
    },
  );
}

clearInterval(beat);
const node = (await h.call("GET", "/api/nodes/node-a")).json;
console.log(JSON.stringify({ node_status: node.status }));
await agent.close();
await h.stop();
