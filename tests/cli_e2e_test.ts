/**
 * Every `gpuctl` command as a user types it (installed with the README's `deno install`
 * line), against a real server process and an agent with fake GPUs: output, `--json`
 * against the API, and exit codes.
 */
import { join } from "node:path";
import { COMMANDS } from "../cli/main.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { TFEVENTS_FIXTURES } from "../cli/_test_server.ts";
import { type Gpuctl, installArgs, installGpuctl } from "./_gpuctl.ts";
import { startCluster, until } from "./_processes.ts";

const KERAS = join(TFEVENTS_FIXTURES, "keras-exp0");

Deno.test("gpuctl, installed, drives a server and an agent with fake GPUs end to end", async (t) => {
  const c = await startCluster({ fakeGpus: 2, prefix: "gpuctl-cli-e2e-" });
  const cliHome = `${c.home}/cli-home`;
  await Deno.mkdir(cliHome);
  const gpuctl: Gpuctl = await installGpuctl({
    GPUCTL_HOME: cliHome,
    GPUCTL_SERVER_URL: c.server.url,
    GPUCTL_TOKEN: c.server.adminToken,
  });
  const api = async (path: string) => (await c.call("GET", path)).json;
  try {
    await t.step("status: a table, and --json is the API's overview", async () => {
      const text = await gpuctl.run(["status"]);
      assertEquals([text.code, text.stderr], [0, ""]);
      assertStringIncludes(text.stdout, "nodes   1 online");
      assertStringIncludes(text.stdout, "gpus    0 busy of 2");
      const json = await gpuctl.run(["status", "--json"]);
      const { generated_at: _a, ...got } = json.json();
      const { generated_at: _b, ...want } = await api("/api/status");
      assertEquals(got, want);
      const nodes = await gpuctl.run(["node", "list", "--json"]);
      assertEquals(nodes.json().items.map((n: { id: string }) => n.id), ["e2e-node"]);
      const nodeTable = await gpuctl.run(["node", "list"]);
      assertStringIncludes(nodeTable.stdout, "e2e-node");
      assertStringIncludes(nodeTable.stdout, "(fake)");
    });

    await t.step(
      "job submit --follow of a job that exits 3 prints its log and exits 3",
      async () => {
        const res = await gpuctl.run([
          "job",
          "submit",
          "-n",
          "three",
          "-g",
          "1",
          "-d",
          "/tmp",
          "--follow",
          "--",
          "sh",
          "-c",
          "echo first; echo second >&2; exit 3",
        ]);
        assertEquals(res.code, 3, res.stderr);
        const [id, ...lines] = res.stdout.trim().split("\n");
        assert(/^j-/.test(id), res.stdout);
        assertEquals(lines.sort(), ["first", "second"]);
        assertStringIncludes(res.stderr, `job ${id} FAILED with exit code 3`);
        const job = await api(`/api/jobs/${id}`);
        assertEquals([job.status, job.exit_code, job.working_dir, job.gpus], [
          "FAILED",
          3,
          "/tmp",
          1,
        ]);
      },
    );

    await t.step("job submit --follow follows the job across its attempts", async () => {
      // An attempt stopped from outside (SIGTERM, as a preemption does) is requeued while
      // attempts remain: its diagnosed cause is transient.
      const follow = await gpuctl.run([
        "job",
        "submit",
        "-g",
        "1",
        "--max-attempts",
        "2",
        "--follow",
        "--",
        "sh",
        "-c",
        "echo try; kill -TERM $$",
      ]);
      const [id, ...lines] = follow.stdout.trim().split("\n");
      const job = await api(`/api/jobs/${id}`);
      // As a shell reports it: 128 + the signal's number (SIGTERM is 15).
      assertEquals([follow.code, job.signal], [143, "SIGTERM"], follow.stderr);
      assertEquals(job.attempt, 2);
      assertEquals([job.status, job.failure_class], ["FAILED", "SIGNAL"]);
      assertEquals(lines, ["try", `--- attempt 2 (run ${job.run_id}) ---`, "try"]);
    });

    let okJob = "";
    await t.step("job submit prints the id; show, list and logs agree with the API", async () => {
      const submit = await gpuctl.run([
        "job",
        "submit",
        "-n",
        "hello",
        "-g",
        "0",
        "--project",
        "cli",
        "--env",
        "GREETING=hi there",
        "--shell",
        "--follow",
        "--",
        "echo",
        '"$GREETING"',
        "&&",
        "printf",
        "'\\033[31mred\\033[0m\\n'",
      ]);
      assertEquals(submit.code, 0, submit.stderr);
      const [id, ...lines] = submit.stdout.trim().split("\n");
      okJob = id;
      // The escape sequences the job printed are stripped on the way to the terminal.
      assertEquals(lines, ["hi there", "red"]);
      const show = await gpuctl.run(["job", "show", id, "--json"]);
      assertEquals(show.json(), await api(`/api/jobs/${id}`));
      const text = await gpuctl.run(["job", "show", id]);
      assertStringIncludes(text.stdout, "status:      SUCCEEDED");
      const list = await gpuctl.run(["job", "list", "--project", "cli", "--json"]);
      assertEquals(list.json(), await api("/api/jobs?project=cli&limit=50"));
      const table = await gpuctl.run(["job", "list"]);
      assertStringIncludes(table.stdout, "ID");
      assertStringIncludes(table.stdout, id);
      const logs = await gpuctl.run(["logs", id]);
      assertEquals([logs.code, logs.stdout], [0, "hi there\nred\n"]);
      const run = (await api(`/api/jobs/${id}`)).run_id;
      const logsJson = await gpuctl.run(["logs", run, "--json", "--tail", "5"]);
      assertEquals(logsJson.json(), await api(`/api/runs/${run}/logs?limit=5`));
    });

    await t.step(
      "job submit sends every flag as the API's field; the queue shows in status",
      async () => {
        const submit = await gpuctl.run([
          "job",
          "submit",
          "-n",
          "all-flags",
          "-g",
          "2",
          "-d",
          "/srv/not/rewritten",
          "--watch",
          "ckpt",
          "--tb-dir",
          "tb",
          "-p",
          "5",
          "--project",
          "flags",
          "--experiment",
          "e1",
          "--node",
          "elsewhere",
          "--image",
          "alpine:3",
          "--max-attempts",
          "2",
          "--max-steps",
          "10",
          "--after",
          okJob,
          "--env",
          "API_KEY=s3cret",
          "--env",
          "A=1",
          "--secret-env",
          "A",
          "--grace",
          "2.5",
          "--stop-on",
          "LOSS_NAN",
          "--json",
          "--",
          "python",
          "train.py",
          "--lr",
          "3e-4",
        ]);
        assertEquals(submit.code, 0, submit.stderr);
        const job = submit.json();
        // The scheduler writes its reason for waiting after the answer: left out.
        const { reason: _got, ...answered } = job;
        const { reason: _now, ...stored } = await api(`/api/jobs/${job.id}`);
        assertEquals(answered, stored);
        assertEquals(
          [
            job.name,
            job.gpus,
            job.working_dir,
            job.checkpoint_dir,
            job.tensorboard_dir,
            job.priority,
          ],
          ["all-flags", 2, "/srv/not/rewritten", "ckpt", "tb", 5],
        );
        assertEquals([job.project, job.experiment, job.node, job.runner, job.image], [
          "flags",
          "e1",
          "elsewhere",
          "docker",
          "alpine:3",
        ]);
        assertEquals([job.max_attempts, job.max_steps, job.after, job.grace_s, job.stop_on], [
          2,
          10,
          [okJob],
          2.5,
          ["LOSS_NAN"],
        ]);
        assertEquals(job.command, ["python", "train.py", "--lr", "3e-4"]);
        assertEquals(job.secret_env, ["A"]);
        assertEquals(job.env.A === "1" || job.env.API_KEY === "s3cret", false); // never shown
        const status = await gpuctl.run(["status"]);
        assertStringIncludes(status.stdout, "QUEUED");
        assertStringIncludes(status.stdout, job.id);
        await gpuctl.run(["job", "cancel", job.id]);
        const bad = await gpuctl.run(["job", "submit", "--env", "lower=1", "--", "true"]);
        assertEquals(bad.code, 2);
        assertStringIncludes(bad.stderr, "--env must be NAME=VALUE");
        const noCommand = await gpuctl.run(["job", "submit", "-g", "1"]);
        assertEquals(noCommand.code, 2);
        assertStringIncludes(noCommand.stderr, "the command is required");
      },
    );

    await t.step(
      "on a terminal: colour unless NO_COLOR, and a progress bar while following",
      async () => {
        const coloured = await gpuctl.runOnTerminal(["job", "list"], { NO_COLOR: "" });
        assertEquals(coloured.code, 0, coloured.stdout);
        assertStringIncludes(coloured.stdout, "\x1b[32mSUCCEEDED\x1b[0m");
        const plain = await gpuctl.runOnTerminal(["job", "list"], { NO_COLOR: "1" });
        assertStringIncludes(plain.stdout, "SUCCEEDED");
        assertEquals(plain.stdout.includes("\x1b["), false);
        const piped = await gpuctl.run(["job", "list"], { NO_COLOR: "" });
        assertEquals(piped.stdout.includes("\x1b["), false);

        const follow = await gpuctl.runOnTerminal([
          "job",
          "submit",
          "-g",
          "0",
          "--max-steps",
          "100",
          "--follow",
          "--",
          "python3",
          "examples/synthetic/train.py",
          "--steps",
          "100",
          "--sleep",
          "0.05",
        ]);
        assertEquals(follow.code, 0, follow.stdout);
        assert(/\[#+\.*\] +\d+% \d+\/100/.test(follow.stdout), follow.stdout);
        assertStringIncludes(follow.stdout, "done");
      },
    );

    await t.step("job cancel ends a running job; job retry queues it again", async () => {
      const submit = await gpuctl.run(["job", "submit", "-g", "1", "--", "sleep", "60"]);
      const id = submit.stdout.trim();
      await until(
        async () => (await api(`/api/jobs/${id}`)).status === "RUNNING",
        20_000,
        "running",
      );
      const cancel = await gpuctl.run(["job", "cancel", id]);
      assertEquals(cancel.code, 0, cancel.stderr);
      assertStringIncludes(cancel.stdout, id);
      await until(
        async () => (await api(`/api/jobs/${id}`)).status === "CANCELLED",
        20_000,
        "cancelled",
      );
      const retry = await gpuctl.run(["job", "retry", id]);
      assertEquals(retry.code, 0, retry.stderr);
      assertStringIncludes(retry.stdout, `${id}: queued as attempt 2`);
      await gpuctl.run(["job", "cancel", id]);
    });

    let runA = "";
    let runB = "";
    await t.step(
      "import-run, run list|show|compare, checkpoint list|recommend|evaluate",
      async () => {
        const copy = await Deno.makeTempDir({ dir: c.home, prefix: "keras-copy-" });
        await new Deno.Command("cp", { args: ["-r", `${KERAS}/.`, copy] }).output();
        const a = await gpuctl.run([
          "import-run",
          KERAS,
          "--project",
          "imp",
          "--experiment",
          "e",
          "--json",
        ]);
        const b = await gpuctl.run([
          "import-run",
          copy,
          "--project",
          "imp",
          "--experiment",
          "e",
          "--json",
        ]);
        assertEquals([a.code, b.code], [0, 0], a.stderr + b.stderr);
        runA = a.json().run_id;
        runB = b.json().run_id;

        const list = await gpuctl.run(["run", "list", "--project", "imp", "--json"]);
        assertEquals(list.json(), await api("/api/runs?project=imp&limit=50"));
        const show = await gpuctl.run(["run", "show", runA]);
        assertEquals(show.code, 0, show.stderr);
        assertStringIncludes(show.stdout, "validation/epoch_loss");
        assertStringIncludes(show.stdout, "TREND");
        const showJson = (await gpuctl.run(["run", "show", runA, "--json"])).json();
        assertEquals(showJson.run, await api(`/api/runs/${runA}`));
        const loss = showJson.metrics.find((m: { key: string }) =>
          m.key === "validation/epoch_loss"
        );
        const summary = (await api(`/api/runs/${runA}/metrics`)).keys.find((
          k: { key: string },
        ) => k.key === "validation/epoch_loss");
        assertEquals([loss.direction, loss.best, loss.latest], [
          "min",
          summary.min_value,
          summary.last_value,
        ]);

        const compare = await gpuctl.run([
          "run",
          "compare",
          runA,
          runB,
          "--metric",
          "validation/epoch_loss",
        ]);
        assertEquals(compare.code, 0, compare.stderr);
        assertStringIncludes(compare.stdout, "RANK");
        // An imported run's duration_s counts on with the clock: left out of the comparison.
        const timeless = (c: { runs: { duration_s?: number }[] }) => ({
          ...c,
          runs: c.runs.map(({ duration_s: _, ...r }) => r),
        });
        const compareJson = await gpuctl.run(["run", "compare", runA, runB, "--json"]);
        assertEquals(
          timeless(compareJson.json()),
          timeless(await api(`/api/runs/compare?runs=${runA},${runB}`)),
        );

        const ckpts = await gpuctl.run(["checkpoint", "list", runA, "--json"]);
        assertEquals(ckpts.json(), await api(`/api/runs/${runA}/checkpoints`));
        const ckptTable = await gpuctl.run(["checkpoint", "list", runA]);
        assertStringIncludes(ckptTable.stdout, "keras_embedding.ckpt-9");
        const rec = await gpuctl.run([
          "checkpoint",
          "recommend",
          "--experiment",
          "imp/e",
          "--json",
        ]);
        assertEquals(rec.json(), await api("/api/checkpoints:recommend?experiment=imp/e"));
        const recText = await gpuctl.run(["checkpoint", "recommend", "--run", runA]);
        assertStringIncludes(recText.stdout, "checkpoint:");

        const ckpt = ckpts.json().items[0].id;
        const evaluate = await gpuctl.run([
          "checkpoint",
          "evaluate",
          ckpt,
          "--suite",
          "heldout",
          "-g",
          "0",
          "-d",
          "/tmp",
          "--json",
          "--",
          "true",
        ]);
        assertEquals(evaluate.code, 0, evaluate.stderr);
        const queued = evaluate.json();
        assertEquals([queued.evaluation.suite, queued.job.kind], ["heldout", "EVALUATE"]);
      },
    );

    await t.step("event list, project, experiment and metric set-primary", async () => {
      // The evaluation queued above is still starting, so events may arrive between two reads:
      // the CLI's answer is compared with the API's when no event came between them.
      await until(
        async () => {
          const before = await api("/api/events?limit=5");
          const events = await gpuctl.run(["event", "list", "--limit", "5", "--json"]);
          const after = await api("/api/events?limit=5");
          if (JSON.stringify(before) !== JSON.stringify(after)) return false;
          assertEquals(events.json(), after);
          return true;
        },
        60_000,
        "the event list read between two events",
      );
      const table = await gpuctl.run(["event", "list", "--type", "RUN_FAILED"]);
      assertStringIncludes(table.stdout, "RUN_FAILED");

      assertEquals(
        (await gpuctl.run(["project", "create", "vision", "--description", "cv"])).code,
        0,
      );
      const exp = await gpuctl.run([
        "experiment",
        "create",
        "sweep",
        "--project",
        "vision",
        "--json",
      ]);
      assertEquals(exp.json().name, "sweep");
      const projects = await gpuctl.run(["project", "list", "--json"]);
      assertEquals(projects.json(), await api("/api/projects"));
      assertStringIncludes((await gpuctl.run(["project", "list"])).stdout, "vision");
      const exps = await gpuctl.run(["experiment", "list", "--project", "vision"]);
      assertStringIncludes(exps.stdout, "vision/sweep");

      const primary = await gpuctl.run([
        "metric",
        "set-primary",
        "validation/epoch_accuracy",
        "--experiment",
        "imp/e",
      ]);
      assertEquals(primary.code, 0, primary.stderr);
      assertStringIncludes(primary.stdout, "validation/epoch_accuracy (higher is better)");
      const run = await api(`/api/runs/${runA}`);
      assertEquals(run.primary_metric.key, "validation/epoch_accuracy");
      const bad = await gpuctl.run(["metric", "set-primary", "x", "--project", "p", "--global"]);
      assertEquals(bad.code, 2);
    });

    await t.step(
      "token create|list|revoke; a read token gets the write-scope message and exit 1",
      async () => {
        const created = await gpuctl.run([
          "token",
          "create",
          "--scope",
          "read",
          "--name",
          "ro",
          "--json",
        ]);
        assertEquals(created.code, 0, created.stderr);
        const { token, id } = created.json();
        const list = await gpuctl.run(["token", "list", "--json"]);
        assertEquals(list.json(), await api("/api/tokens"));

        const read = await gpuctl.run(["status"], { GPUCTL_TOKEN: token });
        assertEquals(read.code, 0, read.stderr);
        const write = await gpuctl.run(["job", "retry", okJob], { GPUCTL_TOKEN: token });
        assertEquals([write.code, write.stdout], [1, ""]);
        assertEquals(write.stderr.trim().split("\n").length, 1, write.stderr);
        assertStringIncludes(write.stderr, 'has scope "read"');
        assertStringIncludes(write.stderr, "gpuctl token create --scope write");
        const submit = await gpuctl.run(["job", "submit", "--", "true"], { GPUCTL_TOKEN: token });
        assertEquals(submit.code, 1);

        const revoke = await gpuctl.run(["token", "revoke", id]);
        assertEquals(revoke.code, 0, revoke.stderr);
        const gone = await gpuctl.run(["status"], { GPUCTL_TOKEN: token });
        assertEquals(gone.code, 1);
      },
    );

    await t.step("backup and backup-agent write their archives", async () => {
      const backup = await gpuctl.run(["backup", "--json"]);
      assertEquals(backup.code, 0, backup.stderr);
      assert((await Deno.stat(backup.json().path)).size > 0);
      const out = `${c.home}/agent.tar.gz`;
      const agent = await gpuctl.run(["backup-agent", "--data-dir", `${c.home}/agent`, "-o", out]);
      assertEquals(agent.code, 0, agent.stderr);
      const listed = await new Deno.Command("tar", { args: ["-tzf", out], stdout: "piped" })
        .output();
      const names = new TextDecoder().decode(listed.stdout).split("\n");
      assert(names.includes("./state.json"), names.join(" "));
      assert(names.some((n) => n.startsWith("./spool/")), names.join(" "));
      assert(names.some((n) => n.startsWith("./runs/")), names.join(" "));
      assert(!names.some((n) => n.startsWith("./ingest")), names.join(" "));
      const missing = await gpuctl.run(["backup-agent", "--data-dir", `${c.home}/nope`]);
      assertEquals(missing.code, 1);
      assertStringIncludes(missing.stderr, "pass --data-dir DIR");
    });

    await t.step("sync with an empty spool, completions, usage errors", async () => {
      const sync = await gpuctl.run(["sync"]);
      assertEquals(sync.code, 0, sync.stderr);
      assertStringIncludes(sync.stdout, "Nothing to sync");
      const bash = await gpuctl.run(["completions", "bash"]);
      assertEquals(bash.code, 0);
      // Completing `gpuctl job su` and `gpuctl job submit --wor` in a real bash.
      const script = `${bash.stdout}
COMP_WORDS=(gpuctl job su); COMP_CWORD=2; _gpuctl; echo "\${COMPREPLY[*]}"
COMP_WORDS=(gpuctl job submit --wor); COMP_CWORD=3; _gpuctl; echo "\${COMPREPLY[*]}"`;
      const ran = await new Deno.Command("bash", { args: ["-c", script], stdout: "piped" })
        .output();
      assertEquals(new TextDecoder().decode(ran.stdout), "submit\n--working-dir\n");
      for (const shell of ["zsh", "fish"]) {
        const script = await gpuctl.run(["completions", shell]);
        assertEquals(script.code, 0);
        const file = `${c.home}/completion.${shell}`;
        await Deno.writeTextFile(file, script.stdout);
        // Where the shell is installed, it parses the script (`-n`: read, do not run).
        // (Deno throws NotFound at spawn, before any promise exists.) CI installs both.
        let parsed: Deno.CommandOutput | null = null;
        try {
          parsed = await new Deno.Command(shell, { args: ["-n", file], stderr: "piped" }).output();
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
        }
        if (parsed) assertEquals(parsed.code, 0, new TextDecoder().decode(parsed.stderr));
      }
      const usage = await gpuctl.run(["job", "submit", "-g", "lots", "--", "true"]);
      assertEquals(usage.code, 2);
      assertStringIncludes(usage.stderr, "--gpus must be a whole number");
      assertEquals((await gpuctl.run(["job", "frobnicate"])).code, 2);
      const notFound = await gpuctl.run(["logs", "j-nope"]);
      assertEquals(notFound.code, 1);
      assertStringIncludes(notFound.stderr, 'No job or run "j-nope"');
    });
  } finally {
    await gpuctl.remove();
    await c.stop();
  }
});

/** Every command and subcommand, by the name a user types. */
function everyCommand(): string[][] {
  return COMMANDS.flatMap((c) =>
    c.subcommands ? [[c.name], ...c.subcommands.map((s) => [c.name, s.name])] : [[c.name]]
  );
}

Deno.test("every gpuctl command answers --help with its usage and an example, exit 0", async () => {
  const { runInProcess } = await import("../cli/_test_server.ts");
  for (const argv of everyCommand()) {
    const res = await runInProcess([...argv, "--help"], {});
    assertEquals(res.code, 0, argv.join(" "));
    assertStringIncludes(res.stdout, `usage: gpuctl ${argv.join(" ")}`);
    assert(/\n {2}\$ gpuctl /.test(res.stdout), `no example in: gpuctl ${argv.join(" ")} --help`);
  }
});

Deno.test("the README installs gpuctl with exactly the permissions deno.json's cli task has", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const line = `deno ${
    installArgs("").filter((a) => a !== "-f" && a !== "--root" && a !== "").join(" ")
  }`;
  assert(readme.includes(line), `README.md lacks the install line: ${line}`);
  const tasks = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url))).tasks;
  const { CLI_PERMISSIONS } = await import("../cli/main.ts");
  assertEquals(tasks.cli, `deno run ${CLI_PERMISSIONS.join(" ")} cli/main.ts`);
  assertStringIncludes(tasks.compile, `deno compile ${CLI_PERMISSIONS.join(" ")} `);
});
