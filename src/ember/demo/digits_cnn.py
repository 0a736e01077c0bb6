"""Train a small CNN on handwritten digits (scikit-learn's bundled load_digits: 1,797 8x8 images,
no download), report test accuracy, and save curves, a prediction grid and the checkpoint.

Plain PyTorch code: `python digits_cnn.py` runs it on PyTorch, `ember run digits_cnn.py` (or
`ember demo`) runs the very same file on ember.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def load_data(seed: int, n_test: int = 360):
    """Scaled 1x8x8 float images and int64 labels, split into train and test sets."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:n_test], order[n_test:]
    as_tensors = lambda idx: (torch.from_numpy(images[idx]).unsqueeze(1),  # noqa: E731
                              torch.from_numpy(labels[idx]))
    return as_tensors(train), as_tensors(test)


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),                                  # 64 x 4 x 4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25),
            nn.Linear(64 * 4 * 4, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, X, y, device):
    model.eval()
    with torch.no_grad():
        logits = model(X.to(device))
        loss = nn.functional.cross_entropy(logits, y.to(device)).item()
        pred = logits.argmax(1).cpu()
    return loss, (pred == y).float().mean().item(), pred


def progress(iterable, desc):
    if not sys.stderr.isatty():  # a log file: no bar redraws (the epoch lines still print)
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, desc=desc, leave=True, dynamic_ncols=True)


def save_plots(out: Path, history, X_test, y_test, pred):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plots")
        return []
    epochs = range(1, len(history["train_loss"]) + 1)
    fig, ax1 = plt.subplots(figsize=(7, 4))
    ax1.plot(epochs, history["train_loss"], "o-", color="tab:blue", label="training loss")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("training loss", color="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(epochs, [100 * a for a in history["test_acc"]], "s-", color="tab:orange",
             label="test accuracy")
    ax2.set_ylabel("test accuracy (%)", color="tab:orange")
    ax1.set_title("Digits CNN: training loss and test accuracy per epoch")
    fig.tight_layout()
    curves = out / "curves.png"
    fig.savefig(curves, dpi=120)
    plt.close(fig)

    n = min(48, len(y_test))
    cols = 12
    fig, axes = plt.subplots(n // cols, cols, figsize=(cols * 0.9, (n // cols) * 1.1))
    for i, ax in enumerate(axes.flat):
        ax.imshow(X_test[i, 0].numpy(), cmap="gray_r")
        right = int(pred[i]) == int(y_test[i])
        ax.set_title(f"{int(pred[i])}" if right else f"{int(pred[i])} (true {int(y_test[i])})",
                     color="black" if right else "red", fontsize=8)
        ax.axis("off")
    fig.suptitle("Test digits with predicted labels (wrong ones in red)", fontsize=10)
    fig.tight_layout()
    grid = out / "predictions.png"
    fig.savefig(grid, dpi=120)
    plt.close(fig)
    return [curves, grid]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/digits", help="folder for plots and checkpoint")
    args = parser.parse_args(argv)

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    (X_train, y_train), (X_test, y_test) = load_data(args.seed)
    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=args.batch_size, shuffle=True)
    model = DigitsCNN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training on {len(X_train)} digits, testing on {len(X_test)}, device {device}")

    history = {"train_loss": [], "test_acc": []}
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        total, correct, seen = 0.0, 0, 0
        bar = progress(loader, f"epoch {epoch + 1:>2}/{args.epochs}")
        for xb, yb in bar:
            xb, yb = xb.to(device), yb.to(device)
            logits = model(xb)
            loss = loss_fn(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
            seen += len(yb)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{total / seen:.4f}", acc=f"{correct / seen:.3f}")
        _, test_acc, pred = evaluate(model, X_test, y_test, device)
        history["train_loss"].append(total / seen)
        history["test_acc"].append(test_acc)
        if hasattr(bar, "write"):
            bar.write(f"epoch {epoch + 1}: train loss {total / seen:.4f}, test accuracy {100 * test_acc:.1f}%")
        else:
            print(f"epoch {epoch + 1}: train loss {total / seen:.4f}, test accuracy {100 * test_acc:.1f}%")
    elapsed = time.perf_counter() - start

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "model.pt"
    torch.save(model.state_dict(), checkpoint)
    written = save_plots(out, history, X_test, y_test, pred) + [checkpoint]
    print(f"trained {args.epochs} epochs in {elapsed:.1f} s")
    print(f"test accuracy {100 * history['test_acc'][-1]:.1f}%")
    for path in written:
        print(f"wrote {path}")
    return history


if __name__ == "__main__":
    main()
