/**
 * Faults with ledgers at the agent's spool:
 *
 * - The agent killed with SIGKILL while it appends: reopened, the spool holds every frame
 *   whose append had finished, drops at most the one being written (a torn last line), and
 *   numbers on without a gap.
 * - The whole spool replayed three times against the real frame applier, each time with the
 *   streams interleaved anew and new frames behind the old, then three times fully shuffled:
 *   every record is stored exactly once. (The server keeps one cursor per node and stream,
 *   so within a stream frames must come in order, as one WebSocket brings them; a shuffled
 *   replay of frames the server already has changes nothing.)
 */
import { assert, assertEquals } from "./assert.ts";
import { agentWithJob, createGatewayHarness } from "./_fake_agent.ts";
import { Spool } from "../agent/spool.ts";
import type { NewDataFrame, WireDataFrame } from "../agent/frames.ts";
import { memoryLogger } from "../agent/log.ts";
import { applyDataFrame } from "../server/gateway/apply_frame.ts";
import { agentFrame, type DataFrame } from "../protocol/agent.ts";
import {
  checkpointRecord,
  eventRecord,
  Ledger,
  linesLedger,
  pointRecord,
  pointWrites,
  storedLedgers,
} from "./_ledger.ts";

const LONG = Deno.env.get("GPUCTL_FAULTS") === "long";
const SPOOL_URL = new URL("../agent/spool.ts", import.meta.url).href;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

/** A child that appends 256 KiB log frames to a spool and prints each seq once written. */
const APPENDER = `
import { Spool } from ${JSON.stringify(SPOOL_URL)};
const spool = await Spool.open(Deno.args[0]);
const text = "x".repeat(256 * 1024);
for (;;) {
  const i = spool.newest("data") + 1; // the seq this append gets: appends here are serial
  const f = await spool.append({ type: "logs", stream: "data", job_id: "j", attempt: 1,
    run_id: "r", lines: [{ seq: i, text: i + ":" + text }] });
  await Deno.stdout.write(new TextEncoder().encode(f.seq + "\\n"));
}
`;

Deno.test("agent SIGKILLed while appending to its spool: every finished frame is kept, a torn last line dropped, numbering goes on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-faults-spool-" });
  const script = `${dir}/appender.ts`;
  await Deno.writeTextFile(script, APPENDER);
  let torn = 0;
  const rounds = LONG ? 20 : 4;
  try {
    for (let round = 1; round <= rounds; round++) {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "--no-check", "-A", "--config", CONFIG, script, `${dir}/spool`],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      let out = "";
      const reader = child.stdout.getReader();
      const decoder = new TextDecoder();
      // Kill it at a random point after a few appends of this round.
      const want = 3 + Math.floor(Math.random() * 10);
      let seen = 0;
      while (seen < want) {
        const r = await reader.read();
        if (r.done) break;
        out += decoder.decode(r.value, { stream: true });
        seen = out.split("\n").length - 1;
      }
      try {
        child.kill("SIGKILL");
      } catch {
        // ended by itself: the status says so below
      }
      // What it printed before it died: appends that had finished.
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        out += decoder.decode(r.value, { stream: true });
      }
      const status = await child.status;
      assertEquals(status.signal, "SIGKILL", `round ${round}: the appender ended by itself`);
      const finished = out.trim().split("\n").map(Number);
      // A SIGKILL rarely lands inside one write(2); every other round also leaves half a
      // frame after the last line, as a kill inside the write would.
      const cutShort = round % 2 === 0;
      if (cutShort) {
        const names = [...Deno.readDirSync(`${dir}/spool/data`)].map((e) => e.name).sort();
        const half = JSON.stringify({ type: "logs", stream: "data", seq: 10 ** 6, lines: [] });
        await Deno.writeTextFile(`${dir}/spool/data/${names.at(-1)}`, half.slice(0, 30), {
          append: true,
        });
      }
      const log = memoryLogger();
      const spool = await Spool.open(`${dir}/spool`, { log });
      const dropped = log.lines.some((l) => l.includes("torn last line"));
      if (dropped) torn++;
      if (cutShort) assert(dropped, `round ${round}: the torn line was not dropped`);
      const { frames } = await spool.readAfter("data", 0);
      const seqs = frames.map((f) => f.seq);
      // Every seq from 1, without a gap; every finished append is there, whole.
      assertEquals(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
      assert(seqs.length >= finished.at(-1)!, `round ${round}: lost a finished frame`);
      // At most the one frame being appended when the kill came is there unreported.
      assert(seqs.length <= finished.at(-1)! + 1, `round ${round}: ${seqs.length} frames`);
      for (const f of frames) {
        assert(f.type === "logs" && f.lines[0].text.startsWith(`${f.seq}:`));
        assertEquals(f.lines[0].text.length, `${f.seq}:`.length + 256 * 1024);
      }
      assertEquals(
        (await spool.append({
          type: "event",
          stream: "sys",
          event: { type: "TEST", severity: "info", message: "after" },
        }))?.seq,
        round,
      );
      await spool.close();
    }
    // deno-lint-ignore no-console -- what this scenario saw
    console.log(
      `spool kills: ${rounds}; a torn last line dropped after ${torn} (${
        rounds / 2
      } cut short by the test)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Fisher–Yates with a seeded generator, so a failure can be replayed. */
function shuffle<T>(xs: T[], random: () => number): T[] {
  const out = xs.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** The two streams merged in a random interleaving, each stream's order kept. */
function interleave(
  data: WireDataFrame[],
  sys: WireDataFrame[],
  random: () => number,
): WireDataFrame[] {
  const out: WireDataFrame[] = [];
  let i = 0;
  let j = 0;
  while (i < data.length || j < sys.length) {
    if (j >= sys.length || (i < data.length && random() < 0.5)) out.push(data[i++]);
    else out.push(sys[j++]);
  }
  return out;
}

Deno.test("the whole spool replayed three times with new frames, then three times shuffled: every record stored exactly once", async () => {
  const seed = Number(Deno.env.get("GPUCTL_FAULTS_SEED") ?? Date.now() % 100_000);
  const random = seeded(seed);
  const h = await createGatewayHarness();
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-faults-replay-" });
  const spool = await Spool.open(dir);
  try {
    // A job dispatched to node-a, so its frames belong to a live attempt.
    const { agent, ref } = await agentWithJob(h, "replay");
    const run = ref.run_id;
    await agent.close(); // from here on the test is the connection
    const apply = (f: WireDataFrame) => {
      const out = applyDataFrame(h.ctx, "node-a", agentFrame.parse(f) as DataFrame);
      assert(out.refused === undefined, out.refused);
      return out.applied;
    };
    apply(
      (await spool.append({ type: "job_state", stream: "data", ...ref, state: "RUNNING", ts: 1 }))!,
    );

    const sent = { points: new Ledger(), checkpoints: new Ledger(), events: new Ledger() };
    const lines: string[] = [];
    let step = 0;
    /** Appends a round of frames of every kind to the spool and to the ledger. */
    const produce = async (n: number) => {
      const frames: NewDataFrame[] = [];
      for (let k = 0; k < n; k++) {
        step++;
        const points = [{ key: "loss", step, value: step / 8 }, { key: "acc", step, value: 1 }];
        for (const p of points) sent.points.add(pointRecord(run, p.key, p.step, p.value));
        frames.push({ type: "metrics", stream: "data", ...ref, points });
        const text = `line ${step}`;
        lines.push(text);
        frames.push({
          type: "logs",
          stream: "data",
          ...ref,
          lines: [{ seq: lines.length, ts: "2026-01-01T00:00:00Z", stream: "stdout", text }],
        });
        const sdkPoint = { key: "sdk_value", step, value: step };
        sent.points.add(pointRecord(run, sdkPoint.key, step, step));
        frames.push({ type: "sdk", stream: "data", ...ref, batch: { points: [sdkPoint] } });
        if (step % 5 === 0) {
          const path = `/w/ckpt-${step}.pt`;
          sent.checkpoints.add(checkpointRecord(run, path, step));
          frames.push({ type: "checkpoint", stream: "data", ...ref, checkpoint: { path, step } });
        }
        if (step % 7 === 0) {
          const message = `replay event ${step}`;
          sent.events.add(eventRecord("REPLAY_TEST", message));
          frames.push({
            type: "event",
            stream: "data",
            event: { type: "REPLAY_TEST", severity: "info", message, run_id: run },
          });
        }
        const sys = { key: "sys/gpu0_util_pct", step, value: step % 100 };
        sent.points.add(pointRecord(run, sys.key, step, sys.value));
        frames.push({ type: "metrics", stream: "sys", ...ref, points: [sys] });
      }
      for (const f of frames) await spool.append(f);
    };
    const whole = async () => ({
      data: (await spool.readAfter("data", 0)).frames,
      sys: (await spool.readAfter("sys", 0)).frames,
    });
    const stored = () => {
      const s = storedLedgers(`${h.dir}/gpuctl.db`, [run]);
      const events = new Ledger();
      for (
        const e of h.ctx.db.prepare("SELECT type, message FROM events WHERE type = 'REPLAY_TEST'")
          .all()
      ) {
        events.add(eventRecord(String(e.type), String(e.message)));
      }
      return { ...s, events };
    };
    const check = (what: string) => {
      const s = stored();
      assertEquals(String(s.points), String(sent.points), `${what}: points (seed ${seed})`);
      assertEquals(String(s.lines), String(linesLedger(run, lines)), `${what}: lines`);
      assertEquals(String(s.checkpoints), String(sent.checkpoints), `${what}: checkpoints`);
      assertEquals(String(s.events), String(sent.events), `${what}: events`);
      const w = pointWrites(`${h.dir}/gpuctl.db`);
      assertEquals(w.writes, w.points, `${what}: a point was written twice`);
    };

    const perRound = LONG ? 400 : 60;
    // The first connection: part of the spool goes through before it drops.
    await produce(perRound);
    const first = await whole();
    const cut = interleave(first.data, first.sys, random);
    for (const f of cut.slice(0, Math.floor(cut.length * random()))) apply(f);
    let applied = 0;
    for (let round = 1; round <= 3; round++) {
      await produce(perRound);
      const all = await whole();
      for (const f of interleave(all.data, all.sys, random)) if (apply(f)) applied++;
      check(`replay ${round}`);
    }
    for (let round = 1; round <= 3; round++) {
      const all = await whole();
      for (const f of shuffle([...all.data, ...all.sys], random)) {
        assertEquals(apply(f), false, `a shuffled replay stored ${f.stream}#${f.seq} again`);
      }
      check(`shuffled replay ${round}`);
    }
    // deno-lint-ignore no-console -- what this scenario compared
    console.log(
      `spool replays (seed ${seed}): ${sent.points.count} points, ${lines.length} lines, ${sent.checkpoints.count} checkpoints, ${sent.events.count} events, each stored once; ${applied} frames applied by the in-order replays`,
    );
  } finally {
    await spool.close();
    await Deno.remove(dir, { recursive: true });
    await h.stop();
  }
});
