"""A DataLoader with two workers, one of which is killed by SIGKILL while loading."""
import os
import signal

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if info is not None and info.id == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.tensor([float(i)])


def main():
    loader = DataLoader(Items(), batch_size=4, num_workers=2)
    for batch in loader:
        batch.sum()


if __name__ == "__main__":
    main()
