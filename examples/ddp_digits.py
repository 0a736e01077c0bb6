"""Data-parallel training with DistributedDataParallel, written as a PyTorch program.

Each process trains a replica of a small CNN on its share of scikit-learn's handwritten digits
(a DistributedSampler splits the data); DDP averages the gradients, so every replica takes the
same step. Rank 0 prints and writes the checkpoint, which a rerun resumes from.

    ember launch --nproc-per-node 2 examples/ddp_digits.py          # on ember
    torchrun --nproc-per-node 2 examples/ddp_digits.py              # the same file on PyTorch
    python examples/ddp_digits.py                                   # one process, no DDP

Needs scikit-learn (``pip install 'ember[demo,mpi]'`` for ember).
"""

import argparse
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 8x8 -> 4x4
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 4x4 -> 2x2
        return self.fc(x.flatten(1))


def datasets():
    """The 1,797 digits as 1x8x8 images in [0, 1], split 1,500 / 297 by a fixed permutation."""
    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    x = torch.tensor(digits.images[order] / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(digits.target[order], dtype=torch.int64)
    return TensorDataset(x[:1500], y[:1500]), TensorDataset(x[1500:], y[1500:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--out", default="ddp_digits_checkpoint.pt")
    args = parser.parse_args()

    distributed = "RANK" in os.environ  # set by ember launch and torchrun
    if distributed:
        dist.init_process_group(backend="gloo", init_method="env://")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(0)

    train_set, test_set = datasets()
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    model = DigitsCNN()
    if distributed:
        model = DDP(model)  # copies rank 0's weights into every process
    raw = model.module if distributed else model
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    start = 0
    if os.path.exists(args.out):
        state = torch.load(args.out, map_location="cpu", weights_only=True)
        raw.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"] + 1
        if rank == 0:
            print(f"resumed from {args.out} after epoch {state['epoch']}")

    for epoch in range(start, args.epochs):
        model.train()
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same in every process
        total, count = torch.zeros(1), torch.zeros(1)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # DDP averages the gradients over the processes here
            optimizer.step()
            total += loss.detach() * len(y)
            count += len(y)
        if distributed:  # the mean loss over every process's batches
            dist.all_reduce(total)
            dist.all_reduce(count)
        model.eval()
        with torch.no_grad():
            xs, ys = test_set.tensors
            accuracy = (raw(xs).argmax(1) == ys).float().mean().item()
        if rank == 0:
            print(f"epoch {epoch}: train loss {(total / count).item():.4f}  "
                  f"test accuracy {accuracy:.4f}")
            torch.save({"model": raw.state_dict(), "optimizer": optimizer.state_dict(),
                        "epoch": epoch}, args.out)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
