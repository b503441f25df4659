#!/usr/bin/env python3
"""A few seconds of make-believe training for the agent-loop bench.

The final ``eval/loss`` depends on ``--lr`` and on the recipe below, so some ideas beat others:
the best effective learning rate (``lr / (1 - MOMENTUM)``) is 0.1, the further from it (on a
log scale) the higher the loss settles, and above 1.0 the loss diverges to NaN part-way through.
A code edit changes a line of the recipe. The script prints the SHA-256 of its own source
(what it ran) and the GPUs it was given, and logs ``train/loss`` each step and ``eval/loss`` at
the end through the gpuctl SDK.
"""
import argparse
import hashlib
import math
import os
import random
import time

from gpuctl import run

# The recipe: the lines a code edit changes.
SCHEDULE = "constant"
WARMUP_STEPS = 0
MOMENTUM = 0.0


def final_floor(lr):
    """Where the loss settles for this learning rate and recipe."""
    eff = lr / (1.0 - MOMENTUM)
    floor = 0.25 + 0.4 * (math.log10(eff) - math.log10(0.1)) ** 2
    if SCHEDULE == "cosine":
        floor -= 0.04
    if WARMUP_STEPS > 0:
        floor -= 0.02
    return max(floor, 0.05), eff


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--step-s", type=float, default=0.2, help="seconds a step takes")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    with open(__file__, "rb") as f:
        print("code sha256 " + hashlib.sha256(f.read()).hexdigest(), flush=True)
    print("gpus " + os.environ.get("CUDA_VISIBLE_DEVICES", ""), flush=True)
    rng = random.Random(args.seed * 1_000_003 + int(args.lr * 1e6))
    floor, eff = final_floor(args.lr)
    diverge_at = args.steps // 3 if eff > 1.0 else None
    loss = 2.5
    for step in range(1, args.steps + 1):
        time.sleep(args.step_s)
        if diverge_at is not None and step >= diverge_at:
            loss = float("nan")
        else:
            warm = min(1.0, step / WARMUP_STEPS) if WARMUP_STEPS else 1.0
            loss = floor + (2.5 - floor) * math.exp(-6.0 * warm * step / args.steps)
            loss *= 1.0 + 0.01 * rng.uniform(-1, 1)
        run.log({"train/loss": loss}, step=step)
    run.log({"eval/loss": loss * 1.05}, step=args.steps)
    run.finish()


if __name__ == "__main__":
    main()
