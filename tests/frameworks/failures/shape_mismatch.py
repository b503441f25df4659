"""A linear layer fed a batch of the wrong width: torch raises a shape mismatch in forward."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def main():
    net = Net()
    batch = torch.randn(4, 6)
    net(batch).sum().backward()


if __name__ == "__main__":
    main()
