import { assert, assertEquals } from "../../tests/assert.ts";
import { AGENT_PERMISSIONS } from "../permissions.ts";
import {
  libcListDir,
  libcListDirInodes,
  libcProcEntries,
  libcReadFile,
  type ProcEntries,
  StatWalk,
} from "./_kernel_files.ts";

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

Deno.test("libc listings give each entry's inode, as stat does", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a`, "1");
    await Deno.mkdir(`${dir}/b`);
    const entries = libcListDirInodes(dir)!.sort((x, y) => x.name < y.name ? -1 : 1);
    assertEquals(
      entries.map((e) => [e.name, Number(e.ino)]),
      [["a", Deno.lstatSync(`${dir}/a`).ino], ["b", Deno.lstatSync(`${dir}/b`).ino]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a listing of /proc gives each process's pid and inode, as stat does", () => {
  const listed = libcProcEntries()!;
  const self = listed.pids.indexOf(Deno.pid);
  assert(self >= 0, "the process lists itself");
  assertEquals(listed.inos[self], Deno.lstatSync(`/proc/${Deno.pid}`).ino);
  const direct = [...Deno.readDirSync("/proc")].filter((e) => /^\d+$/.test(e.name));
  // Processes come and go meanwhile: most of them are in both.
  const both = direct.filter((e) => listed.pids.includes(Number(e.name))).length;
  assert(both > direct.length / 2, `${both} of ${direct.length} listed`);
  assert(!listed.pids.some((pid) => !Number.isInteger(pid) || pid <= 0));
});

Deno.test("a walk of /proc reads again only the entries it has not read before", () => {
  const reads: number[] = [];
  const texts: Record<number, string | null> = { 1: "one", 2: "two", 3: null };
  const read = (pid: number) => {
    reads.push(pid);
    return texts[pid];
  };
  const walk = new StatWalk();
  const listing = (...entries: [number, number][]): ProcEntries => ({
    pids: entries.map(([pid]) => pid),
    inos: entries.map(([, ino]) => ino),
  });
  const first = walk.lines(listing([1, 10], [2, 20]), read);
  assertEquals(first, ["one", "two"]);
  assertEquals(reads, [1, 2]);
  // The same processes: nothing read, and the same lines handed back.
  reads.length = 0;
  assert(walk.lines(listing([1, 10], [2, 20]), read) === first);
  assertEquals(reads, []);
  // A process that ended between listing and reading (null) is left out and read again
  // next time.
  assertEquals(walk.lines(listing([1, 10], [2, 20], [3, 30]), read), ["one", "two"]);
  assertEquals(reads, [3]);
  reads.length = 0;
  walk.lines(listing([1, 10], [2, 20], [3, 30]), read);
  assertEquals(reads, [3]);
  // Pid 2 taken by a new process (a new entry, a new inode), pid 1 gone.
  reads.length = 0;
  texts[2] = "two again";
  assertEquals(walk.lines(listing([2, 21]), read), ["two again"]);
  assertEquals(reads, [2]);
  // A gone entry is forgotten: coming back with its old inode it is read again.
  reads.length = 0;
  assertEquals(walk.lines(listing([1, 10], [2, 21]), read), ["one", "two again"]);
  assertEquals(reads, [1]);
  // `fresh` reads every one.
  reads.length = 0;
  walk.lines(listing([1, 10], [2, 21]), read, true);
  assertEquals(reads, [1, 2]);
});
