# From ../shared/seeds/002 ("PyTorch in 5 minutes"): device: move the computation, not just the model.
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
device = torch.device("cpu")

if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")

model = nn.Linear(1, 1).to(device)
x = x.to(device)
y = y.to(device)
