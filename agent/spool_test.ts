import { assert, assertEquals } from "../tests/assert.ts";
import type { NewDataFrame } from "./frames.ts";
import { Spool } from "./spool.ts";

function event(message: string): NewDataFrame {
  return { type: "event", stream: "data", event: { type: "TEST", severity: "info", message } };
}

function sysPoint(step: number): NewDataFrame {
  return {
    type: "metrics",
    stream: "sys",
    job_id: "j-1",
    attempt: 1,
    run_id: "r-1",
    points: [{ key: "sys/cpu_pct", step, value: 12.5 }],
  };
}

async function messages(spool: Spool, after = 0): Promise<string[]> {
  const { frames } = await spool.readAfter("data", after);
  return frames.map((f) => f.type === "event" ? `${f.seq}:${f.event.message}` : `${f.seq}:?`);
}

Deno.test("Spool numbers frames per stream from 1 and replays everything after an ack", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir);
  const seen: number[] = [];
  spool.onAppend((frame) => seen.push(frame.seq));
  for (const m of ["a", "b", "c", "d"]) await spool.append(event(m));
  assertEquals((await spool.append(sysPoint(0)))?.seq, 1);
  assertEquals(seen, [1, 2, 3, 4, 1]);
  await spool.ack("data", 2);
  assertEquals(await messages(spool, 2), ["3:c", "4:d"]);
  assertEquals(spool.newest("data"), 4);
  await spool.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Spool.ack deletes the segments it covers and keeps every un-acked frame", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir, { segmentBytes: 300 });
  for (let i = 1; i <= 30; i++) await spool.append(event(`m${i}`));
  const before = spool.stats().streams.data.segments;
  assert(before > 3, `expected several segments, got ${before}`);
  await spool.ack("data", 20);
  const after = spool.stats().streams.data.segments;
  assert(after < before, `ack 20 should delete segments (${before} → ${after})`);
  const { frames } = await spool.readAfter("data", 20);
  assertEquals(frames.map((f) => f.seq), Array.from({ length: 10 }, (_, i) => 21 + i));
  // Everything acked: once the newest segment is big enough it is replaced by an empty one.
  await spool.ack("data", 30);
  assertEquals((await spool.readAfter("data", 30)).frames, []);
  assert(spool.stats().streams.data.bytes <= 300);
  await spool.close();
  // The numbering survives even with nothing left to replay.
  const reopened = await Spool.open(dir, { segmentBytes: 300 });
  assertEquals((await reopened.append(event("next")))?.seq, 31);
  await reopened.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Spool recovers its numbering and pending frames after a restart", async () => {
  const dir = await Deno.makeTempDir();
  const first = await Spool.open(dir);
  for (const m of ["a", "b", "c"]) await first.append(event(m));
  await first.append(sysPoint(0));
  await first.close();
  const second = await Spool.open(dir);
  assertEquals(second.newest("data"), 3);
  assertEquals(second.newest("sys"), 1);
  assertEquals(await messages(second), ["1:a", "2:b", "3:c"]);
  assertEquals((await second.append(event("d")))?.seq, 4);
  await second.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Spool drops a torn last line left by a crash and keeps going", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir);
  for (const m of ["a", "b"]) await spool.append(event(m));
  await spool.close();
  const [segment] = [...Deno.readDirSync(`${dir}/data`)];
  await Deno.writeTextFile(`${dir}/data/${segment.name}`, '{"type":"event","stream":"da', {
    append: true,
  });
  const reopened = await Spool.open(dir);
  assertEquals(await messages(reopened), ["1:a", "2:b"]);
  assertEquals((await reopened.append(event("c")))?.seq, 3);
  assertEquals(await messages(reopened), ["1:a", "2:b", "3:c"]);
  await reopened.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Spool.rebase renumbers held frames after a server cursor above them", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir);
  for (const m of ["a", "b"]) await spool.append(event(m));
  await spool.rebase("data", 500);
  assertEquals(await messages(spool, 500), ["501:a", "502:b"]);
  assertEquals((await spool.append(event("c")))?.seq, 503);
  await spool.rebase("data", 10); // below the newest: nothing changes
  assertEquals(spool.newest("data"), 503);
  await spool.close();
  const reopened = await Spool.open(dir);
  assertEquals(await messages(reopened, 500), ["501:a", "502:b", "503:c"]);
  assertEquals(reopened.newest("data"), 503);
  await reopened.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Spool at its cap drops the oldest sys frames first and keeps job data", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir, { maxBytes: 8000, segmentBytes: 1000 });
  let droppedNow = 0;
  for (let i = 0; i < 200; i++) {
    if ((await spool.append(sysPoint(i))) === null) droppedNow++;
    if (i % 4 === 0) await spool.append(event(`keep ${i}`));
  }
  const stats = spool.stats();
  assert(stats.droppedSys > 0, "sys frames should have been dropped");
  assertEquals(droppedNow, 0, "while older sys frames exist, they go first");
  assert(stats.bytes <= 8000, `spool holds ${stats.bytes} bytes, cap 8000`);
  // Every data frame is still there.
  assertEquals((await spool.readAfter("data", 0)).frames.length, 50);
  // The sys frames kept are the newest ones, in order.
  const sys = (await spool.readAfter("sys", 0)).frames.map((f) => f.seq);
  assertEquals(sys.at(-1), 200);
  assertEquals(sys, Array.from({ length: sys.length }, (_, i) => 201 - sys.length + i));
  // With data alone over the cap, new sys frames are refused and data still kept.
  for (let i = 0; i < 200; i++) await spool.append(event(`data ${i} ${"x".repeat(40)}`));
  assertEquals(await spool.append(sysPoint(999)), null);
  assertEquals((await spool.readAfter("data", 0)).frames.length, 250);
  await spool.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Spool.readAfter limits its batch and says where it stopped", async () => {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir, { segmentBytes: 200 });
  for (let i = 1; i <= 10; i++) await spool.append(event(`m${i}`));
  const first = await spool.readAfter("data", 0, 4);
  assertEquals(first.frames.map((f) => f.seq), [1, 2, 3, 4]);
  assertEquals(first.upTo, 4);
  const rest = await spool.readAfter("data", first.upTo);
  assertEquals(rest.frames.map((f) => f.seq), [5, 6, 7, 8, 9, 10]);
  assertEquals(rest.upTo, 10);
  await spool.close();
  await Deno.remove(dir, { recursive: true });
});
