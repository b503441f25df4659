#!/usr/bin/env python3
"""The Transformers ``Trainer`` with its TensorBoard defaults and no gpuctl code.

A 2-layer BERT built from a ``BertConfig`` (no download) classifies synthetic token
sequences. With ``report_to="tensorboard"`` the Trainer writes to
``<output_dir>/runs/<date>_<host>/``; gpuctl finds it with no flags and keys the scalars as
the Trainer writes them (``train/loss``, ``eval/loss``, ``train/learning_rate`` …), without the
dated folder. Its ``<output_dir>/checkpoint-N/`` folders (one an epoch) are registered once the
Trainer has written ``trainer_state.json`` in them. Seconds on a CPU.

``--gpuctl-callback`` adds gpuctl's ``GpuctlCallback`` (same keys and steps, through the SDK);
``--logging-dir DIR`` puts the Trainer's TensorBoard files in DIR; ``--log-history FILE``
writes ``trainer.state.log_history`` as JSON.

    deno task cli job submit -- python examples/frameworks/transformers/train.py
"""
import argparse
import json
import os

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Synthetic(Dataset):
    """Sequences whose label is whether token 5 appears in them."""

    def __init__(self, n, seed):
        generator = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(6, 64, (n, 16), generator=generator)
        mask = torch.rand(n, generator=generator) < 0.5
        self.ids[mask, 3] = 5
        self.labels = mask.long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="out")
    parser.add_argument("--epochs", type=float, default=2)
    parser.add_argument("--gpuctl-callback", action="store_true")
    parser.add_argument("--logging-dir", default=None)
    parser.add_argument("--log-history", default=None)
    args = parser.parse_args()

    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    model = BertForSequenceClassification(config)
    if args.logging_dir:
        os.environ["TENSORBOARD_LOGGING_DIR"] = args.logging_dir
    training = TrainingArguments(
        output_dir=args.output_dir,
        num_train_epochs=args.epochs,
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        learning_rate=1e-3,
        logging_steps=4,
        eval_strategy="steps",
        eval_steps=8,
        save_strategy="epoch",
        report_to="tensorboard",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    callbacks = []
    if args.gpuctl_callback:
        from gpuctl.callbacks import GpuctlCallback
        callbacks.append(GpuctlCallback())
    trainer = Trainer(model=model, args=training, train_dataset=Synthetic(256, 1),
                      eval_dataset=Synthetic(64, 2), callbacks=callbacks)
    trainer.train()
    if args.log_history:
        with open(args.log_history, "w") as handle:
            json.dump(trainer.state.log_history, handle)


if __name__ == "__main__":
    main()
