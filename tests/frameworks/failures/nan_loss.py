"""A loss that becomes NaN (the square root of a negative weight) under autograd's anomaly
detection, which raises on the backward pass that produced the NaN."""
import torch


def main():
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
    opt = torch.optim.SGD([w], lr=0.1)
    with torch.autograd.detect_anomaly():
        for step in range(3):
            loss = torch.sqrt(w).sum()
            print(f"step {step} loss {loss.item()}", flush=True)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
