# From ../shared/seeds/002 ("PyTorch in 5 minutes"): when debugging, inspect one representative object.
# --- setup (not in the seed): the names this fragment uses ---
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cpu"
x = torch.randn(64, 1)
y = 2.0 * x + 1.0 + 0.1 * torch.randn(64, 1)
model = nn.Linear(1, 1)
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
validation_x, validation_y = x[:16], y[:16]
pred = model(x)
loss = loss_fn(pred, y)
# --- verbatim from the seed ---
print(next(model.parameters()).device)
print(x.device)
print(x.dtype, x.shape)
