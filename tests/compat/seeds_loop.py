"""The training loop the tutorials teach: Dataset/DataLoader, a model with BatchNorm and
Dropout, model.train()/model.eval(), torch.no_grad() evaluation, an lr scheduler, and a checkpoint
(model, optimizer, scheduler, epoch) that resumes to the same weights. Written for ember's
compatibility corpus."""
import math

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Spirals(Dataset):
    def __init__(self, n):
        t = torch.linspace(0.0, 1.0, n)
        angle = 1.5 * math.pi * t
        label = (torch.arange(n) % 2)
        sign = label.float() * 2 - 1
        self.x = torch.stack([sign * t * torch.cos(angle), sign * t * torch.sin(angle)], 1)
        self.y = label

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def make_model():
    model = nn.Sequential(nn.Linear(2, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.25),
                          nn.Linear(32, 2))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_((torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.71 + i) * 0.5).view_as(p))
    return model


def train_one_epoch(model, loader, loss_fn, optimizer):
    model.train()
    total = 0.0
    for X, y in loader:
        pred = model(X)
        loss = loss_fn(pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(X)
    return total / len(loader.dataset)


def evaluate(model, loader, loss_fn):
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for X, y in loader:
            pred = model(X)
            loss += loss_fn(pred, y).item() * len(X)
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    n = len(loader.dataset)
    return loss / n, correct / n


train_loader = DataLoader(Spirals(200), batch_size=32, shuffle=True)
test_loader = DataLoader(Spirals(51), batch_size=64)
X, y = next(iter(test_loader))
print(f"Shape of X [N, C]: {X.shape}", f"Shape of y: {y.shape} {y.dtype}")
torch.manual_seed(0)
model = make_model()
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
test_loss, acc = evaluate(model, test_loader, loss_fn)
before = test_loss
print(f"before training: test loss {test_loss:.5f}, accuracy {acc:.4f}")
print("dropout is off in eval:", not model.training and torch.equal(model(X), model(X)))
model.train()
print("dropout is on in train:", model.training and not torch.equal(model(X), model(X)))
for epoch in range(4):
    train_loss = train_one_epoch(model, train_loader, loss_fn, optimizer)
    scheduler.step()
    test_loss, acc = evaluate(model, test_loader, loss_fn)
    print(f"~ epoch {epoch}: train loss {train_loss:.4f}, test loss {test_loss:.4f}, accuracy {acc:.3f}")
    print(f"epoch {epoch}: lr now {scheduler.get_last_lr()[0]:.4f}")
    if epoch == 1:
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(),
                    "scheduler_state_dict": scheduler.state_dict(), "loss": train_loss}, "checkpoint.pt")
        torch.manual_seed(7)
        after_resume_point = None
    if epoch == 2:
        after_resume_point = [p.detach().clone() for p in model.parameters()]
print("learned something:", test_loss < 0.9 * before)

ckpt = torch.load("checkpoint.pt")
model2 = make_model()
optimizer2 = torch.optim.SGD(model2.parameters(), lr=0.1, momentum=0.9)
scheduler2 = torch.optim.lr_scheduler.StepLR(optimizer2, step_size=2, gamma=0.5)
model2.load_state_dict(ckpt["model_state_dict"])
optimizer2.load_state_dict(ckpt["optimizer_state_dict"])
scheduler2.load_state_dict(ckpt["scheduler_state_dict"])
print("resuming after epoch", ckpt["epoch"], "momentum buffers:", len(optimizer2.state_dict()["state"]),
      "1.running_mean" in dict(model2.named_buffers()))
torch.manual_seed(7)
train_one_epoch(model2, train_loader, loss_fn, optimizer2)
scheduler2.step()
same = all(torch.allclose(a, b, atol=1e-6) for a, b in zip(after_resume_point, model2.parameters()))
print("resumed epoch 2 reproduces the weights:", same, "lr", scheduler2.get_last_lr())
print("num_batches_tracked", int(model2[1].num_batches_tracked))
