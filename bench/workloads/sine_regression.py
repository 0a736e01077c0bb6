"""Seed loop 4: the sine regression (seeds/003, the canonical loop): 256 points, batch 32 with
shuffling, Linear(1,32)-ReLU-Linear(32,1), SGD, MSE, 300 epochs. A step is one batch."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = parse_args(__doc__, steps=300, warmup=16, quick_steps=2, quick_warmup=2)
epochs = args.steps  # the seed's 300 epochs; --steps sets the number of epochs here
torch.manual_seed(args.seed)
device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.rand(256, 1) * 4 - 2
Y = torch.sin(2 * X) + 0.1 * torch.randn_like(X)
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.02)
loss_fn = nn.MSELoss()

forward = maybe_compile(torch, lambda x, y: loss_fn(model(x), y), args)
timer = StepTimer()
timer.start()
for _epoch in range(epochs):
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)   # data must live where the model lives
        loss = forward(xb, yb)                  # forward pass and loss
        opt.zero_grad()                         # clear old gradients
        loss.backward()                         # autograd: fill p.grad for every parameter
        opt.step()                              # update the parameters
        timer.tick()
report("sine_regression", torch, timer, args.warmup, loss=loss.item(),
       compiled=args.compile)
