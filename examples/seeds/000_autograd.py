# From ../shared/seeds/000 ("PyTorch for Beginners"), Step 2: how autograd computes gradients.
import torch
x = torch.tensor(2.0, requires_grad=True)
w = torch.tensor(3.0, requires_grad=True)
y = w * x ** 2 + 1          # y = 3·4 + 1 = 13
y.backward()
print(x.grad, w.grad)       # dy/dx = 2wx = 12, dy/dw = x² = 4
print(y.grad_fn)            # <AddBackward0 ...>: y came from an addition
