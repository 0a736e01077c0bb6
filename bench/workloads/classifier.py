"""Seed loop 3: the classifier (seeds/000 step 4): DataLoader, Linear-ReLU-Dropout-Linear, Adam,
cross-entropy, 5 epochs of 16 batches with an evaluation after each. A step is one batch: loading
it, forward, backward and the update (evaluation is not timed)."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = parse_args(__doc__, steps=5, warmup=10, quick_steps=1, quick_warmup=2)
epochs = args.steps  # the seed's 5 epochs; --steps sets the number of epochs here
torch.manual_seed(args.seed)
device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.randn(1000, 20)
y = (X[:, 0] + X[:, 1] > 0).long()          # a simple binary task
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)

model = nn.Sequential(
    nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2)
).to(device)
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

forward = maybe_compile(torch, lambda x, y: loss_fn(model(x), y), args)
timer = StepTimer()
for epoch in range(epochs):
    model.train()                            # training mode: Dropout active
    timer.start()
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = forward(xb, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        timer.tick()
    timer.pause()

    model.eval()                             # eval mode: Dropout off
    with torch.no_grad():                    # don't record the graph
        acc = (model(X.to(device)).argmax(1) == y.to(device)).float().mean().item()
    print(epoch, round(acc, 3))
report("classifier", torch, timer, min(args.warmup, len(timer.durations) - 1), accuracy=acc,
       compiled=args.compile)
