#!/usr/bin/env python3
"""A synthetic training run that needs nothing but Python: a noisy, decaying loss.

It logs ``train/loss`` every step and ``eval/loss`` and ``eval/accuracy`` every
``--eval-every`` steps through the gpuctl SDK (when it is importable; without it the
script still runs), and writes a checkpoint file every ``--ckpt-every`` steps. Flags make
each anomaly gpuctl watches for happen on purpose:

  --nan-at N         train/loss becomes NaN from step N on
  --overfit-after N  eval/loss rises after step N while train/loss keeps falling
  --fail-oom-at N    prints a CUDA out-of-memory traceback at step N and exits 1
  --spike-at N       one train/loss value 20x too high at step N

The learning rate behaves as in real training: too low a rate learns slowly, and above
``STABLE_LR`` (0.1) the loss settles higher and oscillates, the more so the higher the rate,
so a sweep over ``--lr`` has an optimum to find (about 0.1 for the default 200 steps).
"""
import argparse
import json
import math
import os
import random
import sys
import time

try:
    from gpuctl import run
except ImportError:  # the SDK is optional
    run = None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep per step")
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--ckpt-every", type=int, default=50)
    # Inside a gpuctl job the run has a folder of its own: runs started in one working dir
    # then never write over each other's checkpoints.
    p.add_argument("--ckpt-dir", default=os.path.join(os.environ.get("GPUCTL_RUN_DIR") or ".", "checkpoints"))
    p.add_argument("--fail-oom-at", type=int, default=None)
    p.add_argument("--nan-at", type=int, default=None)
    p.add_argument("--overfit-after", type=int, default=None)
    p.add_argument("--spike-at", type=int, default=None)
    p.add_argument("--project", default=None)
    p.add_argument("--experiment", default=None)
    return p.parse_args(argv)


STABLE_LR = 0.1


def instability(step, lr):
    """What too high a learning rate adds to the loss: a higher floor that oscillates."""
    if lr <= STABLE_LR:
        return 0.0
    excess = math.log(lr / STABLE_LR)
    return 0.5 * excess * excess * (1.0 + 0.3 * math.sin(step / 3.0))


def train_loss(step, args, rng):
    base = 2.0 * math.exp(-args.lr * step / 10.0) + 0.05 + instability(step, args.lr)
    loss = base * (1.0 + 0.05 * rng.uniform(-1, 1))
    if args.spike_at is not None and step == args.spike_at:
        loss *= 20.0
    if args.nan_at is not None and step >= args.nan_at:
        loss = float("nan")
    return loss


def eval_metrics(step, args, rng):
    loss = 2.1 * math.exp(-args.lr * step / 10.0) + 0.08 + instability(step, args.lr)
    if args.overfit_after is not None and step > args.overfit_after:
        loss = 2.1 * math.exp(-args.lr * args.overfit_after / 10.0) + 0.08
        loss *= 1.0 + 0.04 * (step - args.overfit_after) / max(args.eval_every, 1)
    loss *= 1.0 + 0.01 * rng.uniform(-1, 1)
    accuracy = max(0.0, min(1.0, 1.0 - loss / 2.2))
    return loss, accuracy


def oom_and_exit(step):
    print(f"step {step}: allocating activations", flush=True)
    sys.stderr.write(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    out = model(batch)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
        "(GPU 0; 79.15 GiB total capacity; 77.01 GiB already allocated; 1.02 GiB free)\n"
    )
    sys.stderr.flush()
    sys.exit(1)


def main(argv=None):
    args = parse_args(argv)
    rng = random.Random(args.seed)
    if run is not None:
        run.init(project=args.project, experiment=args.experiment, config=args, max_steps=args.steps)
    os.makedirs(args.ckpt_dir, exist_ok=True)
    print(f"synthetic training: {args.steps} steps, lr={args.lr}, seed={args.seed}", flush=True)
    for step in range(args.steps):
        if args.fail_oom_at is not None and step == args.fail_oom_at:
            oom_and_exit(step)
        loss = train_loss(step, args, rng)
        metrics = {"train/loss": loss}
        if step % args.eval_every == 0 or step == args.steps - 1:
            eval_loss, accuracy = eval_metrics(step, args, rng)
            metrics.update({"eval/loss": eval_loss, "eval/accuracy": accuracy})
            print(f"step {step} train/loss {loss:.4f} eval/loss {eval_loss:.4f} eval/accuracy {accuracy:.3f}", flush=True)
        if run is not None:
            run.log(metrics, step=step)
        if args.ckpt_every and step > 0 and (step % args.ckpt_every == 0 or step == args.steps - 1):
            path = os.path.join(args.ckpt_dir, f"ckpt-{step}.pt")
            with open(path, "w") as f:
                json.dump({"step": step, "loss": loss if math.isfinite(loss) else None}, f)
            if run is not None:
                run.log_checkpoint(path, step=step)
        if args.sleep:
            time.sleep(args.sleep)
    print("done", flush=True)
    if run is not None:
        run.finish()


if __name__ == "__main__":
    main()
