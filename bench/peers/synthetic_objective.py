"""The synthetic example's eval/loss curve for a learning rate, as examples/synthetic/train.py
logs it: the same functions, called with the same random stream in the same order, so a peer's
trial and a gpuctl trial with the same --lr see the same numbers. Standard library only."""
import argparse
import importlib.util
import os
import random
import time

_TRAIN = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "synthetic", "train.py")


def _load_train():
    spec = importlib.util.spec_from_file_location("synthetic_train", _TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = _load_train()


def eval_curve(lr, steps, eval_every, seed=0, sleep=0.0):
    """Yields (step, eval/loss) at each eval step; sleeps `sleep` a step as --sleep does."""
    args = train.parse_args(["--lr", str(lr), "--steps", str(steps), "--eval-every", str(eval_every),
                             "--seed", str(seed)])
    rng = random.Random(args.seed)
    for step in range(args.steps):
        train.train_loss(step, args, rng)
        if step % args.eval_every == 0 or step == args.steps - 1:
            loss, _ = train.eval_metrics(step, args, rng)
            yield step, loss
        if sleep:
            time.sleep(sleep)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--eval-every", type=int, default=10)
    a = p.parse_args()
    for step, loss in eval_curve(a.lr, a.steps, a.eval_every):
        print(f"step {step} eval/loss {loss:.4f}")
