import assert from "node:assert/strict";
import { findForeignProcesses } from "./foreign_processes.ts";
import type { GpuSample } from "./types.ts";

function sample(index: number, processes: GpuSample["processes"], error?: string): GpuSample {
  return {
    index,
    uuid: `GPU-${index}`,
    memory_used_mb: null,
    memory_total_mb: null,
    util_pct: null,
    temp_c: null,
    power_w: null,
    processes,
    ...(error ? { error } : {}),
  };
}

const cases: {
  name: string;
  samples: GpuSample[];
  owned: number[];
  want: ReturnType<typeof findForeignProcesses>;
}[] = [
  {
    name: "reports nothing when every GPU process belongs to a job",
    samples: [sample(0, [{ pid: 10, used_mb: 100 }]), sample(1, [{ pid: 11, used_mb: 5 }])],
    owned: [10, 11],
    want: [],
  },
  {
    name: "reports a process no job owns, with its GPU and memory",
    samples: [sample(0, [{ pid: 10, used_mb: 100 }, { pid: 66, used_mb: null }])],
    owned: [10],
    want: [{ gpu_index: 0, pid: 66, used_mb: null }],
  },
  {
    name: "reports a process on every GPU it holds, ordered by GPU then pid",
    samples: [
      sample(1, [{ pid: 9, used_mb: 1 }, { pid: 5, used_mb: 2 }]),
      sample(0, [{ pid: 9, used_mb: 3 }]),
    ],
    owned: [],
    want: [
      { gpu_index: 0, pid: 9, used_mb: 3 },
      { gpu_index: 1, pid: 5, used_mb: 2 },
      { gpu_index: 1, pid: 9, used_mb: 1 },
    ],
  },
  {
    name: "ignores unreadable GPUs",
    samples: [sample(0, [], "GPU_IS_LOST")],
    owned: [],
    want: [],
  },
];

for (const c of cases) {
  Deno.test(`findForeignProcesses() ${c.name}`, () => {
    assert.deepEqual(findForeignProcesses(c.samples, new Set(c.owned)), c.want);
  });
}
