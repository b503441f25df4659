"""The rendezvous store binds a port another process holds (argv[1] on 127.0.0.1)."""
import datetime
import sys

import torch.distributed as dist


def main(port):
    store = dist.TCPStore("127.0.0.1", port, 1, True, timeout=datetime.timedelta(seconds=5))
    store.set("ready", "1")


if __name__ == "__main__":
    main(int(sys.argv[1]))
