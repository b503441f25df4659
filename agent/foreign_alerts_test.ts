import { assertEquals } from "../tests/assert.ts";
import { newForeignProcesses } from "./foreign_alerts.ts";

Deno.test("newForeignProcesses() reports each (gpu, pid) once while it stays", () => {
  let seen = new Set<string>();
  const step = (list: [number, number][]) => {
    const out = newForeignProcesses(
      seen,
      list.map(([gpu_index, pid]) => ({ gpu_index, pid, used_mb: 100 })),
    );
    seen = out.seen;
    return out.fresh.map((p) => `${p.gpu_index}:${p.pid}`);
  };
  assertEquals(step([[0, 42]]), ["0:42"]);
  assertEquals(step([[0, 42], [1, 42]]), ["1:42"]);
  assertEquals(step([[0, 42], [1, 42]]), []);
  assertEquals(step([]), []);
  assertEquals(step([[0, 42]]), ["0:42"], "a process that came back alerts again");
});
