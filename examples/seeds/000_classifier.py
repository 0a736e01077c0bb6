# From ../shared/seeds/000 ("PyTorch for Beginners"), Step 4: a fuller version (data loading, Adam, evaluation).
import torch
from torch import nn
from torch.utils.data import TensorDataset, DataLoader

device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.randn(1000, 20)
y = (X[:, 0] + X[:, 1] > 0).long()          # a simple binary task
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)

model = nn.Sequential(
    nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2)
).to(device)
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(5):
    model.train()                            # training mode: Dropout active
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = loss_fn(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    model.eval()                             # eval mode: Dropout off
    with torch.no_grad():                    # don't record the graph
        acc = (model(X.to(device)).argmax(1) == y.to(device)).float().mean().item()
    print(epoch, round(acc, 3))
