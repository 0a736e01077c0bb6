"""CNN on 64x1x28x28: Conv2d(1,16,5)-ReLU-MaxPool-Conv2d(16,32,5)-ReLU-MaxPool-Linear-ReLU-Linear,
SGD with momentum, cross-entropy."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from torch import nn

args = parse_args(__doc__, steps=30, warmup=3, quick_steps=2, quick_warmup=1)
torch.manual_seed(args.seed)
model = nn.Sequential(
    nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),      # 16 x 12 x 12
    nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),     # 32 x 4 x 4
    nn.Flatten(),
    nn.Linear(32 * 4 * 4, 128), nn.ReLU(),
    nn.Linear(128, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(64, 1, 28, 28)
y = torch.randint(0, 10, (64,))

forward = maybe_compile(torch, lambda x, y: loss_fn(model(x), y), args)
timer = StepTimer()
timer.start()
for _ in range(args.warmup + args.steps):
    loss = forward(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    timer.tick()
report("cnn", torch, timer, args.warmup, loss=loss.item(), compiled=args.compile)
