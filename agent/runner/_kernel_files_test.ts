import { assert, assertEquals } from "../../tests/assert.ts";
import { AGENT_PERMISSIONS } from "../permissions.ts";
import { libcListDir, libcReadFile } from "./_kernel_files.ts";

// Deno refuses /proc and /sys without --allow-all; the agent runs with a narrower list, so
// the libc path (and, without --allow-ffi, the `cat` path) must give the same answers.
async function probe(permissions: string[]) {
  const script = `
    import { listProcesses, readStat, bootId } from "${
    new URL("./_proc.ts", import.meta.url).href
  }";
    import { kernelFileMethod } from "${new URL("./_kernel_files.ts", import.meta.url).href}";
    const { all } = listProcesses();
    const self = readStat(Deno.pid);
    console.log(JSON.stringify({
      count: all.length,
      hasSelf: all.some((p) => p.pid === Deno.pid),
      selfPpid: self?.ppid ?? null,
      boot: bootId().length,
      method: kernelFileMethod(),
      direct: (() => { try { Deno.readTextFileSync("/proc/self/stat"); return true; } catch { return false; } })(),
    }));
  `;
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(file, script);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, file],
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
  return got.method;
}

Deno.test("kernel files are read through libc under the agent's permissions", async () => {
  assertEquals(await probe([...AGENT_PERMISSIONS]), "libc");
});

Deno.test("without --allow-ffi, kernel files are read through cat", async () => {
  assertEquals(await probe(["--allow-run", "--allow-read", "--allow-env"]), "cat");
});

Deno.test("libc reads give what a direct read gives, and null for what is not there", () => {
  assertEquals(libcReadFile("/proc/self/cmdline"), Deno.readTextFileSync("/proc/self/cmdline"));
  assertEquals(
    libcReadFile("/proc/sys/kernel/random/boot_id"),
    Deno.readTextFileSync("/proc/sys/kernel/random/boot_id"),
  );
  assertEquals(libcReadFile("/proc/999999999/stat"), null);
  assertEquals(libcListDir("/no/such/dir"), null);
  const direct = [...Deno.readDirSync("/proc/self")].map((e) => e.name).sort();
  assertEquals(libcListDir("/proc/self")!.sort(), direct);
});

Deno.test("libc reads grow past their buffer for large files", async () => {
  const file = await Deno.makeTempFile();
  const text = "x".repeat(200_000) + "\nend\n";
  await Deno.writeTextFile(file, text);
  try {
    assertEquals(libcReadFile(file), text);
  } finally {
    await Deno.remove(file);
  }
});
