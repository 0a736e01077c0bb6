"""Write small stand-ins for FashionMNIST and CIFAR-10 in the datasets' real on-disk layout.

The beginner tutorials download FashionMNIST (70,000 clothing images) and CIFAR-10 (60,000 photos).
Neither can be fetched here (no network), and tests must never try. This program makes both from
data that a package ships instead: scikit-learn's 1,797 handwritten digits (8x8, 17 grey levels).

- ``<out>/FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` and the same names with
  ``.gz``, as torchvision leaves them after a download: each digit is scaled to 18-21 pixels,
  placed in the middle of a 28x28 black image give or take a pixel, and labelled with its digit
  (so class 0, "T-shirt/top", holds zeros, class 1, "Trouser", holds ones, and so on).
- ``<out>/cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``: each digit drawn in a
  random light colour, 22-26 pixels tall, near the middle of a 32x32 RGB image whose background is
  a random dark colour with a gradient, a small block of another colour and Gaussian noise. The files are pickles in the form
  Python 2's cPickle wrote the originals in (protocol 2, byte strings, ``data`` a uint8 N x 3072
  array of red, green and blue planes, ``labels`` a list of ints). The digit is the label, so class
  0, "airplane", holds zeros.
- ``<out>/STAND_IN.json``: what was written, how, and the md5 sum of every CIFAR file. torchvision
  checks each CIFAR batch against the md5 of the original file, so the tutorial programs read these
  sums and give them to the dataset class (see ``use_stand_in_checksums`` in cifar10_tutorial.py).

Train and test images come from disjoint sets of the digits. The same seed writes the same bytes.

    python make_data.py --out data            # then: ember run quickstart.py --data data
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import pickle
import struct
from pathlib import Path

import numpy as np
from PIL import Image

FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Ankle boot"]
CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                 "truck"]


def load_digit_split(seed: int, n_test_sources: int = 360) -> tuple[tuple[np.ndarray, np.ndarray],
                                                                   tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's digits as float 0..1 8x8 images, split into disjoint train/test sources."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:n_test_sources], order[n_test_sources:]
    return (images[train], labels[train]), (images[test], labels[test])


def _scaled(glyph: np.ndarray, size: int) -> np.ndarray:
    """An 8x8 0..1 glyph resized to size x size with bilinear filtering, still 0..1."""
    img = Image.fromarray(glyph.astype(np.float32), mode="F")
    return np.clip(np.asarray(img.resize((size, size), Image.BILINEAR)), 0.0, 1.0)


def render_gray(sources: tuple[np.ndarray, np.ndarray], n: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """n 28x28 uint8 images of randomly chosen source digits, each scaled and shifted at random."""
    glyphs, labels = sources
    pick = rng.integers(0, len(glyphs), size=n)
    out = np.zeros((n, 28, 28), dtype=np.uint8)
    for i, j in enumerate(pick):
        size = int(rng.integers(18, 22))
        top = (28 - size) // 2 + int(rng.integers(-1, 2))
        left = (28 - size) // 2 + int(rng.integers(-1, 2))
        out[i, top:top + size, left:left + size] = np.round(_scaled(glyphs[j], size) * 255)
    return out, labels[pick].astype(np.uint8)


def render_colour(sources: tuple[np.ndarray, np.ndarray], n: int, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
    """n 32x32x3 uint8 images: a light digit of a random colour on a dark, noisy, coloured
    gradient, with a small block of another colour somewhere."""
    glyphs, labels = sources
    pick = rng.integers(0, len(glyphs), size=n)
    out = np.zeros((n, 32, 32, 3), dtype=np.uint8)
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32) / 31.0
    for i, j in enumerate(pick):
        bg, fg = rng.uniform(0, 110, size=3), rng.uniform(150, 255, size=3)
        angle = rng.uniform(0, 2 * np.pi)
        ramp = (np.cos(angle) * xx + np.sin(angle) * yy)[..., None]   # -1.4..1.4 across the image
        img = bg + ramp * rng.uniform(-40, 40, size=3)
        h, w = (int(v) for v in rng.integers(3, 6, size=2))
        y0, x0 = (int(v) for v in rng.integers(0, 32 - 6, size=2))
        img[y0:y0 + h, x0:x0 + w] = rng.uniform(0, 255, size=3)
        size = int(rng.integers(22, 27))
        top, left = ((32 - size) // 2 + int(v) for v in rng.integers(-2, 3, size=2))
        top, left = min(max(top, 0), 32 - size), min(max(left, 0), 32 - size)
        mask = np.zeros((32, 32, 1), dtype=np.float32)
        mask[top:top + size, left:left + size, 0] = _scaled(glyphs[j], size)
        img = img * (1 - mask) + fg * mask + rng.normal(0, 12, size=img.shape)
        out[i] = np.clip(np.round(img), 0, 255).astype(np.uint8)
    return out, labels[pick].astype(np.int64)


def idx_bytes(array: np.ndarray) -> bytes:
    """The idx ("ubyte") form of a uint8 array: 0, 0, type 0x08, rank, big-endian sizes, values."""
    assert array.dtype == np.uint8
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


class _Python2Pickler(pickle._Pickler):  # type: ignore[name-defined]  # the pure-Python pickler
    """Protocol 2 as Python 2's cPickle wrote it: text and raw bytes as byte strings (BINSTRING),
    arrays rebuilt by ``numpy.core.multiarray._reconstruct``."""

    dispatch = pickle._Pickler.dispatch.copy()  # type: ignore[attr-defined]

    def save_py2_string(self, obj: str | bytes) -> None:
        data = obj.encode("latin-1") if isinstance(obj, str) else obj
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[str] = save_py2_string
    dispatch[bytes] = save_py2_string

    def save_global(self, obj: object, name: str | None = None) -> None:
        if getattr(obj, "__name__", None) == "_reconstruct":  # NumPy 2 names it numpy._core...
            self.write(pickle.GLOBAL + b"numpy.core.multiarray\n_reconstruct\n")
            self.memoize(obj)
        else:
            super().save_global(obj, name)


def python2_pickle(obj: object) -> bytes:
    import io

    buf = io.BytesIO()
    _Python2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def write_fashion_mnist(out: Path, train: tuple[np.ndarray, np.ndarray],
                        test: tuple[np.ndarray, np.ndarray]) -> None:
    raw = out / "FashionMNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, (images, labels) in (("train", train), ("t10k", test)):
        for kind, array in (("images-idx3", images), ("labels-idx1", labels)):
            data = idx_bytes(array)
            (raw / f"{prefix}-{kind}-ubyte").write_bytes(data)
            (raw / f"{prefix}-{kind}-ubyte.gz").write_bytes(gzip.compress(data, mtime=0))


def write_cifar10(out: Path, train: tuple[np.ndarray, np.ndarray],
                  test: tuple[np.ndarray, np.ndarray]) -> dict[str, str]:
    """The python batches; returns each file's md5."""
    folder = out / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)

    def batch(images: np.ndarray, labels: np.ndarray, label: str, start: int) -> dict[str, object]:
        planes = images.transpose(0, 3, 1, 2).reshape(len(images), 3 * 32 * 32)  # R, G, B planes
        names = [f"{CIFAR_CLASSES[t]}_digit_s_{start + k:06d}.png" for k, t in enumerate(labels)]
        return {"batch_label": label, "labels": [int(t) for t in labels],
                "data": np.ascontiguousarray(planes), "filenames": names}

    files: dict[str, bytes] = {}
    images, labels = train
    chunks = np.array_split(np.arange(len(images)), 5)
    for k, rows in enumerate(chunks, start=1):
        files[f"data_batch_{k}"] = python2_pickle(
            batch(images[rows], labels[rows], f"training batch {k} of 5", int(rows[0])))
    files["test_batch"] = python2_pickle(batch(test[0], test[1], "testing batch 1 of 1", 0))
    files["batches.meta"] = python2_pickle({"num_cases_per_batch": len(chunks[0]),
                                            "label_names": CIFAR_CLASSES, "num_vis": 3072})
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return {name: hashlib.md5(data).hexdigest() for name, data in files.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data", help="the root folder the tutorials read (default: data)")
    parser.add_argument("--train", type=int, default=4000, help="training images per dataset")
    parser.add_argument("--test", type=int, default=500, help="test images per dataset")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    out = Path(args.out)
    rng = np.random.default_rng(args.seed)
    train_src, test_src = load_digit_split(args.seed)
    write_fashion_mnist(out, render_gray(train_src, args.train, rng), render_gray(test_src, args.test, rng))
    md5s = write_cifar10(out, render_colour(train_src, args.train, rng),
                         render_colour(test_src, args.test, rng))
    note = {
        "what": "stand-ins for FashionMNIST and CIFAR-10 in their on-disk layout; the images are "
                "scikit-learn's handwritten digits, labelled with the digit",
        "seed": args.seed, "train_images": args.train, "test_images": args.test,
        "fashion_mnist_classes": FASHION_CLASSES, "cifar10_classes": CIFAR_CLASSES,
        "cifar10_md5": md5s,
    }
    (out / "STAND_IN.json").write_text(json.dumps(note, indent=1) + "\n")
    print(f"wrote {args.train} training and {args.test} test images each to "
          f"{out / 'FashionMNIST' / 'raw'} and {out / 'cifar-10-batches-py'}")


if __name__ == "__main__":
    main()
