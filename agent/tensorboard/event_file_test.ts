import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { fixturePath, KERAS_TRAIN } from "./_fixtures.ts";
import {
  eventFileTimestamp,
  eventFileWriterPid,
  listEventFiles,
  readEventRange,
} from "./event_file.ts";

Deno.test("eventFileTimestamp() reads the Unix seconds writers put after the prefix", () => {
  strictEqual(
    eventFileTimestamp("events.out.tfevents.1690483602.e-bnbobg-5l77j-0.61366.2.v2"),
    1690483602,
  );
  strictEqual(
    eventFileTimestamp("events.out.tfevents.1662121387.DESKTOP-BD07O37.13672.0"),
    1662121387,
  );
  strictEqual(eventFileTimestamp("events.out.tfevents.host"), 0);
});

Deno.test("listEventFiles() finds event files recursively, oldest first, with their folder", async () => {
  const files = await listEventFiles(fixturePath());
  deepStrictEqual(files.map((f) => [f.relPath, f.dir]), [
    ["torch-logs/events.out.tfevents.1662121387.DESKTOP-BD07O37.13672.0", "torch-logs"],
    ["torch-logs/events.out.tfevents.1662121954.DESKTOP-BD07O37.5556.0", "torch-logs"],
    [
      "keras-exp0/train/events.out.tfevents.1690483602.e-bnbobg-5l77j-0.61366.2.v2",
      "keras-exp0/train",
    ],
    [
      "keras-exp0/validation/events.out.tfevents.1690483610.e-bnbobg-5l77j-0.61366.3.v2",
      "keras-exp0/validation",
    ],
  ]);
  deepStrictEqual(await listEventFiles(fixturePath("no-such-dir")), []);
});

Deno.test("listEventFiles() breaks timestamp ties by path and does not follow folder symlinks", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/b`);
    for (
      const path of [
        "b/events.out.tfevents.5.h",
        "events.out.tfevents.5.h",
        "events.out.tfevents.4.z",
      ]
    ) {
      await Deno.writeFile(`${dir}/${path}`, new Uint8Array());
    }
    await Deno.symlink(dir, `${dir}/loop`);
    const files = await listEventFiles(`${dir}/`);
    deepStrictEqual(files.map((f) => f.relPath), [
      "events.out.tfevents.4.z",
      "b/events.out.tfevents.5.h",
      "events.out.tfevents.5.h",
    ]);
    strictEqual(files[1].path, `${dir}/b/events.out.tfevents.5.h`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readEventRange() reads records larger than its chunk and stops at the given end", async () => {
  const path = fixturePath(KERAS_TRAIN);
  const size = (await Deno.stat(path)).size;
  using file = await Deno.open(path);
  const whole = await readEventRange(file, 0, size, new Set(), 1 << 20);
  const chunked = await readEventRange(file, 0, size, new Set(), 512);
  deepStrictEqual(chunked, whole);
  deepStrictEqual(await readEventRange(file, 0, size, new Set(), 1), whole);
  strictEqual(whole.nextOffset, size);
  strictEqual(whole.points.length, 20);
  const scalarTags = new Set<string>();
  const half = await readEventRange(file, 0, Math.floor(size / 2), scalarTags, 512);
  const rest = await readEventRange(file, half.nextOffset, size, scalarTags, 512);
  deepStrictEqual([...half.points, ...rest.points], whole.points);
});

Deno.test("eventFileWriterPid() reads the writer's pid from PyTorch, TF2 and dotted-host names", () => {
  const names: [string, number | null][] = [
    ["events.out.tfevents.1796180029.vm.20685.0", 20685],
    ["events.out.tfevents.1796180211.vm.27001.0.v2", 27001],
    ["events.out.tfevents.1796180237.gpu-3.example.com.26987.1", 26987],
    ["events.out.tfevents.1662121387.DESKTOP-BD07O37.13672.0", 13672],
    ["events.out.tfevents.1", null],
    ["events.out.tfevents.1.host", null],
  ];
  for (const [name, pid] of names) strictEqual(eventFileWriterPid(name), pid, name);
});
