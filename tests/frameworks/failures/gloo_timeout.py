"""Two ranks on gloo (127.0.0.1), rank 1 never joins the all_reduce: rank 0's collective times
out after a few seconds and torch.multiprocessing.spawn re-raises its error."""
import datetime
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world, port):
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=3),
    )
    if rank == 0:
        grad = torch.ones(4)
        dist.all_reduce(grad)
    else:
        # Busy elsewhere, never reaching the collective; spawn ends it once rank 0 fails.
        time.sleep(120)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    mp.spawn(rank_main, args=(2, free_port()), nprocs=2)
    sys.exit(0)
