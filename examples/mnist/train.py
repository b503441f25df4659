#!/usr/bin/env python3
"""MNIST with PyTorch, with no gpuctl code at all: the zero-change path.

It writes TensorBoard scalars to ./runs (train/loss, eval/loss, eval/accuracy) and a
checkpoint per epoch to ./checkpoints. Submitted as a gpuctl job, the agent tails the
TensorBoard files and registers the checkpoints:

    deno task cli submit --gpus 1 --watch checkpoints -- python examples/mnist/train.py

or through the API with {"tensorboard_dir": "runs", "checkpoint_dir": "checkpoints"}.
Needs torch, torchvision and tensorboard (pip install torch torchvision tensorboard).
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.tensorboard import SummaryWriter
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--data", default=os.path.expanduser("~/.cache/mnist"))
    args = p.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train = datasets.MNIST(args.data, train=True, download=True, transform=tf)
    test = datasets.MNIST(args.data, train=False, download=True, transform=tf)
    train_loader = torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test, batch_size=1000)

    model = Net().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    writer = SummaryWriter("runs")
    os.makedirs("checkpoints", exist_ok=True)
    step = 0
    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if step % 50 == 0:
                writer.add_scalar("train/loss", loss.item(), step)
            step += 1
        model.eval()
        total, correct, loss_sum = 0, 0, 0.0
        with torch.no_grad():
            for x, y in test_loader:
                x, y = x.to(device), y.to(device)
                out = model(x)
                loss_sum += F.cross_entropy(out, y, reduction="sum").item()
                correct += (out.argmax(1) == y).sum().item()
                total += y.numel()
        writer.add_scalar("eval/loss", loss_sum / total, step)
        writer.add_scalar("eval/accuracy", correct / total, step)
        writer.flush()
        torch.save(model.state_dict(), f"checkpoints/epoch={epoch}-step={step}.ckpt")
        print(f"epoch {epoch}: eval/loss {loss_sum / total:.4f} eval/accuracy {correct / total:.4f}", flush=True)
    writer.close()


if __name__ == "__main__":
    main()
