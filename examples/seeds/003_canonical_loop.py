# From ../shared/seeds/003 ("Autograd and your first PyTorch training loop"), Step 5: the canonical loop.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.rand(256, 1) * 4 - 2
Y = torch.sin(2 * X) + 0.1 * torch.randn_like(X)
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.02)
loss_fn = nn.MSELoss()

for epoch in range(300):
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)   # data must live where the model lives
        loss = loss_fn(model(xb), yb)           # forward pass and loss
        opt.zero_grad()                         # clear old gradients
        loss.backward()                         # autograd: fill p.grad for every parameter
        opt.step()                              # update the parameters
