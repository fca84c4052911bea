# A small training script for script mode: `graphlint trace samples/trace/train_script.py -- --steps 3`.
# graphlint runs it as __main__ with torch.compile intercepted and traces the compiled model
# with the inputs of its first calls (with --train, backward too).
# expect-trace: verdict=none
# expect-check: none
import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    data, target = torch.randn(32, 4), torch.randn(32, 1)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(compiled(data), target)
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
