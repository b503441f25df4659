/**
 * The gateway's frame check gives what the wire schema gives: the same frame for every good
 * one, and the same first error (field and message) for every bad one, whether or not the
 * points' hand check took it.
 */
import { assertEquals } from "../../tests/assert.ts";
import { agentFrame } from "../../protocol/agent.ts";
import { MAX_NAME_LENGTH } from "../../protocol/rest/fields.ts";
import { parseAgentFrame } from "./parse_frame.ts";

const good = () => ({
  type: "metrics",
  stream: "data",
  seq: 7,
  job_id: "j-1",
  attempt: 1,
  run_id: "r-1",
  points: [
    { key: "loss", step: 0, value: 0.5, wall_time: 1_700_000_000.25 },
    { key: "acc", step: 0, value: 1 },
    { key: "lr", step: 3, value: -2e-5, wall_time: 0 },
  ],
});

type Frame = ReturnType<typeof good> & Record<string, unknown>;
type Point = Record<string, unknown>;

/** One change each: points and fields the schema refuses, or accepts only by converting. */
const changes: [string, (f: Frame) => void][] = [
  ["nothing", () => {}],
  ["a NaN value sent as text", (f) => f.points[1].value = "NaN" as unknown as number],
  ["an Infinity value", (f) => f.points[0].value = "-Infinity" as unknown as number],
  ["a value as a number string", (f) => f.points[0].value = "1" as unknown as number],
  ["a null value", (f) => f.points[0].value = null as unknown as number],
  ["no value", (f) => delete (f.points[2] as Point).value],
  ["no key", (f) => delete (f.points[0] as Point).key],
  ["an empty key", (f) => f.points[0].key = ""],
  ["the longest key", (f) => f.points[0].key = "k".repeat(MAX_NAME_LENGTH)],
  ["a key too long", (f) => f.points[0].key = "k".repeat(MAX_NAME_LENGTH + 1)],
  ["a key that is a number", (f) => f.points[0].key = 5 as unknown as string],
  ["a fractional step", (f) => f.points[2].step = 1.5],
  ["a negative step", (f) => f.points[2].step = -1],
  ["a step past the safe integers", (f) => f.points[2].step = 2 ** 53],
  ["a step as text", (f) => f.points[2].step = "3" as unknown as number],
  ["a negative wall time", (f) => f.points[0].wall_time = -1],
  ["a null wall time", (f) => f.points[0].wall_time = null as unknown as number],
  ["an unknown point field", (f) => (f.points[1] as Point).unit = "s"],
  ["a field named __proto__", (f) => {
    f.points[1] = JSON.parse('{"key":"acc","step":0,"value":1,"__proto__":{"x":1}}');
  }],
  ["a point that is an array", (f) => f.points[1] = [1, 2] as unknown as typeof f.points[1]],
  ["a point that is null", (f) => f.points[1] = null as unknown as typeof f.points[1]],
  ["no points", (f) => f.points = []],
  ["points not an array", (f) => f.points = {} as unknown as typeof f.points],
  ["too many points", (f) => {
    f.points = Array.from({ length: 50_001 }, (_, i) => ({ key: "k", step: i, value: 1 }));
  }],
  ["the most points", (f) => {
    f.points = Array.from({ length: 50_000 }, (_, i) => ({ key: "k", step: i, value: 1 }));
  }],
  ["no run id", (f) => delete (f as Point).run_id],
  ["attempt 0", (f) => f.attempt = 0],
  ["an unknown stream", (f) => f.stream = "other"],
  ["an unknown frame field", (f) => f.extra = 1],
  ["a fractional seq", (f) => f.seq = 1.5],
  ["a logs frame", (f) => {
    (f as Point).type = "logs";
    (f as Point).lines = [{ seq: 1, text: "x" }];
    delete (f as Point).points;
  }],
  ["a frame that is not an object", (f) => f.type = "nothing"],
];

const ACCEPTED = new Set([
  "nothing",
  "a NaN value sent as text",
  "an Infinity value",
  "the longest key",
  "the most points",
  "a logs frame",
]);

Deno.test("a frame checked by the gateway: the schema's frame when good, its first error when not", () => {
  for (const [what, change] of changes) {
    // Each frame read from its JSON text, as off the socket.
    const f = good() as Frame;
    change(f);
    const text = JSON.stringify(f);
    const want = agentFrame.safeParse(JSON.parse(text));
    const got = parseAgentFrame(JSON.parse(text));
    assertEquals(want.success, ACCEPTED.has(what), `the schema on ${what}`);
    assertEquals(got.success, want.success, what);
    if (want.success && got.success) assertEquals(got.data, want.data, what);
    if (!want.success && !got.success) {
      const first = (e: { issues: { path: PropertyKey[]; message: string }[] }) => ({
        path: e.issues[0].path,
        message: e.issues[0].message,
      });
      assertEquals(first(got.error), first(want.error), what);
    }
  }
  assertEquals(parseAgentFrame(null).success, false);
  assertEquals(parseAgentFrame([good()]).success, false);
});
