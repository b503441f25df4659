import { assertEquals } from "../../tests/assert.ts";
import type { EventRecord } from "../../protocol/objects.ts";
import { stopOnReason, type StoppableJob } from "./stop_on.ts";

const job: StoppableJob = {
  id: "j-1",
  status: "RUNNING",
  stop_on: ["LOSS_NAN"],
  run_id: "r-2",
  cancel_requested: false,
};

const nan: EventRecord = {
  id: 7,
  ts: "2026-01-01T00:00:00.000Z",
  type: "LOSS_NAN",
  severity: "critical",
  run_id: "r-2",
  job_id: "j-1",
  node_id: null,
  message: 'Loss "train/loss" is NaN at step 1234',
  data: { key: "train/loss", step: 1234, value: "NaN" },
};

Deno.test("stopOnReason() names the event and its step for a job that asked for it", () => {
  assertEquals(
    stopOnReason(job, nan),
    'stopped by LOSS_NAN at step 1234: Loss "train/loss" is NaN at step 1234',
  );
});

Deno.test("stopOnReason() leaves jobs alone that did not ask, ended, are cancelling, or moved on", () => {
  const table: [string, StoppableJob, EventRecord][] = [
    ["another type", job, { ...nan, type: "LOSS_SPIKE" }],
    ["no stop_on", { ...job, stop_on: [] }, nan],
    ["a queued job", { ...job, status: "QUEUED" }, nan],
    ["an ended job", { ...job, status: "FAILED" }, nan],
    ["a cancel already requested", { ...job, cancel_requested: true }, nan],
    ["an older attempt's run", { ...job, run_id: "r-3" }, nan],
  ];
  for (const [name, j, e] of table) assertEquals(stopOnReason(j, e), null, name);
});
