"""MLP 784-512-512-10 on a batch of 128 (random MNIST-sized inputs), AdamW, cross-entropy."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from torch import nn

args = parse_args(__doc__, steps=60, warmup=5, quick_steps=3, quick_warmup=1)
torch.manual_seed(args.seed)
model = nn.Sequential(
    nn.Linear(784, 512), nn.ReLU(),
    nn.Linear(512, 512), nn.ReLU(),
    nn.Linear(512, 10),
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(128, 784)
y = torch.randint(0, 10, (128,))

forward = maybe_compile(torch, lambda x, y: loss_fn(model(x), y), args)
timer = StepTimer()
timer.start()
for _ in range(args.warmup + args.steps):
    loss = forward(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    timer.tick()
report("mlp", torch, timer, args.warmup, loss=loss.item(), compiled=args.compile)
