"""Learn the Basics, 7: Save and load the model -- its weights (state_dict), or the whole model.

A plain PyTorch program: ``python saveloadrun_tutorial.py`` runs it on PyTorch, ``ember run
saveloadrun_tutorial.py`` on ember.

The tutorial saves VGG16 with ImageNet weights, which it downloads (528 MB). Here ``--weights``
defaults to none (random weights, nothing downloaded) and ``--arch`` picks the torchvision model:
``--arch vgg16 --weights IMAGENET1K_V1`` is the tutorial exactly; ``--arch squeezenet1_1`` (5 MB of
weights) runs in a second or two.
"""

import argparse

import torch
import torchvision.models as models

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--arch", default="vgg16", help="a torchvision.models builder (default: vgg16)")
parser.add_argument("--weights", default=None,
                    help="pretrained weights to download, e.g. IMAGENET1K_V1 (default: none)")
args = parser.parse_args()
torch.manual_seed(0)
build = getattr(models, args.arch)

# An input to check that every reloaded copy computes what the original computes.
x = torch.rand(1, 3, 224, 224)

model = build(weights=args.weights)
model.eval()
with torch.no_grad():
    expected = model(x)

# --- Saving and loading the weights ----------------------------------------------------------
# state_dict() maps each parameter and buffer name to its tensor; save writes it to a file.
torch.save(model.state_dict(), "model_weights.pth")

model = build()  # same architecture, fresh random weights
model.load_state_dict(torch.load("model_weights.pth", weights_only=True))
model.eval()  # dropout and batch norm in inference mode before evaluating
with torch.no_grad():
    print(f"weights reloaded, same outputs: {torch.equal(model(x), expected)}")
print(f"{len(model.state_dict())} tensors in model_weights.pth")

# --- Saving and loading the whole model ------------------------------------------------------
# save(model) pickles the module object itself, so loading it imports its class again and needs
# weights_only=False: only load such files from sources you trust.
torch.save(model, "model.pth")
model = torch.load("model.pth", weights_only=False)
with torch.no_grad():
    print(f"whole model reloaded ({type(model).__name__}), same outputs: "
          f"{torch.equal(model(x), expected)}")
