"""Learn the Basics, 1: Tensors -- making tensors, their attributes, operations, and NumPy bridges.

A plain PyTorch program: ``python tensorqs_tutorial.py`` runs it on PyTorch, ``ember run
tensorqs_tutorial.py`` on ember. It needs no data.
"""

import numpy as np
import torch

torch.manual_seed(0)

# --- Making a tensor -------------------------------------------------------------------------
# straight from Python data (the dtype is inferred: integers here)
data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)

# from a NumPy array (they share memory; see the bridge below)
np_array = np.array(data)
x_np = torch.from_numpy(np_array)

# from another tensor: same shape and dtype unless told otherwise
x_ones = torch.ones_like(x_data)
print(f"Ones Tensor: \n {x_ones} \n")
x_rand = torch.rand_like(x_data, dtype=torch.float)  # the dtype must be floating for rand
print(f"Random Tensor: \n {x_rand} \n")

# from a shape
shape = (2, 3,)
rand_tensor = torch.rand(shape)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)
print(f"Random Tensor: \n {rand_tensor} \n")
print(f"Ones Tensor: \n {ones_tensor} \n")
print(f"Zeros Tensor: \n {zeros_tensor}")

# --- Attributes ------------------------------------------------------------------------------
tensor = torch.rand(3, 4)
print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")

# --- Operations ------------------------------------------------------------------------------
# tensors are made on the CPU; move one to an accelerator when there is one
if torch.accelerator.is_available():
    tensor = tensor.to(torch.accelerator.current_accelerator())

# indexing and slicing as in NumPy
tensor = torch.ones(4, 4)
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:, 1] = 0
print(tensor)

# joining along an existing dimension
t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1)

# matrix products: three spellings of tensor @ tensor^T
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)
torch.matmul(tensor, tensor.T, out=y3)
print(f"y1 == y2 == y3: {torch.equal(y1, y2) and torch.equal(y2, y3)}")

# element-wise products, likewise
z1 = tensor * tensor
z2 = tensor.mul(tensor)
z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)
print(f"z1 == z2 == z3: {torch.equal(z1, z2) and torch.equal(z2, z3)}")

# a one-element tensor becomes a Python number with item()
agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))

# in-place operations end in an underscore
print(f"{tensor} \n")
tensor.add_(5)
print(tensor)

# --- Bridge with NumPy -----------------------------------------------------------------------
# a CPU tensor and the array from numpy() share memory: changing one changes the other
t = torch.ones(5)
print(f"t: {t}")
n = t.numpy()
print(f"n: {n}")
t.add_(1)
print(f"t: {t}")
print(f"n: {n}")

# and the other way round with from_numpy
n = np.ones(5)
t = torch.from_numpy(n)
np.add(n, 1, out=n)
print(f"t: {t}")
print(f"n: {n}")
