/**
 * The behaviour every `Runner` must show, as Deno tests: `process_runner_test.ts` and
 * `docker_runner_test.ts` register it for their runner. Jobs are small bash and python3
 * scripts in temp dirs; every test kills what it started, even when it fails.
 */
import assert from "node:assert/strict";
import { readStat } from "./_proc.ts";
import { MAX_LINE_BYTES } from "./line_splitter.ts";
import { RUN_FILES } from "./run_dir.ts";
import type { OutputLine, RunHandle, Runner, RunSpec } from "./types.ts";
import type { JobRunner } from "../../protocol/vocabulary.ts";

/** The runner under test. */
export interface ConformanceTarget {
  kind: JobRunner;
  /** A new runner instance (a new one stands for a restarted agent). */
  makeRunner(): Runner;
  /** `RunSpec.image` for this runner. */
  image: string | null;
  /**
   * The host's pids of processes a job named by its own pids (`echo $$`): a container has
   * a pid namespace of its own. Pids it cannot map are left out, never guessed.
   * @default the same pids
   */
  hostPids?(jobPids: number[]): number[] | Promise<number[]>;
  /**
   * Checks that nothing of the runs is left on the host once they ended (a container in
   * `docker ps -a`): called after each test that let its runs end, with their ids.
   */
  assertNothingLeft?(runIds: string[]): Promise<void>;
  /** Removes whatever a test left behind (containers), whether it passed or not. */
  cleanup?(runIds: string[]): Promise<void>;
}

const WAIT_MS = 10_000;

async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function isAlive(pid: number): boolean {
  return readStat(pid) !== null;
}

async function readPids(path: string): Promise<number[]> {
  try {
    return (await Deno.readTextFile(path)).split("\n").filter((s) => s !== "").map(Number);
  } catch {
    return [];
  }
}

function killAll(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** A temp dir with a job spec in it; `done()` kills every process the test left. */
class Fixture {
  readonly dir: string;
  readonly lines: OutputLine[] = [];
  readonly handles: RunHandle[] = [];
  readonly runIds: string[] = [];
  #n = 0;

  constructor(readonly target: ConformanceTarget) {
    this.dir = Deno.makeTempDirSync({ prefix: "gpuctl_runner_" });
  }

  spec(command: string[] | string, extra: Partial<RunSpec> = {}): RunSpec {
    const runId = `r${crypto.randomUUID().slice(0, 8)}${this.#n++}`;
    this.runIds.push(runId);
    return {
      run_id: runId,
      job_id: "j-test",
      attempt: 1,
      command,
      shell: typeof command === "string",
      working_dir: this.dir,
      env: {},
      gpu_indices: [],
      runner: this.target.kind,
      image: this.target.image,
      run_dir: `${this.dir}/runs/${runId}`,
      grace_s: 1,
      ...extra,
    };
  }

  hooks(into: OutputLine[] = this.lines) {
    return { onLine: (line: OutputLine) => void into.push(line) };
  }

  async start(spec: RunSpec, runner = this.target.makeRunner()): Promise<RunHandle> {
    const handle = await runner.start(spec, this.hooks());
    this.handles.push(handle);
    return handle;
  }

  write(name: string, text: string): string {
    Deno.writeTextFileSync(`${this.dir}/${name}`, text);
    return `${this.dir}/${name}`;
  }

  texts(stream?: "stdout" | "stderr", lines = this.lines): string[] {
    return lines.filter((l) => !stream || l.stream === stream).map((l) => l.text);
  }

  /** The pids the job wrote to `path`, as the host sees them. */
  async jobPids(path: string): Promise<number[]> {
    const pids = await readPids(path);
    return this.target.hostPids ? await this.target.hostPids(pids) : pids;
  }

  async done(): Promise<void> {
    const pids = new Set<number>(await this.jobPids(`${this.dir}/pids.txt`));
    for (const handle of this.handles) {
      for (const pid of handle.pids()) pids.add(pid);
      handle.detach();
    }
    killAll(pids);
    await this.target.cleanup?.(this.runIds);
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

async function readOutputLog(runDir: string): Promise<OutputLine[]> {
  const text = await Deno.readTextFile(`${runDir}/${RUN_FILES.outputLog}`);
  return text.split("\n").filter((s) => s !== "").map((s) => JSON.parse(s));
}

function assertSeqsFromOne(lines: OutputLine[]): void {
  assert.deepEqual(lines.map((l) => l.seq), lines.map((_, i) => i + 1));
}

/** Registers the conformance tests for `target`. */
export function runnerConformance(target: ConformanceTarget): void {
  const test = (name: string, fn: (f: Fixture) => Promise<void>) =>
    Deno.test(`${target.kind} runner: ${name}`, async () => {
      const fixture = new Fixture(target);
      try {
        await fn(fixture);
        await target.assertNothingLeft?.(fixture.runIds);
      } finally {
        await fixture.done();
      }
    });

  test("captures stdout and stderr in order, numbered from 1, into output.log", async (f) => {
    const spec = f.spec(["bash", "-c", "for i in 1 2 3; do echo out$i; echo err$i >&2; done"]);
    const exit = await (await f.start(spec)).exited;
    assert.equal(exit.failure_class, null);
    assert.equal(exit.exit_code, 0);
    assert.deepEqual(f.texts("stdout"), ["out1", "out2", "out3"]);
    assert.deepEqual(f.texts("stderr"), ["err1", "err2", "err3"]);
    assertSeqsFromOne(f.lines);
    for (const line of f.lines) assert.equal(new Date(line.ts).toISOString(), line.ts);
    assert.deepEqual(await readOutputLog(spec.run_dir), f.lines);
  });

  test("runs a shell string with bash -lc", async (f) => {
    const exit = await (await f.start(f.spec("x=6; echo $((x * 7)) && echo 'a  b'"))).exited;
    assert.equal(exit.failure_class, null);
    assert.deepEqual(f.texts("stdout"), ["42", "a  b"]);
  });

  test("passes the job's argv exactly, with no shell in between", async (f) => {
    const args = ["a  b", "it's", '"q"', "$(echo not run)", "`x`", "*", "", "ü\\n"];
    const spec = f.spec([
      "python3",
      "-c",
      "import json, sys; print(json.dumps(sys.argv[1:]))",
      ...args,
    ]);
    const exit = await (await f.start(spec)).exited;
    assert.equal(exit.failure_class, null, exit.reason);
    assert.deepEqual(JSON.parse(f.texts("stdout")[0]), args);
  });

  test("runs in its working dir and writes its run's folder, also one outside it", async (f) => {
    const runDir = await Deno.makeTempDir({ prefix: "gpuctl_run_files_" });
    try {
      const spec = f.spec(["bash", "-c", 'pwd; echo saved > "$GPUCTL_RUN_DIR/ckpt-1.pt"'], {
        env: { GPUCTL_RUN_DIR: runDir },
      });
      const exit = await (await f.start(spec)).exited;
      assert.equal(exit.failure_class, null, exit.reason);
      assert.deepEqual(f.texts(), [f.dir]);
      assert.equal(await Deno.readTextFile(`${runDir}/ckpt-1.pt`), "saved\n");
    } finally {
      await Deno.remove(runDir, { recursive: true });
    }
  });

  test("passes the job's environment exactly", async (f) => {
    const tricky = `it's "quoted" $(echo not run) \`x\``;
    const spec = f.spec([
      "bash",
      "-c",
      'echo "cvd=$CUDA_VISIBLE_DEVICES"; echo "v=$GPUCTL_TEST_VAR"',
    ], {
      env: { CUDA_VISIBLE_DEVICES: "0", GPUCTL_TEST_VAR: tricky },
      gpu_indices: [0],
    });
    await (await f.start(spec)).exited;
    assert.deepEqual(f.texts(), ["cvd=0", `v=${tricky}`]);
  });

  test("exit 0 is a success, exit 1 an EXIT_CODE failure", async (f) => {
    const ok = await (await f.start(f.spec(["bash", "-c", "exit 0"]))).exited;
    assert.deepEqual([ok.failure_class, ok.exit_code, ok.signal], [null, 0, null]);
    const bad = await (await f.start(f.spec(["bash", "-c", "echo failing; exit 1"]))).exited;
    assert.deepEqual([bad.failure_class, bad.exit_code, bad.reason], [
      "EXIT_CODE",
      1,
      "exited with code 1",
    ]);
    assert.deepEqual(bad.log_tail, ["failing"]);
  });

  test("a CUDA out-of-memory line then exit 1 is OOM", async (f) => {
    const spec = f.spec([
      "python3",
      "-c",
      "import sys; print('step 1'); print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr); sys.exit(1)",
    ]);
    const exit = await (await f.start(spec)).exited;
    assert.equal(exit.failure_class, "OOM");
    assert.equal(exit.exit_code, 1);
  });

  test("a missing working dir fails at once with DISPATCH_FAILED", async (f) => {
    const missing = `${f.dir}/does/not/exist`;
    const exit = await (await f.start(f.spec(["true"], { working_dir: missing }))).exited;
    assert.equal(exit.failure_class, "DISPATCH_FAILED");
    assert.ok(exit.reason.includes(missing), exit.reason);
  });

  test("a missing program fails with DISPATCH_FAILED", async (f) => {
    const exit = await (await f.start(f.spec(["no-such-program-gpuctl", "--x"]))).exited;
    assert.equal(exit.failure_class, "DISPATCH_FAILED");
    assert.ok(exit.reason.includes("no-such-program-gpuctl"), exit.reason);
  });

  test("cuts a very long line and keeps the next one", async (f) => {
    const spec = f.spec(["python3", "-c", "print('x' * 100000); print('short')"]);
    await (await f.start(spec)).exited;
    const [long, short] = f.texts();
    assert.equal(long, `${"x".repeat(MAX_LINE_BYTES)}… [cut ${100000 - MAX_LINE_BYTES} bytes]`);
    assert.equal(short, "short");
  });

  test("survives binary junk, \\r progress updates and a last line with no newline", async (f) => {
    const spec = f.spec([
      "python3",
      "-c",
      "import sys; o = sys.stdout.buffer; o.write(bytes(range(256)) * 4 + b'\\xff\\xfe\\xc3\\x28\\n'); " +
      "o.write(b'epoch 1\\r\\n10%\\r20%\\r30%\\ndone\\nlast'); o.flush()",
    ]);
    const exit = await (await f.start(spec)).exited;
    assert.equal(exit.failure_class, null);
    const texts = f.texts();
    assert.deepEqual(texts.slice(-6), ["epoch 1", "10%", "20%", "30%", "done", "last"]);
    assert.ok(texts.some((t) => t.includes("\uFFFD")), "invalid UTF-8 became U+FFFD");
    assertSeqsFromOne(f.lines);
    assert.deepEqual(await readOutputLog(spec.run_dir), f.lines);
  });

  /** Starts a tree: main → child → grandchild ignoring SIGTERM, and main → setsid child. */
  async function startTree(f: Fixture): Promise<{ handle: RunHandle; tree: number[] }> {
    f.write("grandchild.sh", "trap '' TERM\necho $$ >> \"$1\"\nexec sleep 300\n");
    f.write("child.sh", 'echo $$ >> "$1"\nbash ./grandchild.sh "$1" &\nwait\n');
    f.write("stray.sh", 'echo $$ >> "$1"\nexec sleep 300\n');
    f.write(
      "main.sh",
      'echo $$ >> "$1"\nbash ./child.sh "$1" &\nsetsid bash ./stray.sh "$1" &\necho ready\nwait\n',
    );
    const pidsFile = `${f.dir}/pids.txt`;
    const handle = await f.start(f.spec(["bash", "main.sh", pidsFile], { grace_s: 0.5 }));
    await waitFor("four processes", async () => (await f.jobPids(pidsFile)).length === 4);
    return { handle, tree: await f.jobPids(pidsFile) };
  }

  async function assertCancelEndsTree(handle: RunHandle, tree: number[]): Promise<void> {
    await waitFor("the handle to know them", () => tree.every((p) => handle.pids().includes(p)));
    await handle.cancel(0.5);
    for (const pid of tree) assert.equal(isAlive(pid), false, `pid ${pid} survived the cancel`);
    assert.deepEqual(handle.pids(), []);
    const exit = await handle.exited;
    assert.equal(exit.failure_class, "CANCELLED");
  }

  test("cancel ends the whole tree, also a TERM-ignoring grandchild and a setsid child", async (f) => {
    const { handle, tree } = await startTree(f);
    await assertCancelEndsTree(handle, tree);
  });

  test("cancel works on a reattached handle", async (f) => {
    const { handle: first, tree } = await startTree(f);
    first.detach();
    const handle = await f.target.makeRunner().reattach(first.state(), f.hooks(), f.lines.length);
    f.handles.push(handle);
    await assertCancelEndsTree(handle, tree);
  });

  test("reattach after an agent restart delivers every line exactly once", async (f) => {
    const script = f.write(
      "count.py",
      "import sys, time\nfor i in range(40):\n    print(f'out {i}', flush=True)\n" +
        "    if i % 10 == 0: print(f'err {i}', file=sys.stderr, flush=True)\n" +
        "    time.sleep(0.02)\nsys.exit(3)\n",
    );
    const spec = f.spec(["python3", script]);
    const first = await f.start(spec);
    await waitFor("some output", () => f.lines.length >= 5);
    first.detach();
    const state = first.state();
    await new Promise((resolve) => setTimeout(resolve, 200)); // the job prints on
    const second: OutputLine[] = [];
    const delivered = f.lines.at(-1)!.seq;
    const handle = await f.target.makeRunner().reattach(state, f.hooks(second), delivered);
    f.handles.push(handle);
    const exit = await handle.exited;
    assert.deepEqual([exit.exit_code, exit.failure_class], [3, "EXIT_CODE"]);
    const all = [...f.lines, ...second];
    assertSeqsFromOne(all);
    const expected = Array.from({ length: 40 }, (_, i) => `out ${i}`);
    assert.deepEqual(f.texts("stdout", all), expected);
    assert.deepEqual(f.texts("stderr", all), ["err 0", "err 10", "err 20", "err 30"]);
    assert.deepEqual(await readOutputLog(spec.run_dir), all);
  });

  test("reattach delivers again the lines the agent had not stored", async (f) => {
    const spec = f.spec(["bash", "-c", "for i in 1 2 3 4 5; do echo $i; done; sleep 0.3"]);
    const first = await f.start(spec);
    await waitFor("five lines", () => f.lines.length === 5);
    first.detach();
    const kept = f.lines.slice(0, 2); // the agent died before storing lines 3-5
    const again: OutputLine[] = [];
    const handle = await f.target.makeRunner().reattach(first.state(), f.hooks(again), 2);
    f.handles.push(handle);
    await handle.exited;
    assert.deepEqual(f.texts(undefined, [...kept, ...again]), ["1", "2", "3", "4", "5"]);
    assertSeqsFromOne([...kept, ...again]);
  });

  test("reattach to a job that ended while the agent was away reads its exit status", async (f) => {
    const spec = f.spec(["bash", "-c", "sleep 0.2; echo bye; exit 5"]);
    const first = await f.start(spec);
    first.detach();
    const status = `${spec.run_dir}/${RUN_FILES.exitStatus}`;
    await waitFor("the exit status file", () => Deno.stat(status).then(() => true, () => false));
    await waitFor("the wrapper to end", () => first.pids().length === 0);
    const handle = await f.target.makeRunner().reattach(first.state(), f.hooks(), 0);
    const exit = await handle.exited;
    assert.deepEqual([exit.exit_code, exit.failure_class], [5, "EXIT_CODE"]);
    assert.deepEqual(f.texts(), ["bye"]);
  });

  test("reattach when the process is gone without an exit status is AGENT_RESTART", async (f) => {
    const spec = f.spec(["bash", "-c", "echo started; exec sleep 300"]);
    const first = await f.start(spec);
    await waitFor("output", () => f.lines.length === 1);
    await waitFor("the sleep", () => first.pids().length >= 2);
    first.detach();
    const pids = first.pids();
    killAll(pids); // the wrapper dies too, so no exit status is written
    await waitFor("every process to end", () => pids.every((p) => !isAlive(p)));
    const again: OutputLine[] = [];
    const handle = await f.target.makeRunner().reattach(first.state(), f.hooks(again), 1);
    const exit = await handle.exited;
    assert.equal(exit.failure_class, "AGENT_RESTART");
    assert.deepEqual(again, []);
  });
}
