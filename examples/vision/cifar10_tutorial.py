"""Training a Classifier -- a small CNN learns CIFAR-10's ten classes.

A plain PyTorch program. Under PyTorch with torchvision: ``python cifar10_tutorial.py``; on ember:
``ember run cifar10_tutorial.py``. Without a network, first write the local stand-in data with
``python make_data.py --out data`` and pass ``--no-download`` (its images are coloured handwritten
digits labelled with CIFAR-10's class names; see docs/vision/tutorials.md).

Steps: load and normalise the images, look at a few, define a convolutional network, a loss and an
optimizer, train for two epochs, save the weights, reload them and measure the accuracy on the test
images, overall and for each class.
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")  # draw into files, never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.optim as optim  # noqa: E402
import torchvision  # noqa: E402
import torchvision.transforms as transforms  # noqa: E402


def use_stand_in_checksums(root):
    """Let CIFAR10 accept the local stand-in written by make_data.py.

    torchvision checks every CIFAR-10 batch file against the md5 sum of the original download and
    refuses anything else ("Dataset not found or corrupted"). make_data.py records the sums of the
    files it wrote in STAND_IN.json; here they replace the original sums on the class, so the files
    are still checked, against what they should be. Without STAND_IN.json nothing changes.
    """
    note = os.path.join(root, "STAND_IN.json")
    if not os.path.exists(note):
        return
    with open(note) as f:
        md5 = json.load(f)["cifar10_md5"]
    cls = torchvision.datasets.CIFAR10
    cls.train_list = [[name, md5[name]] for name, _ in cls.train_list]
    cls.test_list = [[name, md5[name]] for name, _ in cls.test_list]
    cls.meta = {**cls.meta, "md5": md5[cls.meta["filename"]]}
    print(f"Checking the CIFAR-10 files against the stand-in's md5 sums in {note}")


def imshow(img, path):
    img = img / 2 + 0.5  # undo Normalize: back from [-1, 1] to [0, 1]
    npimg = img.numpy()
    plt.figure()
    plt.imshow(np.transpose(npimg, (1, 2, 0)))  # C x H x W -> H x W x C
    plt.axis("off")
    plt.savefig(path)
    plt.close()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))   # 3x32x32 -> 6x28x28 -> 6x14x14
        x = self.pool(F.relu(self.conv2(x)))   # -> 16x10x10 -> 16x5x5
        x = torch.flatten(x, 1)                # everything but the batch dimension
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="./data", help="dataset root (default: ./data)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--log-every", type=int, default=2000, help="print the loss every N batches")
    parser.add_argument("--download", action=argparse.BooleanOptionalAction, default=True,
                        help="fetch the data when it is not in --data (default: yes)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    use_stand_in_checksums(args.data)

    # ToTensor gives [0, 1]; Normalize with mean 0.5 and std 0.5 per channel maps that to [-1, 1].
    transform = transforms.Compose(
        [transforms.ToTensor(),
         transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])

    batch_size = 4
    trainset = torchvision.datasets.CIFAR10(root=args.data, train=True,
                                            download=args.download, transform=transform)
    trainloader = torch.utils.data.DataLoader(trainset, batch_size=batch_size,
                                              shuffle=True, num_workers=args.workers)
    testset = torchvision.datasets.CIFAR10(root=args.data, train=False,
                                           download=args.download, transform=transform)
    testloader = torch.utils.data.DataLoader(testset, batch_size=batch_size,
                                             shuffle=False, num_workers=args.workers)
    classes = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")

    # a look at one training batch
    dataiter = iter(trainloader)
    images, labels = next(dataiter)
    imshow(torchvision.utils.make_grid(images), "cifar_train_batch.png")
    print(" ".join(f"{classes[labels[j]]:5s}" for j in range(batch_size)))

    net = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)

    for epoch in range(args.epochs):  # passes over the training set
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data  # a batch: [inputs, labels]

            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()

            running_loss += loss.item()
            if i % args.log_every == args.log_every - 1:
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / args.log_every:.3f}")
                running_loss = 0.0
    print("Finished Training")

    PATH = "./cifar_net.pth"
    torch.save(net.state_dict(), PATH)

    # the network's guesses for the first test batch
    dataiter = iter(testloader)
    images, labels = next(dataiter)
    imshow(torchvision.utils.make_grid(images), "cifar_test_batch.png")
    print("GroundTruth: ", " ".join(f"{classes[labels[j]]:5s}" for j in range(batch_size)))

    net = Net()
    net.load_state_dict(torch.load(PATH, weights_only=True))
    outputs = net(images)
    _, predicted = torch.max(outputs, 1)
    print("Predicted: ", " ".join(f"{classes[predicted[j]]:5s}" for j in range(batch_size)))

    correct = 0
    total = 0
    with torch.no_grad():  # no gradients are needed to evaluate
        for data in testloader:
            images, labels = data
            outputs = net(images)
            _, predicted = torch.max(outputs, 1)  # the class with the highest score
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    print(f"Accuracy of the network on the {total} test images: {100 * correct // total} %")

    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for data in testloader:
            images, labels = data
            outputs = net(images)
            _, predictions = torch.max(outputs, 1)
            for label, prediction in zip(labels, predictions):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    for classname, correct_count in correct_pred.items():
        accuracy = 100 * float(correct_count) / total_pred[classname]
        print(f"Accuracy for class: {classname:5s} is {accuracy:.1f} %")

    # the same network would train on a GPU after net.to(device) and inputs.to(device)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    print(device)


if __name__ == "__main__":  # worker processes import this file; only the parent runs main()
    main()
