"""Learn the Basics, 4: Build the neural network -- nn.Module, its layers, and its parameters.

A plain PyTorch program: ``python buildmodel_tutorial.py`` runs it on PyTorch, ``ember run
buildmodel_tutorial.py`` on ember. It needs no data.
"""

import torch
from torch import nn

torch.manual_seed(0)

# an accelerator when there is one, else the CPU
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")


class NeuralNetwork(nn.Module):
    """Layers are made in __init__; forward says how an input flows through them."""

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


model = NeuralNetwork().to(device)
print(model)

# Calling the model runs forward (and any hooks); never call forward directly.
X = torch.rand(1, 28, 28, device=device)
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
y_pred = pred_probab.argmax(1)
print(f"Predicted class: {y_pred}")

# The layers one at a time, on a minibatch of three 28x28 images.
input_image = torch.rand(3, 28, 28)
print(input_image.size())

flatten = nn.Flatten()  # keeps dimension 0 (the batch), flattens the rest
flat_image = flatten(input_image)
print(flat_image.size())

layer1 = nn.Linear(in_features=28 * 28, out_features=20)
hidden1 = layer1(flat_image)
print(hidden1.size())

print(f"Before ReLU: {hidden1}\n\n")
hidden1 = nn.ReLU()(hidden1)
print(f"After ReLU: {hidden1}")

seq_modules = nn.Sequential(
    flatten,
    layer1,
    nn.ReLU(),
    nn.Linear(20, 10),
)
input_image = torch.rand(3, 28, 28)
logits = seq_modules(input_image)

softmax = nn.Softmax(dim=1)
pred_probab = softmax(logits)
print(f"Probabilities sum to 1: {torch.allclose(pred_probab.sum(1), torch.ones(3))}")

# Every parameter of every submodule, with its name.
print(f"Model structure: {model}\n\n")
for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {param.size()} | Values : {param[:2]} \n")
