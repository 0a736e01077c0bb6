# From ../shared/seeds/000 ("PyTorch for Beginners"), Step 3: the standard training loop.
import torch
from torch import nn

torch.manual_seed(0)
X = torch.rand(200, 1)
y = 3 * X + 2 + 0.1 * torch.randn(200, 1)

model = nn.Linear(1, 1)
loss_fn = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.5)

for step in range(500):
    pred = model(X)              # 1. forward
    loss = loss_fn(pred, y)      # 2. loss
    opt.zero_grad()              # 3. clear last step's gradients
    loss.backward()              # 4. backward
    opt.step()                   # 5. update parameters

print(model.weight.item(), model.bias.item())   # close to 3 and 2
