import { assert, assertEquals } from "../tests/assert.ts";
import { cpuPercent, diskUsage, HostReader, sumCpuTimes } from "./host_stats.ts";

const cpu = (user: number, idle: number) => ({ times: { user, nice: 0, sys: 0, idle, irq: 0 } });

Deno.test("sumCpuTimes() and cpuPercent() compute busy time between two readings", () => {
  const before = sumCpuTimes([cpu(100, 400), cpu(100, 400)]);
  const after = sumCpuTimes([cpu(200, 400), cpu(100, 500)]);
  assertEquals(before, { idle: 800, total: 1000 });
  assertEquals(cpuPercent(before!, after!), 50);
  assertEquals(cpuPercent(after!, after!), null);
  assertEquals(sumCpuTimes([]), null);
});

Deno.test("HostReader and diskUsage() read this host", async () => {
  const host = new HostReader();
  assertEquals(host.cpuPct(), null, "the first reading has nothing to compare with");
  await new Promise((resolve) => setTimeout(resolve, 50));
  const pct = host.cpuPct();
  assert(pct === null || (pct >= 0 && pct <= 100));
  const memory = host.memory();
  assert(memory && memory.totalMb > 0 && memory.usedMb > 0);
  assert(host.cpuCount() > 0);
  const disk = diskUsage(Deno.cwd());
  assert(disk && disk.totalBytes > 0 && disk.freeBytes >= 0);
  assertEquals(diskUsage("/no/such/path"), null);
});
