"""Seed loop 1: scalar autograd (from seeds/000, "how autograd computes gradients"), repeated.

y = w * x**2 + 1, y.backward(), read the gradients, clear them; one step per repetition.
"""

import torch
from _common import StepTimer, maybe_compile, parse_args, report

args = parse_args(__doc__, steps=2000, warmup=200, quick_steps=20, quick_warmup=5)
x = torch.tensor(2.0, requires_grad=True)
w = torch.tensor(3.0, requires_grad=True)
def f(w, x):
    return w * x ** 2 + 1


f = maybe_compile(torch, f, args)
timer = StepTimer()
timer.start()
for _ in range(args.warmup + args.steps):
    y = f(w, x)                 # y = 3*4 + 1 = 13
    y.backward()                # dy/dx = 2wx = 12, dy/dw = x**2 = 4
    x.grad = None
    w.grad = None
    timer.tick()
y = w * x ** 2 + 1
y.backward()
assert abs(x.grad.item() - 12.0) < 1e-6 and abs(w.grad.item() - 4.0) < 1e-6
report("scalar_autograd", torch, timer, args.warmup, compiled=args.compile)
