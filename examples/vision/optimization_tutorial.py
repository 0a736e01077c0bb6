"""Learn the Basics, 6: Optimizing the model parameters -- hyperparameters, a loss, an optimizer,
and the train and test loops.

A plain PyTorch program. Under PyTorch with torchvision: ``python optimization_tutorial.py``; on
ember: ``ember run optimization_tutorial.py``. Without a network, first write the local stand-in
data with ``python make_data.py --out data`` and pass ``--no-download``.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import ToTensor

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--data", default="data", help="dataset root (default: data)")
parser.add_argument("--epochs", type=int, default=10, help="default: the tutorial's 10")
parser.add_argument("--lr", type=float, default=1e-3, help="learning rate (default: the tutorial's 1e-3)")
parser.add_argument("--download", action=argparse.BooleanOptionalAction, default=True,
                    help="fetch the data when it is not in --data (default: yes)")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

training_data = datasets.FashionMNIST(root=args.data, train=True, download=args.download,
                                      transform=ToTensor())
test_data = datasets.FashionMNIST(root=args.data, train=False, download=args.download,
                                  transform=ToTensor())

# Hyperparameters: how far each step goes, how many samples each step sees, how many passes.
learning_rate = args.lr
batch_size = 64
epochs = args.epochs

train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork()

# The loss compares the logits with the labels (log-softmax and negative log-likelihood in one);
# the optimizer changes the parameters along their gradients.
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)


def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()  # training mode (matters for dropout and batch norm; harmless here)
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)

        loss.backward()        # gradients of the loss for every parameter
        optimizer.step()       # move the parameters
        optimizer.zero_grad()  # gradients add up unless cleared

        if batch % 100 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test_loop(dataloader, model, loss_fn):
    model.eval()  # evaluation mode
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0
    with torch.no_grad():  # no graph is needed to evaluate
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")


for t in range(epochs):
    print(f"Epoch {t + 1}\n-------------------------------")
    train_loop(train_dataloader, model, loss_fn, optimizer)
    test_loop(test_dataloader, model, loss_fn)
print("Done!")
