"""Per-op overhead: a chain of 20 small ops on (8, 8) float32 tensors with autograd, then
backward. Reports microseconds per op (forward + its share of backward)."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report

args = parse_args(__doc__, steps=3000, warmup=100, quick_steps=10, quick_warmup=2)
torch.manual_seed(args.seed)
x = torch.randn(8, 8, requires_grad=True)
w = torch.randn(8, 8, requires_grad=True)
b = torch.randn(8, requires_grad=True)


def chain(x, w, b):
    h = x * w            # 1
    h = h + b            # 2  (broadcast)
    h = h.tanh()         # 3
    h = h @ w            # 4
    h = h - x            # 5
    h = h * 0.5          # 6
    h = h.sigmoid()      # 7
    h = h + 1.0          # 8
    h = h.log()          # 9
    h = h.relu()         # 10
    h = h * x            # 11
    h = h.exp()          # 12
    h = h / 4.0          # 13
    h = h.pow(2)         # 14
    h = h.sqrt()         # 15
    h = h.neg()          # 16
    h = h.abs()          # 17
    h = h.t()            # 18
    h = h.mean(dim=1)    # 19
    return h.sum()       # 20


OPS = 20
chain = maybe_compile(torch, chain, args)
timer = StepTimer()
timer.start()
for _ in range(args.warmup + args.steps):
    loss = chain(x, w, b)
    loss.backward()
    x.grad = w.grad = b.grad = None
    timer.tick()
report("per_op", torch, timer, args.warmup, ops_per_step=OPS, loss=loss.item(),
       compiled=args.compile)
