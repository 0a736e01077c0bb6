"""Learn the Basics, 3: Transforms -- ToTensor for the images, a Lambda one-hot for the labels.

A plain PyTorch program. Under PyTorch with torchvision: ``python transforms_tutorial.py``; on ember:
``ember run transforms_tutorial.py``. Without a network, first write the local stand-in data with
``python make_data.py --out data`` and pass ``--no-download``.
"""

import argparse

import torch
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import Lambda, ToTensor

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--data", default="data", help="dataset root (default: data)")
parser.add_argument("--download", action=argparse.BooleanOptionalAction, default=True,
                    help="fetch the data when it is not in --data (default: yes)")
args = parser.parse_args()

# ToTensor: a PIL image (or NumPy array) of 0..255 becomes a float tensor C x H x W in [0, 1].
# The Lambda turns the integer label into a one-hot vector of 10 floats: scatter_ writes 1 at
# the label's index of a zero vector.
ds = datasets.FashionMNIST(
    root=args.data,
    train=True,
    download=args.download,
    transform=ToTensor(),
    target_transform=Lambda(lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)),
)

image, target = ds[0]
print(f"image: {type(image).__name__} {tuple(image.shape)} {image.dtype}, "
      f"values {image.min().item():.1f}..{image.max().item():.1f}")
print(f"raw pixels were {ds.data.dtype} {ds.data.min().item()}..{ds.data.max().item()}")
print(f"target: {target}")
print(f"label {ds.targets[0].item()} -> one-hot index {target.argmax().item()}")

# A DataLoader stacks the one-hot targets into a batch x 10 matrix.
images, targets = next(iter(DataLoader(ds, batch_size=64)))
print(f"batch: images {tuple(images.shape)}, targets {tuple(targets.shape)} {targets.dtype}")
print(f"every row is one-hot: {bool((targets.sum(1) == 1).all())}")
print(f"rows agree with the labels: {torch.equal(targets.argmax(1), ds.targets[:64])}")
