"""Resuming from a checkpoint path that does not exist."""
import torch


def main():
    state = torch.load("checkpoints/epoch_7.pt")
    print(state)


if __name__ == "__main__":
    main()
