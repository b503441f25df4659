// The job user's side of the boundary: each test plays a job that owns its folder and plants
// links in it, and checks that the agent's steps reach nothing the job user could not.
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { createJobFiles } from "./job_files.ts";
import { lookupUser } from "./runner/job_user.ts";

const asRoot = Deno.uid() === 0;
const nobody = asRoot ? lookupUser("nobody") : null;
const skip = nobody === null
  ? " (skipped: needs the tests to run as root, with a user nobody)"
  : "";

/** A folder the job user owns (its working dir), in a temp folder it may enter. */
async function jobFolder(): Promise<{ root: string; wd: string; secret: string }> {
  const root = await Deno.makeTempDir({ prefix: "gpuctl-job-files-" });
  await Deno.chmod(root, 0o755);
  const wd = `${root}/wd`;
  await Deno.mkdir(wd);
  await Deno.chown(wd, nobody!.uid, nobody!.gid);
  const secret = `${root}/secret.json`;
  await Deno.writeTextFile(secret, '{"client_secret": "decoy-c1b2a3"}', { mode: 0o600 });
  return { root, wd, secret };
}

Deno.test({
  name:
    "job files: folders are made by the job user, and a planted link leads only where it may go" +
    skip,
  ignore: nobody === null,
  async fn() {
    const { root, wd } = await jobFolder();
    try {
      const files = createJobFiles(nobody);
      await files.makeDir(`${wd}/.gpuctl-runs/r-1`);
      const made = await Deno.lstat(`${wd}/.gpuctl-runs/r-1`);
      assertEquals([made.uid, made.mode! & 0o777], [nobody!.uid, 0o700]);
      // The job swaps its folder for a link to a root-owned one: the step fails there.
      const target = `${root}/system`;
      await Deno.mkdir(target, { mode: 0o755 });
      await Deno.symlink(target, `${wd}/.gpuctl-runs/r-2`);
      await assertRejects(() => files.makeDir(`${wd}/.gpuctl-runs/r-2/sub`), "nobody");
      const after = await Deno.stat(target);
      assertEquals([after.uid, after.mode! & 0o777], [0, 0o755]);
      assertEquals([...Deno.readDirSync(target)], []);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "job files: a link to a root-only file reads as a problem that quotes nothing" + skip,
  ignore: nobody === null,
  async fn() {
    const { root, wd, secret } = await jobFolder();
    try {
      const files = createJobFiles(nobody);
      await Deno.symlink(secret, `${wd}/out.json`);
      const read = await files.read(`${wd}/out.json`, 1024);
      assertEquals(read, { problem: 'cannot be read as job_user "nobody"' });
      // A FIFO would block a reader until someone writes it: it is not read at all.
      await new Deno.Command("mkfifo", { args: [`${wd}/fifo`] }).output();
      assertEquals(await files.read(`${wd}/fifo`, 1024), { problem: "is not a regular file" });
      assertEquals(await files.read(`${wd}/none.json`, 1024), { missing: true });
      // The job's own file is read, from an offset and bounded.
      await Deno.writeTextFile(`${wd}/own.txt`, "0123456789");
      const own = await files.read(`${wd}/own.txt`, 4, 3);
      assert("bytes" in own);
      assertEquals(new TextDecoder().decode(own.bytes), "3456");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "job files: a write through a planted link cannot change a root-owned file" + skip,
  ignore: nobody === null,
  async fn() {
    const { root, wd, secret } = await jobFolder();
    try {
      const files = createJobFiles(nobody);
      await Deno.symlink(secret, `${wd}/r-1.sent`);
      await assertRejects(() => files.write(`${wd}/r-1.sent`, "42\n"), "nobody");
      assertEquals(await Deno.readTextFile(secret), '{"client_secret": "decoy-c1b2a3"}');
      await files.write(`${wd}/own.sent`, "42\n");
      const own = await Deno.lstat(`${wd}/own.sent`);
      assertEquals([own.uid, await Deno.readTextFile(`${wd}/own.sent`)], [nobody!.uid, "42\n"]);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "job files: a step as the job user gets none of the agent's environment" + skip,
  ignore: nobody === null,
  async fn() {
    const { root, wd } = await jobFolder();
    const name = "GPUCTL_AGENT_TOKEN";
    const before = Deno.env.get(name);
    Deno.env.set(name, "gpc_agent_token_value");
    try {
      // A `mkdir` on the PATH that records its environment where the job user can read it.
      const bin = `${root}/bin`;
      await Deno.mkdir(bin, { mode: 0o755 });
      await Deno.writeTextFile(`${bin}/mkdir`, `#!/bin/sh\nenv >"${wd}/env.txt"\n`, {
        mode: 0o755,
      });
      await createJobFiles(nobody, { path: `${bin}:/usr/bin:/bin` }).makeDir(`${wd}/x`);
      const env = await Deno.readTextFile(`${wd}/env.txt`);
      assert(!env.includes("gpc_agent_token_value"), env);
      assertEquals((await Deno.lstat(`${wd}/env.txt`)).uid, nobody!.uid);
    } finally {
      if (before === undefined) Deno.env.delete(name);
      else Deno.env.set(name, before);
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "job files: a step the job user stops, floods or holds open is killed within its bounds" +
    skip,
  ignore: nobody === null,
  async fn() {
    const { root, wd } = await jobFolder();
    try {
      const bin = `${root}/bin`;
      await Deno.mkdir(bin, { mode: 0o755 });
      const tool = (name: string, body: string) =>
        Deno.writeTextFile(`${bin}/${name}`, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
      // Stopped (as the job's processes may do to a process of their user): SIGKILL still ends it.
      await tool("mkdir", "kill -STOP $$");
      // A reader that writes far more than it was asked for.
      await tool("sh", "exec /bin/cat /dev/zero");
      // A writer that leaves a child holding its pipes open.
      await tool(
        "cat",
        `/bin/sleep 20 </dev/null & echo $! >"${wd}/child.pid"; exec /bin/sleep 20`,
      );
      const files = createJobFiles(nobody, { path: `${bin}:/usr/bin:/bin`, timeoutMs: 300 });
      const stoppedDir = await assertRejects(() => files.makeDir(`${wd}/x`));
      assertStringIncludes(stoppedDir.message, "took more than 300 ms");
      assertEquals(await files.read(`${wd}/any`, 1024), {
        problem: 'could not be read as job_user "nobody": it wrote more than was asked',
      });
      // A write runs `sh -c 'exec cat …'`: with the real `sh` again, it meets the held pipes.
      await Deno.remove(`${bin}/sh`);
      const held = await assertRejects(() =>
        createJobFiles(nobody, { path: `${bin}:/usr/bin:/bin`, timeoutMs: 300 }).write(
          `${wd}/f`,
          "1\n",
        )
      );
      assertStringIncludes(held.message, "took more than 300 ms");
      const pid = Number(await Deno.readTextFile(`${wd}/child.pid`));
      Deno.kill(pid, "SIGKILL");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test("job files: without setpriv a step fails with a problem that says so, and never throws on a read", async () => {
  const user = { name: "trainer", uid: 4242, gid: 4242, home: "/", shell: "/bin/sh" };
  const files = createJobFiles(user, { setpriv: "/nonexistent/setpriv" });
  assertEquals(await files.read("/any/file", 10), {
    problem: 'cannot be read as job_user "trainer"',
  });
  const made = await assertRejects(() => files.makeDir("/any/folder"));
  assertStringIncludes(made.message, "cannot start /nonexistent/setpriv");
});

Deno.test("job files: without a job user the agent's own steps read, write and make folders", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-job-files-" });
  try {
    const files = createJobFiles(null);
    await files.makeDir(`${dir}/a/b`);
    assertEquals((await Deno.stat(`${dir}/a/b`)).mode! & 0o777, 0o700);
    await files.write(`${dir}/a/b/f`, "hello");
    const read = await files.read(`${dir}/a/b/f`, 3, 1);
    assert("bytes" in read);
    assertEquals(new TextDecoder().decode(read.bytes), "ell");
    assertEquals(await files.read(`${dir}/a/b`, 3), { problem: "is not a regular file" });
    assertEquals(await files.read(`${dir}/none`, 3), { missing: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
