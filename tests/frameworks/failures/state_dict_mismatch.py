"""Weights saved from one model loaded into another (strict): missing and unexpected keys and
a size mismatch."""
import torch


def main():
    saved = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    other = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2),
                                torch.nn.Linear(2, 2))
    other.load_state_dict(saved.state_dict(), strict=True)


if __name__ == "__main__":
    main()
