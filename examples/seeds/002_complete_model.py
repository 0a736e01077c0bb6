# From ../shared/seeds/002 ("PyTorch in 5 minutes"): "This is a complete model".
import torch
import torch.nn as nn

# 64 examples, one feature each.
x = torch.randn(64, 1)
y = 2.0 * x + 1.0 + 0.1 * torch.randn(64, 1)

model = nn.Linear(1, 1)
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

model.train()

for step in range(200):
    optimizer.zero_grad()

    pred = model(x)
    loss = loss_fn(pred, y)

    loss.backward()
    optimizer.step()

print(model.weight.item(), model.bias.item())
