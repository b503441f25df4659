#!/usr/bin/env python3
"""Plain PyTorch with TensorBoard's defaults and no gpuctl code: the zero-change path.

``SummaryWriter()`` writes to ``runs/<date>_<host>/`` and ``add_hparams`` to a subfolder named
by the time; gpuctl finds both with no flags, keys the scalars ``train/loss``, ``eval/loss`` and
``hparam/final_loss`` (the folders that name this run instance are left out) and makes the
hparams the run's config. It saves ``checkpoints/step-N.pt`` as it goes, which gpuctl finds in the
working dir and registers once each file is complete. A tiny regression on synthetic data: a few
seconds on a CPU.

    deno task cli job submit -- python examples/frameworks/pytorch/train.py
"""
import argparse
import os

import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--save-every", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(0)
    inputs = torch.randn(512, 8)
    targets = inputs @ torch.randn(8, 1) + 0.1 * torch.randn(512, 1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    writer = SummaryWriter()  # runs/<date>_<host>/
    loss = None
    for step in range(args.steps):
        batch = torch.randint(0, 448, (args.batch_size,))
        optimizer.zero_grad()
        loss = loss_fn(model(inputs[batch]), targets[batch])
        loss.backward()
        optimizer.step()
        writer.add_scalar("train/loss", loss.item(), step)
        if step % args.eval_every == 0 or step == args.steps - 1:
            with torch.no_grad():
                eval_loss = loss_fn(model(inputs[448:]), targets[448:]).item()
            writer.add_scalar("eval/loss", eval_loss, step)
        if (step + 1) % args.save_every == 0:
            os.makedirs("checkpoints", exist_ok=True)
            torch.save({"model": model.state_dict(), "step": step + 1},
                       "checkpoints/step-%d.pt" % (step + 1))
    writer.add_hparams(
        {"lr": args.lr, "batch_size": args.batch_size, "optimizer": "sgd"},
        {"hparam/final_loss": loss.item()},
    )
    writer.close()


if __name__ == "__main__":
    main()
