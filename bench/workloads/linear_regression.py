"""Seed loop 2: linear regression (seeds/000 step 3): nn.Linear(1, 1), MSELoss, SGD, 500 steps."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from torch import nn

args = parse_args(__doc__, steps=480, warmup=20, quick_steps=10, quick_warmup=2)
torch.manual_seed(args.seed)
X = torch.rand(200, 1)
y = 3 * X + 2 + 0.1 * torch.randn(200, 1)

model = nn.Linear(1, 1)
loss_fn = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
forward = maybe_compile(torch, lambda X, y: loss_fn(model(X), y), args)

timer = StepTimer()
timer.start()
for _ in range(args.warmup + args.steps):
    loss = forward(X, y)         # 1. forward, 2. loss
    opt.zero_grad()              # 3. clear last step's gradients
    loss.backward()              # 4. backward
    opt.step()                   # 5. update parameters
    timer.tick()

print(model.weight.item(), model.bias.item())   # close to 3 and 2
report("linear_regression", torch, timer, args.warmup, loss=loss.item(), compiled=args.compile)
