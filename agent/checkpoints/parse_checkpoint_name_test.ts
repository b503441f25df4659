import { assertEquals } from "../../tests/assert.ts";
import { classifyEntry, parseCheckpointName } from "./parse_checkpoint_name.ts";

const NAMES: [string, { step: number | null; epoch: number | null } | null][] = [
  // Generic PyTorch names: only clear markers count.
  ["model_step1000.pt", { step: 1000, epoch: null }],
  ["ckpt-500.pt", { step: 500, epoch: null }],
  ["checkpoint_500.pth", { step: 500, epoch: null }],
  ["step=300.pt", { step: 300, epoch: null }],
  ["global_step_42.bin", { step: 42, epoch: null }],
  ["iter_5000.pth", { step: 5000, epoch: null }],
  ["epoch_3.pth", { step: null, epoch: 3 }],
  ["model-epoch=2.pt", { step: null, epoch: 2 }],
  ["Epoch_7.PT", { step: null, epoch: 7 }],
  ["step_1000_loss0.51.pt", { step: 1000, epoch: null }],
  ["model.pt", { step: null, epoch: null }],
  ["model_500.pt", { step: null, epoch: null }],
  ["model.safetensors", { step: null, epoch: null }],
  ["weights.pkl", { step: null, epoch: null }],
  ["step1_step2.pt", { step: null, epoch: null }],
  ["restep5.pt", { step: null, epoch: null }],
  ["step5k.pt", { step: null, epoch: null }],
  // Lightning.
  ["epoch=0-step=100.ckpt", { step: 100, epoch: 0 }],
  ["epoch=12-step=4500-val_loss=0.32.ckpt", { step: 4500, epoch: 12 }],
  ["last.ckpt", { step: null, epoch: null }],
  ["last-v1.ckpt", { step: null, epoch: null }],
  // Keras: a bare number in a ModelCheckpoint pattern is the epoch.
  ["model-03.keras", { step: null, epoch: 3 }],
  ["model.03-0.45.keras", { step: null, epoch: 3 }],
  ["weights.12-0.21.hdf5", { step: null, epoch: 12 }],
  ["model.weights.h5", { step: null, epoch: null }],
  ["ckpt-07.weights.h5", { step: 7, epoch: null }],
  ["model_epoch_4.h5", { step: null, epoch: 4 }],
  ["best.keras", { step: null, epoch: null }],
  // Hugging Face folders.
  ["checkpoint-500", { step: 500, epoch: null }],
  // TensorFlow: the index (or the bare prefix) is the checkpoint, shards are parts.
  ["keras_embedding.ckpt-7.index", { step: 7, epoch: null }],
  ["model.ckpt-1000", { step: 1000, epoch: null }],
  ["ckpt-3.index", { step: 3, epoch: null }],
  ["model.ckpt-1000.data-00000-of-00001", null],
  ["model.ckpt-1000.meta", null],
  ["faiss.index", null],
  // Not checkpoints.
  ["checkpoint", null],
  ["events.out.tfevents.1690483602.host.61366.2.v2", null],
  ["config.json", null],
  ["training_args.bin", null],
  ["rng_state_3.pth", null],
  ["model.pt.tmp", null],
  ["model.pt.part", null],
  [".model.pt", null],
  ["tmp-checkpoint-500", null],
  [".pt", null],
  ["checkpoint-", null],
];

for (const [name, expected] of NAMES) {
  Deno.test(`parseCheckpointName(${JSON.stringify(name)}) is ${JSON.stringify(expected)}`, () => {
    assertEquals(parseCheckpointName(name), expected);
  });
}

Deno.test("classifyEntry() treats a Hugging Face folder as one checkpoint and its name as a step", () => {
  assertEquals(classifyEntry("checkpoint-500", true), {
    kind: "folder",
    name: { step: 500, epoch: null },
  });
  assertEquals(classifyEntry("checkpoint-500", false), { kind: "other" });
  assertEquals(classifyEntry("runs", true), { kind: "other" });
  assertEquals(classifyEntry(".git", true), { kind: "ignored" });
});

Deno.test("classifyEntry() treats a folder named like a checkpoint file as one (DeepSpeed)", () => {
  assertEquals(classifyEntry("epoch=1-step=100.ckpt", true), {
    kind: "folder",
    name: { step: 100, epoch: 1 },
  });
});

Deno.test("classifyEntry() groups TensorFlow shards under their prefix", () => {
  assertEquals(classifyEntry("m.ckpt-5.data-00000-of-00002", false), {
    kind: "tf_part",
    prefix: "m.ckpt-5",
  });
  assertEquals(classifyEntry("m.ckpt-5.index", false), {
    kind: "tf_index",
    prefix: "m.ckpt-5",
    name: { step: 5, epoch: null },
  });
  assertEquals(classifyEntry("weights.index", false), { kind: "other" });
  assertEquals(classifyEntry("weights.index", false, { tfIndexNeedsStep: false }), {
    kind: "tf_index",
    prefix: "weights",
    name: { step: null, epoch: null },
  });
});
