import { assert, assertEquals } from "../../tests/assert.ts";

// Deno refuses /proc and /sys without --allow-all; the agent runs with a narrower list,
// so the fallback through `cat` must give the same answers.
Deno.test("kernel files are read under the agent's permissions, without --allow-all", async () => {
  const script = `
    import { listProcesses, readStat, bootId } from "${
    new URL("./_proc.ts", import.meta.url).href
  }";
    const all = listProcesses();
    const self = readStat(Deno.pid);
    console.log(JSON.stringify({
      count: all.length,
      hasSelf: all.some((p) => p.pid === Deno.pid),
      selfPpid: self?.ppid ?? null,
      boot: bootId().length,
      direct: (() => { try { Deno.readTextFileSync("/proc/self/stat"); return true; } catch { return false; } })(),
    }));
  `;
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(file, script);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-run", "--allow-read", "--allow-env", file],
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(file);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const got = JSON.parse(new TextDecoder().decode(out.stdout));
  assert(got.count > 1, `only ${got.count} processes listed`);
  assert(got.hasSelf, "the process lists itself");
  assertEquals(got.selfPpid, Deno.pid);
  assertEquals(got.boot, 36);
  assertEquals(got.direct, false, "the test must run where a direct read is refused");
});
