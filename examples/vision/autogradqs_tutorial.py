"""Learn the Basics, 5: Automatic differentiation with torch.autograd.

A plain PyTorch program: ``python autogradqs_tutorial.py`` runs it on PyTorch, ``ember run
autogradqs_tutorial.py`` on ember. It needs no data.
"""

import torch

torch.manual_seed(0)

# A one-layer network: input x, parameters w and b, and a loss against the target y.
x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

# Each result of an operation on tensors that require gradients records how it was made.
print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")

# backward() fills .grad of the leaves: d loss / d w and d loss / d b.
loss.backward()
print(w.grad)
print(b.grad)

# By hand: the loss is the mean over 3 outputs of BCE(sigmoid(z), y), so dloss/dz = (sigmoid(z) - y) / 3.
dz = (torch.sigmoid(z.detach()) - y) / 3
print(f"w.grad matches the formula: {torch.allclose(w.grad, torch.outer(x, dz))}")
print(f"b.grad matches the formula: {torch.allclose(b.grad, dz)}")

# Tracking can be switched off: for inference, or to freeze parameters.
z = torch.matmul(x, w) + b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w) + b
print(z.requires_grad)

# detach() gives the same values without the history.
z = torch.matmul(x, w) + b
z_det = z.detach()
print(z_det.requires_grad)

# A tensor output: backward(v) computes the vector-Jacobian product v^T J.
# Gradients accumulate in .grad across calls until they are zeroed.
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")
