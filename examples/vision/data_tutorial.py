"""Learn the Basics, 2: Datasets & DataLoaders -- a built-in dataset, a look at it, a custom
Dataset over image files, and batches from a DataLoader.

A plain PyTorch program. Under PyTorch with torchvision: ``python data_tutorial.py``; on ember:
``ember run data_tutorial.py``. Without a network, first write the local stand-in data with
``python make_data.py --out data`` and pass ``--no-download``. Figures are written to PNG files.
"""

import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")  # draw into files, never open a window

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402
from torchvision import datasets  # noqa: E402
from torchvision.transforms import ToTensor  # noqa: E402
from torchvision.transforms.functional import pil_to_tensor  # noqa: E402


def read_image(path):
    """The file's pixels as a uint8 C x H x W tensor, what torchvision.io.read_image returns.

    read_image itself needs torchvision's compiled image codecs (and ember.vision has no io
    module), so Pillow opens the file and pil_to_tensor converts it, on either library.
    """
    with Image.open(path) as img:
        return pil_to_tensor(img)


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--data", default="data", help="dataset root (default: data)")
parser.add_argument("--download", action=argparse.BooleanOptionalAction, default=True,
                    help="fetch the data when it is not in --data (default: yes)")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

# --- Loading a dataset -----------------------------------------------------------------------
training_data = datasets.FashionMNIST(root=args.data, train=True, download=args.download,
                                      transform=ToTensor())
test_data = datasets.FashionMNIST(root=args.data, train=False, download=args.download,
                                  transform=ToTensor())
print(training_data)

# --- Iterating and visualizing ---------------------------------------------------------------
labels_map = {
    0: "T-Shirt",
    1: "Trouser",
    2: "Pullover",
    3: "Dress",
    4: "Coat",
    5: "Sandal",
    6: "Shirt",
    7: "Sneaker",
    8: "Bag",
    9: "Ankle Boot",
}
figure = plt.figure(figsize=(8, 8))
cols, rows = 3, 3
for i in range(1, cols * rows + 1):
    sample_idx = torch.randint(len(training_data), size=(1,)).item()
    img, label = training_data[sample_idx]
    figure.add_subplot(rows, cols, i)
    plt.title(labels_map[label])
    plt.axis("off")
    plt.imshow(img.squeeze(), cmap="gray")
plt.savefig("fashion_samples.png")
plt.close(figure)
print("saved nine samples to fashion_samples.png")


# --- A custom Dataset for your files ---------------------------------------------------------
class CustomImageDataset(Dataset):
    """Images in img_dir, labels in a CSV file of "file name, label" rows."""

    def __init__(self, annotations_file, img_dir, transform=None, target_transform=None):
        with open(annotations_file, newline="") as f:
            self.img_labels = [(name, int(label)) for name, label in csv.reader(f)]
        self.img_dir = img_dir
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.img_labels)

    def __getitem__(self, idx):
        img_path = os.path.join(self.img_dir, self.img_labels[idx][0])
        image = read_image(img_path)
        label = self.img_labels[idx][1]
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


# write some test images as PNG files with a labels.csv, as a custom dataset would come
img_dir = "custom_images"
os.makedirs(img_dir, exist_ok=True)
raw = datasets.FashionMNIST(root=args.data, train=False, download=args.download)
with open(os.path.join(img_dir, "labels.csv"), "w", newline="") as f:
    writer = csv.writer(f)
    for i in range(20):
        img, label = raw[i]  # a PIL image and an int
        img.save(os.path.join(img_dir, f"img_{i:03d}.png"))
        writer.writerow([f"img_{i:03d}.png", label])

custom = CustomImageDataset(os.path.join(img_dir, "labels.csv"), img_dir,
                            transform=lambda x: x.float() / 255)
image, label = custom[3]
print(f"custom dataset: {len(custom)} items; item 3 is {tuple(image.shape)} {image.dtype} "
      f"with label {label}")
print(f"same pixels as the dataset: {torch.equal(image, test_data[3][0])}")

# --- Batches with DataLoaders ----------------------------------------------------------------
train_dataloader = DataLoader(training_data, batch_size=64, shuffle=True)
test_dataloader = DataLoader(test_data, batch_size=64, shuffle=True)

train_features, train_labels = next(iter(train_dataloader))
print(f"Feature batch shape: {train_features.size()}")
print(f"Labels batch shape: {train_labels.size()}")
img = train_features[0].squeeze()
label = train_labels[0]
plt.imshow(img, cmap="gray")
plt.savefig("first_in_batch.png")
plt.close()
print(f"Label: {label}")

# one epoch of batches: every image once, in shuffled order
seen = sum(len(labels) for _, labels in train_dataloader)
print(f"one pass over train_dataloader gives {seen} of {len(training_data)} images "
      f"in {len(train_dataloader)} batches")
