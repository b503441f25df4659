import { assertEquals } from "../../tests/assert.ts";
import { OomWatch, openOomCounter } from "./_oom_counter.ts";

/** A cgroup v2 tree in a temp dir: `memory.events` per cgroup, with its oom_kill count. */
async function fakeCgroups(root: string, counts: Record<string, number>): Promise<void> {
  for (const [path, n] of Object.entries(counts)) {
    await Deno.mkdir(`${root}${path}`, { recursive: true });
    await Deno.writeTextFile(
      `${root}${path}/memory.events`,
      `low 0\nhigh 0\nmax 3\noom 1\noom_kill ${n}\n`,
    );
  }
}

Deno.test("OomWatch sees an OOM kill in a cgroup a job's process moved into after launch", async () => {
  const root = await Deno.makeTempDir({ prefix: "gpuctl-cgroup-" });
  try {
    await fakeCgroups(root, { "/job": 0, "/job/worker-1": 0, "/other": 5 });
    const cgroupOf: Record<number, string> = { 10: "/job", 11: "/job/worker-1", 12: "/job" };
    const read = (pid: number) => cgroupOf[pid] ? `0::${cgroupOf[pid]}\n` : null;
    const watch = new OomWatch({ file: `${root}/job/memory.events`, base: 0 }, read, root);
    watch.observe([10, 11, 12, 99]); // 99: gone before it was read
    assertEquals(watch.counters().map((c) => c.file.slice(root.length)), [
      "/job/memory.events",
      "/job/worker-1/memory.events",
    ]);
    assertEquals(watch.killedSince(), false);
    // The kernel kills the worker in its own cgroup: only that cgroup's counter rises.
    await fakeCgroups(root, { "/job/worker-1": 1 });
    assertEquals(watch.killedSince(), true);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("OomWatch follows a process that moves into another cgroup after it was first seen", async () => {
  const root = await Deno.makeTempDir({ prefix: "gpuctl-cgroup-" });
  try {
    await fakeCgroups(root, { "/job": 0, "/limited": 2 });
    const cgroupOf: Record<number, string> = { 10: "/job" };
    const read = (pid: number) => cgroupOf[pid] ? `0::${cgroupOf[pid]}\n` : null;
    const watch = new OomWatch({ file: `${root}/job/memory.events`, base: 0 }, read, root);
    watch.observe([10]);
    // The job writes its own pid into a cgroup with a small limit.
    cgroupOf[10] = "/limited";
    watch.observe([10]);
    assertEquals(watch.counters().map((c) => c.file.slice(root.length)), [
      "/job/memory.events",
      "/limited/memory.events",
    ]);
    assertEquals(watch.killedSince(), false, "2 kills before it moved there are not its");
    await fakeCgroups(root, { "/limited": 3 });
    assertEquals(watch.killedSince(), true);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("OomWatch counts only kills after a cgroup was first seen, and says null when unreadable", async () => {
  const root = await Deno.makeTempDir({ prefix: "gpuctl-cgroup-" });
  try {
    await fakeCgroups(root, { "/busy": 7 });
    const watch = new OomWatch(null, () => "0::/busy\n", root);
    assertEquals(watch.killedSince(), null);
    watch.observe([1]);
    assertEquals(watch.killedSince(), false, "7 kills before the job was seen there are not its");
    await Deno.remove(`${root}/busy/memory.events`);
    assertEquals(watch.killedSince(), null);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("openOomCounter reads this process's own cgroup where the kernel exposes it", () => {
  const counter = openOomCounter(Deno.pid);
  if (counter === null) return; // no memory cgroup readable here (some containers)
  assertEquals(typeof counter.base, "number");
});
