/**
 * Group commit through the real gateway and real WebSockets: many agents send at once, their
 * frames share transactions, and the store is made to fail at a chosen commit. Asserted: no
 * frame is acked before the commit that holds it (every acked frame is in the store, nothing
 * of the failed transaction is acked), the agents' replay stores each point and line once, and
 * each run's points are stored in the order they were sent.
 */
import { assert, assertEquals } from "./assert.ts";
import { createGatewayHarness, FakeAgent, type GatewayHarness } from "./_fake_agent.ts";
import { Ledger, linesLedger, pointRecord, pointWrites, storedLedgers } from "./_ledger.ts";

const AGENTS = 8;
const FRAMES = 40; // metrics frames an agent sends, 5 points each
const KEYS = ["a", "b", "c", "d", "e"];

interface Sim {
  node: string;
  agent: FakeAgent;
  ref: { job_id: string; attempt: number; run_id: string };
  /** The seq of each data frame sent (in order) and what it carried. */
  frames: { seq: number; frame: Record<string, unknown> }[];
}

const pointsFrame = (ref: Sim["ref"], step: number) => ({
  type: "metrics",
  ...ref,
  points: KEYS.map((key) => ({ key, step, value: step + KEYS.indexOf(key) / 10, wall_time: step })),
});
const linesFrame = (ref: Sim["ref"], first: number) => ({
  type: "logs",
  ...ref,
  lines: [0, 1].map((i) => ({ seq: first + i, stream: "stdout", text: `line ${first + i}` })),
});

async function startAgents(h: GatewayHarness): Promise<Sim[]> {
  const sims: Sim[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const node = `node-${i}`;
    const agent = await FakeAgent.connect(h.base, h.tokens.agent);
    agent.hello({ node_id: node, hostname: node });
    await agent.until((a) => a.of("ack").length === 2);
    const id = (await h.call("POST", "/api/jobs", {
      body: { name: node, command: ["true"], working_dir: "/w", gpus: 1, node },
    })).json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    const ref = { job_id: id, attempt: 1, run_id: agent.of("dispatch")[0].job.run_id };
    const seq = agent.jobState(ref, "RUNNING", { pid: 1 });
    await agent.until((a) => a.of("ack").some((x) => x.stream === "data" && x.seq === seq));
    sims.push({ node, agent, ref, frames: [] });
  }
  return sims;
}

const acked = (a: FakeAgent) =>
  Math.max(0, ...a.of("ack").filter((x) => x.stream === "data").map((x) => x.seq));

Deno.test("group commit: many agents at once, a commit that fails: no ack before durability, each point and line stored once, in order", async () => {
  const h = await createGatewayHarness();
  try {
    const sims = await startAgents(h);
    const dbPath = `${h.dir}/gpuctl.db`;
    // Once armed, the store fails at the first commit that holds metric points, as if it were
    // closed under the transaction.
    let armed = false;
    let storedPoints = 0;
    let failed = 0;
    h.ctx.db.beforeCommit(() => {
      const n = (h.ctx.db.sqlite.prepare("SELECT COUNT(*) AS n FROM metric_points").get() as {
        n: number;
      }).n;
      if (n === storedPoints) return;
      storedPoints = n;
      if (armed) {
        armed = false;
        failed++;
        throw new Error("the store went away during this commit");
      }
    });
    // Every agent sends its frames at once, in two waves; the second one meets the failure.
    const send = (from: number, to: number) => {
      for (let step = from; step <= to; step++) {
        for (const s of sims) {
          const frame = pointsFrame(s.ref, step);
          s.frames.push({ seq: s.agent.data(frame), frame });
          if (step % 2 === 0) {
            const lines = linesFrame(s.ref, step - 1);
            s.frames.push({ seq: s.agent.data(lines), frame: lines });
          }
        }
      }
    };
    const last = (s: Sim) => s.frames[s.frames.length - 1].seq;
    send(1, FRAMES / 2);
    for (const s of sims) await s.agent.until((a) => acked(a) >= last(s), 20_000);
    armed = true;
    send(FRAMES / 2 + 1, FRAMES);
    // Each agent hears every ack, or its connection is closed (its frame was in the failed
    // transaction); bounded.
    const deadline = Date.now() + 20_000;
    const closed = new Set<string>();
    for (const s of sims) s.agent.closed.then(() => closed.add(s.node));
    while (sims.some((s) => !closed.has(s.node) && acked(s.agent) < last(s))) {
      assert(Date.now() < deadline, "acks or closes did not come");
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(failed, 1, "the chosen commit failed");
    assert(closed.size > 0, "the agents of the failed transaction were disconnected");
    // An ack means durable: every frame acked is in the store.
    for (const s of sims) {
      const upTo = acked(s.agent);
      const want = new Ledger();
      for (const f of s.frames) {
        if (f.seq > upTo || f.frame.type !== "metrics") continue;
        for (const p of (f.frame as ReturnType<typeof pointsFrame>).points) {
          want.add(pointRecord(s.ref.run_id, p.key, p.step, p.value));
        }
      }
      const stored = storedLedgers(dbPath, [s.ref.run_id]).points;
      // Stored may hold more (committed, ack not yet read), never less.
      assert(stored.count >= want.count, `${s.node}: acked ${want} but stored ${stored}`);
    }
    // The disconnected agents come back and replay what was not acked.
    for (const s of sims.filter((s) => closed.has(s.node))) {
      const again = await FakeAgent.connect(h.base, h.tokens.agent);
      again.hello({
        node_id: s.node,
        hostname: s.node,
        running: [{ ...s.ref, pid: 1, state: "RUNNING" }],
      });
      await again.until((a) => a.of("ack").length === 2);
      const cursor = again.of("ack").find((x) => x.stream === "data")!.seq;
      assert(cursor >= acked(s.agent), "the cursor is at least what was acked");
      for (const f of s.frames) if (f.seq > cursor) again.data(f.frame, "data", f.seq);
      await again.until((a) => acked(a) >= last(s), 20_000);
      s.agent = again;
    }
    for (const s of sims) {
      const points = new Ledger();
      const texts: string[] = [];
      for (const f of s.frames) {
        if (f.frame.type === "metrics") {
          for (const p of (f.frame as ReturnType<typeof pointsFrame>).points) {
            points.add(pointRecord(s.ref.run_id, p.key, p.step, p.value));
          }
        } else {
          for (const l of (f.frame as ReturnType<typeof linesFrame>).lines) texts.push(l.text);
        }
      }
      const stored = storedLedgers(dbPath, [s.ref.run_id]);
      assertEquals(String(stored.points), String(points), `${s.node} points`);
      assertEquals(
        String(stored.lines),
        String(linesLedger(s.ref.run_id, texts)),
        `${s.node} lines`,
      );
      // In the order sent: by write sequence, each key's steps rise.
      const bySeq = h.ctx.db.sqlite.prepare(
        "SELECT key, step FROM metric_points WHERE run_id = ? ORDER BY seq",
      ).all(s.ref.run_id) as { key: string; step: number }[];
      const lastStep = new Map<string, number>();
      for (const p of bySeq) {
        assert(
          (lastStep.get(p.key) ?? 0) < p.step,
          `${s.node}: ${p.key} step ${p.step} out of order`,
        );
        lastStep.set(p.key, p.step);
      }
    }
    const writes = pointWrites(dbPath);
    assertEquals(writes.points, AGENTS * FRAMES * KEYS.length);
    assertEquals(writes.writes, writes.points, "no point was written twice");
    for (const s of sims) await s.agent.close();
  } finally {
    await h.stop();
  }
});

Deno.test("group commit: frames of many agents arriving together share transactions", async () => {
  const h = await createGatewayHarness();
  try {
    const sims = await startAgents(h);
    let commits = 0;
    h.ctx.db.beforeCommit(() => commits++);
    const before = commits;
    for (let step = 1; step <= FRAMES; step++) {
      for (const s of sims) {
        s.frames.push({ seq: s.agent.data(pointsFrame(s.ref, step)), frame: {} });
      }
    }
    for (const s of sims) {
      await s.agent.until((a) => acked(a) >= s.frames[s.frames.length - 1].seq, 20_000);
    }
    const frames = AGENTS * FRAMES;
    // Sent back to back, they cannot each have had a transaction of their own.
    assert(commits - before < frames, `${commits - before} transactions for ${frames} frames`);
    const lag = h.gateway.ingestLag();
    assertEquals(lag.pending_frames, 0);
    assert(lag.frames_per_s > 0);
    for (const s of sims) await s.agent.close();
  } finally {
    await h.stop();
  }
});
