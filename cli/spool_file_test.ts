import { assertEquals, assertThrows } from "../tests/assert.ts";
import { parseSpoolFile } from "./spool_file.ts";

const RUN = `{"type":"run","id":"r-0123456789ab","project":"p","config":{"lr":0.1}}`;
const LOG1 =
  `{"type":"log","points":[{"key":"loss","step":0,"value":"NaN","wall_time":1.5}],"step":0}`;
const LOG2 = `{"type":"log","points":[{"key":"loss","step":1,"value":0.5}],"status":"SUCCEEDED"}`;

Deno.test("parseSpoolFile() returns the bodies as written, without type", () => {
  const spool = parseSpoolFile(`${RUN}\n${LOG1}\n${LOG2}\n`, "r-0123456789ab");
  assertEquals(spool, {
    runId: "r-0123456789ab",
    registration: { id: "r-0123456789ab", project: "p", config: { lr: 0.1 } },
    batches: [
      { points: [{ key: "loss", step: 0, value: "NaN", wall_time: 1.5 }], step: 0 },
      { points: [{ key: "loss", step: 1, value: 0.5 }], status: "SUCCEEDED" },
    ],
    tornLastLine: false,
    refused: [],
  });
});

Deno.test("parseSpoolFile() ignores a torn last line", () => {
  const spool = parseSpoolFile(`${RUN}\n${LOG1}\n${LOG2.slice(0, 30)}`, "x");
  assertEquals([spool.batches.length, spool.tornLastLine], [1, true]);
});

Deno.test("parseSpoolFile() keeps a whole last line that only lacks its newline", () => {
  const spool = parseSpoolFile(`${RUN}\n${LOG1}\n${LOG2}`, "x");
  assertEquals([spool.batches.length, spool.tornLastLine], [2, false]);
});

Deno.test("parseSpoolFile() takes the run id from the file name when the run line has none", () => {
  const spool = parseSpoolFile(`{"type":"run","project":"p"}\n`, "r-fromname");
  assertEquals([spool.runId, spool.registration?.id], ["r-fromname", "r-fromname"]);
});

Deno.test("parseSpoolFile() reads a file of log lines only (its run was registered before)", () => {
  const spool = parseSpoolFile(`${LOG1}\n`, "r-0123456789ab");
  assertEquals([spool.runId, spool.registration, spool.batches.length], [
    "r-0123456789ab",
    null,
    1,
  ]);
});

Deno.test("parseSpoolFile() refuses a broken line that is not the last", () => {
  assertThrows(() => parseSpoolFile(`${RUN}\n{"type":"log",\n${LOG2}\n`, "x"), "line 2");
});

Deno.test("parseSpoolFile() leaves out only the items the server would refuse, naming them", () => {
  const bad =
    `{"type":"log","points":[{"key":"loss","step":-1,"value":1},{"key":"ok","step":1,"value":1}]}`;
  const spool = parseSpoolFile(`${RUN}\n${bad}\n`, "x");
  assertEquals(spool.batches, [{ points: [{ key: "ok", step: 1, value: 1 }] }]);
  assertEquals(spool.refused.map((r) => [r.line, r.path]), [[2, "points.0.step"]]);
});

Deno.test("parseSpoolFile() refuses a file it cannot read as the SDK's spool", () => {
  assertThrows(() => parseSpoolFile(`${RUN}\n${RUN}\n`, "x"), 'line 2 has type "run"');
  assertThrows(() => parseSpoolFile("", "x"), "no complete line");
});
