#!/usr/bin/env python3
"""A synthetic held-out evaluation of a checkpoint of examples/synthetic/train.py.

gpuctl runs it as an evaluation job with the checkpoint in ``$GPUCTL_CHECKPOINT_PATH``; it
writes its results as JSON to ``$GPUCTL_EVAL_OUTPUT``, which the agent forwards to the
evaluation. Standard library only.
"""
import json
import os
import random


def main():
    path = os.environ["GPUCTL_CHECKPOINT_PATH"]
    with open(path) as f:
        ckpt = json.load(f)
    rng = random.Random(ckpt.get("step", 0))
    loss = ckpt.get("loss") or 2.0
    held_out = loss * (1.08 + 0.04 * rng.random())
    metrics = {"eval/loss": held_out, "eval/accuracy": max(0.0, min(1.0, 1.0 - held_out / 2.2))}
    print(f"evaluated {path}: {json.dumps(metrics)}", flush=True)
    with open(os.environ["GPUCTL_EVAL_OUTPUT"], "w") as f:
        json.dump({"metrics": metrics}, f)


if __name__ == "__main__":
    main()
