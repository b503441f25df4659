/**
 * Property-based fuzz of the agent wire: every frame type an agent token may send, mutated
 * field by field (hostile strings, wrong types, huge and negative numbers, dropped and
 * extra fields), and frames that are not frames at all. Each must be refused with a reason
 * (an `error` frame naming what is wrong) or applied, never fail inside the server, and
 * never stall the node: the valid frame sent after it is acked on the same connection.
 */
import fc from "fast-check";
import { assert } from "./assert.ts";
import { createGatewayHarness, FakeAgent, type GatewayHarness } from "./_fake_agent.ts";

const HOSTILE: unknown[] = [
  null,
  true,
  -1,
  1e308,
  -1e308,
  0.5,
  "",
  "NaN",
  "Infinity",
  "\u0000",
  "\ud800",
  "\x1b[2J",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "a".repeat(70_000),
  [],
  {},
  [[[[[[]]]]]],
  { type: "hello" },
];

const hostile = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

type Frame = Record<string, unknown>;

/** One valid frame of each type for the running attempt (`seq` filled in when sent). */
function templates(ref: { job_id: string; attempt: number; run_id: string }): Frame[] {
  const data = (f: Frame) => ({ stream: "data", ...ref, ...f });
  return [
    {
      type: "heartbeat",
      ts: 1,
      gpus: [],
      cpu_pct: 1,
      mem_used_mb: 1,
      disk_free_mb: 1,
      foreign: [],
      running: [{ ...ref, pid: 1, state: "RUNNING" }],
    },
    data({ type: "job_state", state: "RUNNING", ts: 1, pid: 1 }),
    data({ type: "metrics", points: [{ key: "loss", step: 1, value: 1, wall_time: 1 }] }),
    data({ type: "logs", lines: [{ seq: 1, stream: "stdout", text: "hi", ts: 1 }] }),
    data({ type: "checkpoint", checkpoint: { path: "/w/ckpt/step-1.pt", step: 1 } }),
    data({ type: "sdk", batch: { points: [{ key: "acc", step: 1, value: 0.5 }] } }),
    {
      type: "event",
      stream: "data",
      event: { type: "DISK_LOW", severity: "warning", message: "low", data: { free_mb: 1 } },
    },
  ];
}

/** What goes down the socket: a frame (mutated or whole), or text that is no frame. */
type Wire = { frame: Frame } | { text: string };

function mutatedFrame(frames: Frame[]): fc.Arbitrary<Wire> {
  return fc.constantFrom(...frames).chain((frame) =>
    fc.oneof(
      // One field replaced or dropped.
      fc.tuple(
        fc.constantFrom(...Object.keys(frame).filter((k) => k !== "seq")),
        hostile,
        fc.boolean(),
      )
        .map(([key, value, drop]) => {
          const copy = { ...frame };
          if (drop) delete copy[key];
          else copy[key] = value;
          return { frame: copy };
        }),
      // A nested field replaced (the first array's or object's first member).
      fc.tuple(hostile).map(([value]) => ({ frame: nestedReplace(frame, value) })),
      // An extra field.
      fc.tuple(fc.string({ maxLength: 10 }), hostile).map(([key, value]) => ({
        frame: { ...frame, [`x_${key}`]: value },
      })),
    )
  );
}

function nestedReplace(frame: Frame, value: unknown): Frame {
  const copy = structuredClone(frame);
  for (const v of Object.values(copy)) {
    if (Array.isArray(v) && v.length && typeof v[0] === "object" && v[0] !== null) {
      const first = v[0] as Frame;
      const key = Object.keys(first)[0];
      first[key] = value;
      return copy;
    }
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      const inner = v as Frame;
      const key = Object.keys(inner)[0];
      inner[key] = value;
      return copy;
    }
  }
  return copy;
}

const notFrames: fc.Arbitrary<Wire> = fc.constantFrom<Wire>(
  { text: "" },
  { text: "{" },
  { text: "null" },
  { text: "[]" },
  { text: '"hello"' },
  { text: '{"type":"nope"}' },
  { text: '{"type":"metrics"}' },
  { text: "[".repeat(10_000) + "]".repeat(10_000) },
  { text: '{"type":"heartbeat","ts":1e999}' },
);

async function connected(h: GatewayHarness) {
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  agent.hello();
  await agent.until((a) => a.of("ack").length === 2);
  const id = (await h.call("POST", "/api/jobs", {
    body: { name: "fuzz", command: ["true"], working_dir: "/w", gpus: 1 },
  })).json.id;
  await agent.until((a) => a.of("dispatch").length === 1);
  const run_id = agent.of("dispatch")[0].job.run_id;
  const ref = { job_id: id, attempt: 1, run_id };
  agent.jobState(ref, "RUNNING", { pid: 1 });
  return { agent, ref };
}

Deno.test("fuzz: malformed agent frames are refused with a reason and never stall the node", async () => {
  const h = await createGatewayHarness();
  try {
    const { agent, ref } = await connected(h);
    const frames = templates(ref);
    let seq = 1_000;
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ weight: 6, arbitrary: mutatedFrame(frames) }, notFrames),
        async (wire) => {
          const errorsBefore = agent.of("error").length;
          const acksBefore = agent.of("ack").length;
          if ("text" in wire) agent.sendText(wire.text);
          else {
            agent.send("stream" in wire.frame ? { seq: ++seq, ...wire.frame } : wire.frame);
          }
          // A valid frame right after: it must be applied and acked on the same connection.
          const mine = ++seq;
          agent.send({ ...frames[2], seq: mine });
          await agent.until((a) =>
            a.of("ack").slice(acksBefore).some((f) => f.stream === "data" && f.seq >= mine)
          );
          for (const e of agent.of("error").slice(errorsBefore)) {
            assert(
              !e.message.startsWith("The server failed"),
              `${JSON.stringify(wire).slice(0, 300)}: ${e.message}`,
            );
            assert(e.message.length > 10, e.message);
          }
          checked++;
        },
      ),
      { numRuns: 250, seed: 20261201 },
    );
    assert(checked === 250);
    // Malformed frames were refused with reasons, not ignored in silence.
    assert(agent.of("error").length > 100, `${agent.of("error").length} refusals`);
    await agent.close();
  } finally {
    await h.stop();
  }
});
