import { assertEquals } from "../../tests/assert.ts";
import {
  estimateStarts,
  expectedEnd,
  type ForecastNode,
  type HeldSlots,
} from "./estimate_starts.ts";

const NOW = 1_000_000;
const MIN = 60_000;
const node = (id: string, gpus: number, cpu_slots = 2): ForecastNode => ({ id, gpus, cpu_slots });
const job = (id: string, gpus: number, pin: string | null = null) => ({ id, gpus, node: pin });

Deno.test("estimateStarts() says now for a job that fits on free GPUs", () => {
  assertEquals(estimateStarts([job("a", 2)], [node("n1", 4)], [], NOW), [
    { job_id: "a", starts_at: NOW, node_id: "n1" },
  ]);
});

Deno.test("estimateStarts() waits for the run that is expected to end first", () => {
  const held: HeldSlots[] = [
    { node_id: "n1", gpus: 4, ends_at: NOW + 30 * MIN },
    { node_id: "n2", gpus: 4, ends_at: NOW + 10 * MIN },
  ];
  assertEquals(estimateStarts([job("a", 2)], [node("n1", 4), node("n2", 4)], held, NOW), [
    { job_id: "a", starts_at: NOW + 10 * MIN, node_id: "n2" },
  ]);
});

Deno.test("estimateStarts() lets an earlier job claim GPUs before a later one", () => {
  const held: HeldSlots[] = [{ node_id: "n1", gpus: 2, ends_at: NOW + 5 * MIN }];
  // 4 GPUs, 2 held: the first job takes the free 2 now, the second waits for the release.
  assertEquals(estimateStarts([job("a", 2), job("b", 2)], [node("n1", 4)], held, NOW), [
    { job_id: "a", starts_at: NOW, node_id: "n1" },
    { job_id: "b", starts_at: NOW + 5 * MIN, node_id: "n1" },
  ]);
});

Deno.test("estimateStarts() gives no estimate when only a run with no known end blocks it", () => {
  const held: HeldSlots[] = [{ node_id: "n1", gpus: 4, ends_at: null }];
  assertEquals(estimateStarts([job("a", 1)], [node("n1", 4)], held, NOW), [
    { job_id: "a", starts_at: null, node_id: null },
  ]);
});

Deno.test("estimateStarts() never starts a job larger than every node, nor one pinned elsewhere", () => {
  assertEquals(
    estimateStarts([job("big", 8), job("pinned", 1, "gone")], [node("n1", 4)], [], NOW),
    [
      { job_id: "big", starts_at: null, node_id: null },
      { job_id: "pinned", starts_at: null, node_id: null },
    ],
  );
});

Deno.test("estimateStarts() counts CPU-only jobs against cpu_slots", () => {
  const held: HeldSlots[] = [{ node_id: "n1", gpus: 0, ends_at: NOW + MIN }];
  assertEquals(estimateStarts([job("a", 0), job("b", 0)], [node("n1", 0, 1)], held, NOW), [
    { job_id: "a", starts_at: NOW + MIN, node_id: "n1" },
    { job_id: "b", starts_at: null, node_id: null },
  ]);
});

Deno.test("expectedEnd() extrapolates time per step to max_steps", () => {
  const started_at = new Date(NOW - 10 * MIN).toISOString();
  assertEquals(expectedEnd({ step: 100, max_steps: 400, started_at }, NOW), NOW + 30 * MIN);
  assertEquals(expectedEnd({ step: null, max_steps: 400, started_at }, NOW), null);
  assertEquals(expectedEnd({ step: 100, max_steps: null, started_at }, NOW), null);
  assertEquals(expectedEnd({ step: 100, max_steps: 400, started_at: null }, NOW), null);
});
