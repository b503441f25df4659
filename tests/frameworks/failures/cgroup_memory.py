"""A training loop that leaks memory (it keeps every step's activations) after moving itself
into a memory cgroup with a small limit (argv[1], made by the caller): the kernel's OOM killer
ends it a few seconds later, once the leak passes the limit."""
import os
import sys
import time

import torch


def main(cgroup):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
    kept = []
    for step in range(1000):
        activations = torch.ones(1024 * 1024)  # 4 MiB, written
        kept.append(activations)
        print(f"step {step}: {4 * len(kept)} MiB kept", flush=True)
        time.sleep(0.2)  # the rest of a training step


if __name__ == "__main__":
    main(sys.argv[1])
