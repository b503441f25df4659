import assert from "node:assert/strict";
import { OutputTail } from "./output_tail.ts";
import { runFile } from "./run_dir.ts";
import type { OutputLine } from "./types.ts";

const now = () => new Date("2026-01-02T03:04:05.000Z");

async function withRunDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_tail_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const collect = (into: OutputLine[]) => ({ onLine: (l: OutputLine) => void into.push(l) });

Deno.test("OutputTail numbers lines across streams and writes output.log", async () => {
  await withRunDir(async (dir) => {
    const lines: OutputLine[] = [];
    const tail = await OutputTail.create({ runDir: dir, hooks: collect(lines), now });
    await Deno.writeTextFile(runFile(dir, "stdout"), "a\nb\npartial");
    await Deno.writeTextFile(runFile(dir, "stderr"), "e\n");
    assert.equal(await tail.poll(false), 3);
    assert.equal(await tail.poll(true), 1);
    assert.deepEqual(lines.map((l) => [l.seq, l.stream, l.text]), [
      [1, "stdout", "a"],
      [2, "stdout", "b"],
      [3, "stderr", "e"],
      [4, "stdout", "partial"],
    ]);
    const log = (await Deno.readTextFile(runFile(dir, "outputLog"))).trim().split("\n");
    assert.deepEqual(log.map((l) => JSON.parse(l)), lines);
    assert.deepEqual(tail.recentLines(), ["a", "b", "e", "partial"]);
  });
});

Deno.test("OutputTail.resume() after a crash between output.log and tail.json rereads the bytes", async () => {
  await withRunDir(async (dir) => {
    const first: OutputLine[] = [];
    const tail = await OutputTail.create({ runDir: dir, hooks: collect(first), now });
    await Deno.writeTextFile(runFile(dir, "stdout"), "one\n");
    await tail.poll(false);
    const saved = await Deno.readTextFile(runFile(dir, "tail"));
    await Deno.writeTextFile(runFile(dir, "stdout"), "two\nthree\n", { append: true });
    await tail.poll(false);
    // The agent died after appending to output.log but before tail.json was replaced.
    await Deno.writeTextFile(runFile(dir, "tail"), saved);

    const second: OutputLine[] = [];
    const resumed = await OutputTail.resume({ runDir: dir, hooks: collect(second), now }, 1);
    assert.equal(second.length, 0);
    await resumed.poll(true);
    assert.deepEqual(second.map((l) => [l.seq, l.text]), [[2, "two"], [3, "three"]]);
    const log = (await Deno.readTextFile(runFile(dir, "outputLog"))).trim().split("\n");
    assert.deepEqual(log.map((l) => JSON.parse(l).seq), [1, 2, 3]);
  });
});

Deno.test("OutputTail.resume() delivers from output.log what the agent had not stored", async () => {
  await withRunDir(async (dir) => {
    const tail = await OutputTail.create({ runDir: dir, hooks: collect([]), now });
    await Deno.writeTextFile(runFile(dir, "stdout"), "1\n2\n3\n");
    await tail.poll(false);
    const again: OutputLine[] = [];
    const resumed = await OutputTail.resume({ runDir: dir, hooks: collect(again), now }, 1);
    assert.deepEqual(again.map((l) => [l.seq, l.text]), [[2, "2"], [3, "3"]]);
    assert.deepEqual(resumed.recentLines(), ["1", "2", "3"]);
    assert.equal(await resumed.poll(true), 0);
  });
});

Deno.test("OutputTail.mute() stops delivery but keeps recording for a reattach", async () => {
  await withRunDir(async (dir) => {
    const lines: OutputLine[] = [];
    const tail = await OutputTail.create({ runDir: dir, hooks: collect(lines), now });
    await Deno.writeTextFile(runFile(dir, "stdout"), "late\n");
    tail.mute();
    assert.equal(await tail.poll(false), 1);
    assert.equal(lines.length, 0);
    const again: OutputLine[] = [];
    await OutputTail.resume({ runDir: dir, hooks: collect(again), now }, 0);
    assert.deepEqual(again.map((l) => l.text), ["late"]);
  });
});

Deno.test("OutputTail puts the stream written first first when both grew in one read", async () => {
  await withRunDir(async (dir) => {
    const lines: OutputLine[] = [];
    const tail = await OutputTail.create({ runDir: dir, hooks: collect(lines), now });
    await Deno.writeTextFile(
      runFile(dir, "stderr"),
      "Traceback (most recent call last):\nValueError: x\n",
    );
    await Deno.writeTextFile(runFile(dir, "stdout"), "step 10 loss 2.3\n");
    // The file times say stderr was written a second before stdout.
    Deno.utimeSync(runFile(dir, "stderr"), 1_700_000_000, 1_700_000_000);
    Deno.utimeSync(runFile(dir, "stdout"), 1_700_000_001, 1_700_000_001);
    assert.equal(await tail.poll(true), 3);
    assert.deepEqual(lines.map((l) => [l.seq, l.stream, l.text]), [
      [1, "stderr", "Traceback (most recent call last):"],
      [2, "stderr", "ValueError: x"],
      [3, "stdout", "step 10 loss 2.3"],
    ]);
  });
});

Deno.test("OutputTail on a local disk reads on from its open files, also after close()", async () => {
  await withRunDir(async (dir) => {
    const lines: OutputLine[] = [];
    const tail = await OutputTail.create({
      runDir: dir,
      hooks: collect(lines),
      now,
      localDevice: () => true,
    });
    const out = runFile(dir, "stdout");
    const write = (text: string) => Deno.writeTextFile(out, text, { append: true });
    assert.equal(await tail.poll(false), 0);
    await write("a\nb");
    assert.equal(await tail.poll(false), 1);
    await write("c\n");
    assert.equal(await tail.poll(false), 1);
    tail.close();
    await write("d\ne");
    assert.equal(await tail.poll(false), 1);
    assert.equal(await tail.poll(true), 1);
    tail.close();
    assert.deepEqual(lines.map((l) => [l.seq, l.text]), [[1, "a"], [2, "bc"], [3, "d"], [4, "e"]]);
  });
});

Deno.test("OutputTail reads files off a local disk by path each poll", async () => {
  await withRunDir(async (dir) => {
    const lines: OutputLine[] = [];
    const devices: number[] = [];
    const tail = await OutputTail.create({
      runDir: dir,
      hooks: collect(lines),
      now,
      localDevice: (dev) => {
        devices.push(dev);
        return false;
      },
    });
    await Deno.writeTextFile(runFile(dir, "stdout"), "a\n");
    assert.equal(await tail.poll(false), 1);
    // The raw file is replaced (not something a job does, but a path lookup sees it).
    await Deno.writeTextFile(`${dir}/new`, "a\nb\n");
    await Deno.rename(`${dir}/new`, runFile(dir, "stdout"));
    assert.equal(await tail.poll(false), 1);
    assert.deepEqual(lines.map((l) => l.text), ["a", "b"]);
    // Asked once for each stream, not at every poll.
    assert.equal(devices.length, 2);
  });
});
