import { join } from "node:path";
import { assert, assertEquals } from "../../tests/assert.ts";
import {
  checkBytes,
  checkFile,
  checkFolder,
  memorySource,
  readTopLevelInts,
} from "./check_complete.ts";
import { tempDir } from "./_test_files.ts";

const TESTDATA = new URL("./testdata/", import.meta.url).pathname;
const fixture = (name: string) => Deno.readFile(join(TESTDATA, name));

// name | format | step and epoch from its contents
const COMPLETE: [string, string, number | null, number | null][] = [
  ["torch_dict.pt", "torch-zip", 150, 3],
  ["torch_state_dict.pt", "torch-zip", null, null],
  ["lightning_last.ckpt", "torch-zip", 21, 2],
  ["epoch=2-step=21.ckpt", "torch-zip", 21, 2],
  ["model.safetensors", "safetensors", null, null],
  ["model-03.keras", "keras", null, null],
  ["model.weights.h5", "hdf5", null, null],
  ["model.h5", "hdf5", null, null],
];

for (const [name, format, step, epoch] of COMPLETE) {
  Deno.test(`checkBytes() finds the framework's own ${name} complete, and every cut copy not`, async () => {
    const bytes = await fixture(name);
    assertEquals(await checkBytes(name, memorySource(bytes)), {
      format,
      problem: null,
      step,
      epoch,
    });
    // A cut anywhere: in the header, the data, the directory, the last byte.
    const cuts = [1, 8, 30, Math.floor(bytes.length / 3), Math.floor(bytes.length * 0.9)];
    cuts.push(bytes.length - 23, bytes.length - 1);
    for (const n of cuts) {
      const c = await checkBytes(name, memorySource(bytes.subarray(0, n)));
      assert(c.problem !== null, `${name} cut to ${n} of ${bytes.length} bytes passed as complete`);
    }
  });
}

Deno.test("checkBytes() says why a cut torch.save zip is incomplete", async () => {
  const bytes = await fixture("torch_dict.pt");
  const c = await checkBytes("ckpt-200.pt", memorySource(bytes.subarray(0, 1500)));
  assertEquals(c.format, "torch-zip");
  assertEquals(
    c.problem,
    "no end-of-central-directory record at its end: the zip was cut short (its writer did not finish)",
  );
});

Deno.test("checkBytes() finds a safetensors file with bytes past its tensors not complete", async () => {
  const bytes = await fixture("model.safetensors");
  const longer = new Uint8Array(bytes.length + 4);
  longer.set(bytes);
  const c = await checkBytes("model.safetensors", memorySource(longer));
  assertEquals(c.problem, `it is ${bytes.length + 4} bytes, its header says ${bytes.length}`);
});

Deno.test("checkBytes() finds an HDF5 file longer than its superblock says still open", async () => {
  const bytes = await fixture("model.weights.h5");
  const longer = new Uint8Array(bytes.length + 100);
  longer.set(bytes);
  const c = await checkBytes("model.weights.h5", memorySource(longer));
  assert(c.problem?.endsWith("it is still open for writing"), c.problem ?? "complete");
});

Deno.test("checkBytes() does not take bytes of another format for a .keras, .h5 or .safetensors", async () => {
  const text = new TextEncoder().encode('{"not": "a checkpoint"}');
  for (const name of ["m.keras", "m.h5", "m.weights.h5", "m.safetensors"]) {
    const c = await checkBytes(name, memorySource(text));
    assert(c.problem !== null, `${name} holding JSON passed`);
  }
});

Deno.test("checkBytes() leaves bytes of no known format unchecked (a legacy pickle, a text file)", async () => {
  const legacy = await fixture("torch_legacy.pt");
  const unchecked = { format: null, problem: null, step: null, epoch: null };
  assertEquals(await checkBytes("old.pt", memorySource(legacy)), unchecked);
  assertEquals(
    await checkBytes("ckpt-5.pt", memorySource(new TextEncoder().encode("weights"))),
    unchecked,
  );
  assertEquals(
    (await checkBytes("empty.pt", memorySource(new Uint8Array(0)))).problem,
    "the file is empty",
  );
});

Deno.test("checkFile() reads a file on disk, and answers null for one that is gone", async () => {
  assertEquals(
    (await checkFile(join(TESTDATA, "lightning_last.ckpt"), "last.ckpt", TESTDATA))?.step,
    21,
  );
  assertEquals(await checkFile(join(TESTDATA, "missing.pt"), "missing.pt", TESTDATA), null);
});

Deno.test("checkFolder() waits for a Hugging Face folder's trainer_state.json and complete files", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const hf = join(dir, "checkpoint-40");
    await Deno.mkdir(hf);
    const weights = await fixture("model.safetensors");
    await Deno.writeFile(join(hf, "model.safetensors"), weights);
    assertEquals(
      (await checkFolder(hf, true, dir)).problem,
      "no trainer_state.json yet: the Trainer writes it last, once the checkpoint is saved",
    );
    await Deno.writeTextFile(join(hf, "trainer_state.json"), '{"global_step": 40, "epo');
    assert(
      (await checkFolder(hf, true, dir)).problem?.startsWith("trainer_state.json does not parse"),
    );
    await Deno.writeTextFile(join(hf, "trainer_state.json"), '{"global_step": 40, "epoch": 2.5}');
    const optimizer = await fixture("torch_state_dict.pt");
    await Deno.writeFile(join(hf, "optimizer.pt"), optimizer.subarray(0, 900));
    const cut = await checkFolder(hf, true, dir);
    assert(cut.problem?.startsWith("optimizer.pt: "), cut.problem ?? "complete");
    await Deno.writeFile(join(hf, "optimizer.pt"), optimizer);
    assertEquals(await checkFolder(hf, true, dir), {
      format: "hf-folder",
      problem: null,
      step: 40,
      epoch: 2,
    });
  } finally {
    await cleanup();
  }
});

Deno.test("readTopLevelInts() reads the scalar head of a pickled dict and stops at the rest", () => {
  // protocol 2: {"epoch": 2, "global_step": 300, "name": "x", "big": 2**40, "state": [...]}
  const bytes = new Uint8Array([
    0x80,
    0x02,
    0x7d,
    0x71,
    0x00,
    0x28, // PROTO 2, EMPTY_DICT, BINPUT 0, MARK
    0x58,
    5,
    0,
    0,
    0,
    ...new TextEncoder().encode("epoch"),
    0x71,
    0x01,
    0x4b,
    2,
    0x58,
    11,
    0,
    0,
    0,
    ...new TextEncoder().encode("global_step"),
    0x71,
    0x02,
    0x4d,
    0x2c,
    0x01,
    0x58,
    4,
    0,
    0,
    0,
    ...new TextEncoder().encode("name"),
    0x58,
    1,
    0,
    0,
    0,
    0x78,
    0x58,
    3,
    0,
    0,
    0,
    ...new TextEncoder().encode("big"),
    0x8a,
    6,
    0,
    0,
    0,
    0,
    0,
    1,
    0x58,
    5,
    0,
    0,
    0,
    ...new TextEncoder().encode("state"),
    0x5d, // EMPTY_LIST: stop
  ]);
  assertEquals(
    [...readTopLevelInts(bytes)],
    [["epoch", 2], ["global_step", 300], ["big", 2 ** 40]],
  );
  assertEquals([...readTopLevelInts(new Uint8Array([0x80, 0x02, 0x5d]))], []);
});
