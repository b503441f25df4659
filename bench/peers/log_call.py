"""The logging call in `deno task bench:peers`: torch's SummaryWriter.add_scalar next to the
gpuctl SDK's run.log (GPUCTL_SERVER_URL and GPUCTL_TOKEN come from the environment).

  percall TOOL --calls N   N calls with nothing between them; prints µs a call
  loop TOOL --steps N      the near-empty training loop of `deno task bench` (40 sines a step,
                           2 metrics logged a step); TOOL "none" logs nothing; prints seconds
"""
import argparse
import json
import math
import tempfile
import time


def logger(tool, tmp):
    """A function that logs {name: value} at a step, and one that closes the logger."""
    if tool == "tb":
        from torch.utils.tensorboard import SummaryWriter
        w = SummaryWriter(log_dir=tmp)

        def log(metrics, step):
            for k, v in metrics.items():
                w.add_scalar(k, v, step)
        return log, w.close
    if tool == "gpuctl":
        from gpuctl import run
        run.init(project="bench-peers")
        return (lambda metrics, step: run.log(metrics, step=step)), run.finish
    return None, lambda: None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["percall", "loop"])
    p.add_argument("tool", choices=["none", "tb", "gpuctl"])
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--steps", type=int, default=50_000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuctl-peers-tb-") as tmp:
        log, close = logger(a.tool, tmp)
        if a.command == "percall":
            t = time.perf_counter()
            for step in range(a.calls):
                log({"loss": 0.5}, step)
            elapsed = time.perf_counter() - t
            close()
            print(json.dumps({"us": elapsed / a.calls * 1e6}))
            return
        t = time.perf_counter()
        acc = 0.0
        for step in range(a.steps):
            for k in range(40):
                acc += math.sin(step + k)
            if log:
                log({"loss": acc % 1.0, "lr": 0.1}, step)
        elapsed = time.perf_counter() - t
        close()
        print(json.dumps({"seconds": elapsed}))


if __name__ == "__main__":
    main()
