// The Hugging Face Trainer's own `checkpoint-N/` folders (a 2-layer BERT built from its config,
// synthetic data): each is one checkpoint once its `trainer_state.json` is written.
import { join } from "node:path";
import { assertEquals } from "../../tests/assert.ts";
import { frameworkPython } from "../../tests/_frameworks.ts";
import { CheckpointWatcher } from "./checkpoint_watcher.ts";
import { tempDir } from "./_test_files.ts";

const python = frameworkPython();

const TRAIN = `
import sys, torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
torch.manual_seed(0)
config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=16, num_labels=2)
model = BertForSequenceClassification(config)
class Data(torch.utils.data.Dataset):
    def __len__(self): return 32
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, 50, (8,), generator=g), "labels": i % 2}
args = TrainingArguments(output_dir=sys.argv[1], per_device_train_batch_size=8, num_train_epochs=2,
                         save_strategy="steps", save_steps=2, report_to=[], use_cpu=True,
                         disable_tqdm=True, logging_steps=100)
Trainer(model=model, args=args, train_dataset=Data()).train()
`;

Deno.test({
  name: "the HF Trainer's checkpoint-N folders are checkpoints once trainer_state.json is written" +
    (python.reason ? ` (skipped: ${python.reason})` : ""),
  ignore: python.python === null,
  async fn() {
    const { dir, cleanup } = await tempDir();
    try {
      const out = await new Deno.Command(python.python!, { args: ["-c", TRAIN, dir] }).output();
      assertEquals(out.code, 0, new TextDecoder().decode(out.stderr).slice(-3000));
      const clock = { t: 0 };
      const settle = async (w: CheckpointWatcher) => {
        const first = await w.poll();
        clock.t += 5000;
        return [...first, ...await w.poll()];
      };
      const watcher = new CheckpointWatcher(dir, { now: () => clock.t });
      const found = await settle(watcher);
      // 32 samples / 8 = 4 steps an epoch, 2 epochs, saved every 2 steps.
      assertEquals(
        found.map((c) => [c.path.slice(dir.length + 1), c.step, c.kind, c.state]),
        [2, 4, 6, 8].map((s) => [`checkpoint-${s}`, s, "hf_folder", "valid"]),
      );
      // The same folder while the Trainer is still saving: weights in, no trainer_state.json.
      const later = join(dir, "checkpoint-8");
      await Deno.remove(join(later, "trainer_state.json"));
      const busy = new CheckpointWatcher(dir, {
        now: () => clock.t,
        state: await CheckpointWatcher.baselineState(join(dir, "none")),
      });
      assertEquals((await settle(busy)).map((c) => c.step), [2, 4, 6]);
      clock.t += 60_000;
      assertEquals(await busy.poll(), []);
      assertEquals(
        (await busy.poll({ final: true })).map((c) => [c.step, c.state, c.problem]),
        [[
          8,
          "incomplete",
          "no trainer_state.json yet: the Trainer writes it last, once the checkpoint is saved",
        ]],
      );
    } finally {
      await cleanup();
    }
  },
});
