"""A checkpoint larger than the free space of its folder (argv[1], a small file system)."""
import sys

import torch


def main(folder):
    state = {"weights": torch.randn(1024, 1024)}  # 4 MiB
    torch.save(state, f"{folder}/epoch_1.pt")


if __name__ == "__main__":
    main(sys.argv[1])
