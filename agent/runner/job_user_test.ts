import assert from "node:assert/strict";
import { readStat } from "./_proc.ts";
import { lookupUser, parsePasswdLine, userSwitch } from "./job_user.ts";
import { createProcessRunner } from "./process_runner.ts";
import type { OutputLine, RunSpec } from "./types.ts";

Deno.test("parsePasswdLine() reads name, ids, home and shell; refuses malformed lines", () => {
  assert.deepEqual(parsePasswdLine("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"), {
    name: "nobody",
    uid: 65534,
    gid: 65534,
    home: "/nonexistent",
    shell: "/usr/sbin/nologin",
  });
  assert.equal(parsePasswdLine("nobody:x:abc:1:::"), null);
  assert.equal(parsePasswdLine("short:x:1"), null);
});

Deno.test("userSwitch() switches only from root, and not to the agent's own user", () => {
  const user = { name: "trainer", uid: 1001, gid: 1001, home: "/home/trainer", shell: "/bin/bash" };
  assert.deepEqual(userSwitch(user, 0), { switch: true, problem: null });
  assert.deepEqual(userSwitch(user, 1001), { switch: false, problem: null });
  const refused = userSwitch(user, 1000);
  assert.equal(refused.switch, false);
  assert.match(refused.problem ?? "", /uid 1000.*only an agent running as root.*"trainer"/);
});

const IS_ROOT = Deno.uid() === 0;

async function waitFor(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Switching users needs root; CI and the development machine run the tests as root.
Deno.test({
  name:
    "job_user: a job runs as nobody, cannot read the agent's 0600 files, and cancel kills its tree" +
    (IS_ROOT ? "" : " (skipped: needs the tests to run as root)"),
  ignore: !IS_ROOT,
  async fn() {
    const nobody = lookupUser("nobody");
    assert.ok(nobody, "this host has a nobody user");
    const home = await Deno.makeTempDir({ prefix: "gpuctl_home_" }); // 0700, the agent's
    const work = await Deno.makeTempDir({ prefix: "gpuctl_work_" });
    await Deno.chmod(work, 0o777);
    const secret = `${home}/server.yaml`;
    await Deno.writeTextFile(secret, "admin_token: gpc_x_TOPSECRET\n", { mode: 0o600 });
    const runner = createProcessRunner({
      baseEnv: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/root", USER: "root" },
      jobUser: nobody,
    });
    const spec = (id: string, command: string): RunSpec => ({
      run_id: id,
      job_id: "j",
      attempt: 1,
      command,
      shell: true,
      working_dir: work,
      env: { SECRET_FILE: secret },
      gpu_indices: [],
      runner: "process",
      image: null,
      run_dir: `${home}/runs/${id}`,
      grace_s: 0.5,
    });
    const pids = new Set<number>();
    try {
      const lines: OutputLine[] = [];
      const first = await runner.start(
        spec("whoami", 'id -u; echo "home=$HOME user=$USER"; cat "$SECRET_FILE" || echo denied'),
        { onLine: (l) => void lines.push(l) },
      );
      const exit = await first.exited;
      assert.equal(exit.failure_class, null, exit.reason);
      const out = lines.filter((l) => l.stream === "stdout").map((l) => l.text);
      assert.deepEqual(out, [String(nobody.uid), `home=${nobody.home} user=nobody`, "denied"]);
      assert.match(lines.find((l) => l.stream === "stderr")?.text ?? "", /Permission denied/);
      // The run's output log is the agent's, written and read as before.
      const log = await Deno.readTextFile(`${home}/runs/whoami/output.log`);
      assert.equal(log.includes("denied"), true);

      const tree = await runner.start(
        spec("tree", "sleep 300 & setsid sleep 300 & (trap '' TERM; sleep 300) & wait"),
        { onLine: () => {} },
      );
      await waitFor("the wrapper and four job processes", () => tree.pids().length >= 5);
      for (const pid of tree.pids()) pids.add(pid);
      const jobPids = [...pids].filter((p) => p !== tree.pid);
      for (const pid of jobPids) {
        const status = await Deno.readTextFile(`/proc/${pid}/status`);
        assert.match(
          status,
          new RegExp(`^Uid:\\s+${nobody.uid}\\s`, "m"),
          `pid ${pid} runs as nobody`,
        );
      }
      await tree.cancel(0.5);
      for (const pid of pids) assert.equal(readStat(pid), null, `pid ${pid} survived the cancel`);
      assert.equal((await tree.exited).failure_class, "CANCELLED");
    } finally {
      for (const pid of pids) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await Deno.remove(home, { recursive: true });
      await Deno.remove(work, { recursive: true });
    }
  },
});
