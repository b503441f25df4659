#!/usr/bin/env python3
"""PyTorch Lightning with its defaults and no gpuctl code: the zero-change path.

The default logger writes to ``lightning_logs/version_N/``; gpuctl finds it with no flags and
keys the scalars as Lightning logs them (``train_loss``, ``val_loss``, ``epoch``), without the
``version_N`` folder, and makes ``save_hyperparameters()`` the run's config.

``--gpuctl-callback`` adds ``GpuctlLightningCallback`` (gpuctl's SDK, on the job's
PYTHONPATH): the run then gets what Lightning logs through the SDK, at Lightning's steps.
``--logger-dir DIR`` puts Lightning's TensorBoard files in DIR instead (with the callback, a
folder outside the job's working dir keeps the callback the run's only source).

    deno task cli job submit -- python examples/frameworks/lightning/train.py
"""
import argparse

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(pl.LightningModule):
    def __init__(self, lr=0.05, hidden=16):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--gpuctl-callback", action="store_true")
    parser.add_argument("--logger-dir", default=None)
    args = parser.parse_args()

    torch.manual_seed(0)
    inputs = torch.randn(640, 8)
    targets = inputs @ torch.randn(8, 1) + 0.1 * torch.randn(640, 1)
    train = DataLoader(TensorDataset(inputs[:512], targets[:512]), batch_size=32, shuffle=True)
    val = DataLoader(TensorDataset(inputs[512:], targets[512:]), batch_size=32)

    callbacks = []
    if args.gpuctl_callback:
        from gpuctl.callbacks import GpuctlLightningCallback
        callbacks.append(GpuctlLightningCallback())
    logger = True
    if args.logger_dir:
        logger = pl.loggers.TensorBoardLogger(args.logger_dir, name="lightning_logs")
    trainer = pl.Trainer(
        max_epochs=args.epochs,
        log_every_n_steps=5,
        accelerator="cpu",
        devices=1,
        logger=logger,
        callbacks=callbacks,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Regressor(lr=args.lr), train, val)


if __name__ == "__main__":
    main()
