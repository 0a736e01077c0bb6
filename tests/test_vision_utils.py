"""ember.vision.utils: make_grid's layout and normalisation against NumPy, save_image re-read with
Pillow, draw_bounding_boxes' pixels, and all three against real torchvision where installed."""

from __future__ import annotations

import io

import numpy as np
import pytest
from vision_reference import real_torchvision

import ember
from ember.vision import utils

Image = pytest.importorskip("PIL.Image")
TV = real_torchvision()
needs_tv = pytest.mark.skipif(TV is None, reason="needs real torchvision (and torch)")
if TV is not None:
    import torch
    import torchvision.utils as TU

RS = np.random.RandomState(0)
X = (RS.rand(5, 3, 7, 9) * 3 - 1).astype(np.float32)
IMG = RS.randint(0, 256, (3, 40, 50), dtype=np.uint8)
BOXES = np.array([[1, 2, 20, 30], [10, 5, 45, 38]], dtype=np.float32)


def et(a: np.ndarray) -> ember.Tensor:
    return ember.from_numpy(a.copy())


def test_make_grid_layout_against_numpy():
    g = utils.make_grid(et(X), nrow=2, padding=1, pad_value=0.5).numpy()
    assert g.dtype == np.float32 and g.shape == (3, 3 * 8 + 1, 2 * 10 + 1)
    for k in range(5):
        y, x = divmod(k, 2)
        np.testing.assert_array_equal(g[:, 1 + 8 * y: 8 + 8 * y, 1 + 10 * x: 10 + 10 * x], X[k])
    assert (g[:, 0] == 0.5).all() and (g[:, 17:, 11:] == 0.5).all()  # padding and the empty sixth cell
    one = utils.make_grid(et(X[:1]))
    np.testing.assert_array_equal(one.numpy(), X[0])  # a single image comes back unpadded
    gray = utils.make_grid([et(X[0, :1]), et(X[1, :1])], padding=0).numpy()
    np.testing.assert_array_equal(gray[1], np.concatenate([X[0, 0], X[1, 0]], axis=1))  # 1 channel -> 3
    u8 = utils.make_grid(et(IMG[None].repeat(3, 0)), nrow=3)
    assert u8.dtype == ember.uint8


def test_make_grid_normalize_against_numpy():
    g = utils.make_grid(et(X), normalize=True, padding=0, nrow=5).numpy()
    ref = (X - X.min()) / (X.max() - X.min())
    np.testing.assert_allclose(g, np.concatenate(list(ref), axis=2), rtol=1e-6, atol=1e-7)
    each = utils.make_grid(et(X), normalize=True, scale_each=True, padding=0, nrow=5).numpy()
    for k in range(5):
        tile = each[:, :, 9 * k: 9 * (k + 1)]
        assert tile.min() == 0.0 and abs(tile.max() - 1.0) < 1e-6
    clipped = utils.make_grid(et(X), normalize=True, value_range=(0.0, 1.0), padding=0, nrow=5).numpy()
    np.testing.assert_array_equal(clipped, np.concatenate(list(np.clip(X, 0, 1)), axis=2))
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(et(X), normalize=True, value_range=[0, 1])
    with pytest.raises(TypeError, match="tensor or list of tensors"):
        utils.make_grid(X)


def test_save_image_reads_back_with_pillow(tmp_path):
    path = tmp_path / "grid.png"
    utils.save_image(et(np.clip(X, 0, 1)), path, nrow=3)
    back = np.asarray(Image.open(path))
    grid = utils.make_grid(et(np.clip(X, 0, 1)), nrow=3).numpy()
    np.testing.assert_array_equal(back, np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0))
    buf = io.BytesIO()
    utils.save_image(et(np.clip(X[0], 0, 1)), buf, format="png")
    assert np.asarray(Image.open(io.BytesIO(buf.getvalue()))).shape == (7, 9, 3)
    jpg = tmp_path / "x.jpg"
    utils.save_image(et(np.clip(X[0], 0, 1)), jpg)
    assert Image.open(jpg).format == "JPEG"


def test_draw_bounding_boxes_pixels():
    out = utils.draw_bounding_boxes(et(IMG), et(BOXES), colors=["red", (0, 255, 0)], width=1).numpy()
    assert out.dtype == np.uint8 and out.shape == IMG.shape
    np.testing.assert_array_equal(out[:, 2, 1:21], np.array([[255], [0], [0]]).repeat(20, 1))  # top edge
    np.testing.assert_array_equal(out[:, 5:39, 45], np.array([[0], [255], [0]]).repeat(34, 1))  # right edge
    np.testing.assert_array_equal(out[:, 15, 5], IMG[:, 15, 5])  # inside, unfilled
    filled = utils.draw_bounding_boxes(et(IMG), et(BOXES[:1]), colors="blue", fill=True).numpy()
    inner = IMG[:, 10, 5].astype(float)
    assert np.abs(filled[:, 10, 5] - (inner * 155 + np.array([0, 0, 255]) * 100) / 255).max() <= 1
    f = utils.draw_bounding_boxes(et(IMG.astype(np.float32) / 255), et(BOXES), labels=["a", "b"])
    assert f.dtype == ember.float32
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        utils.draw_bounding_boxes(et(IMG), et(BOXES[:, [2, 1, 0, 3]]))
    with pytest.raises(ValueError, match="labels"):
        utils.draw_bounding_boxes(et(IMG), et(BOXES), labels=["a"])
    with pytest.raises(ValueError, match="uint8 or float"):
        utils.draw_bounding_boxes(et(IMG.astype(np.int32)), et(BOXES))


@needs_tv
def test_against_torchvision():
    for kw in [{}, {"nrow": 2, "padding": 1, "pad_value": 0.5}, {"normalize": True},
               {"normalize": True, "value_range": (0.0, 1.0)}, {"normalize": True, "scale_each": True, "nrow": 3}]:
        ours, theirs = utils.make_grid(et(X), **kw).numpy(), TU.make_grid(torch.from_numpy(X.copy()), **kw).numpy()
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    a, b = io.BytesIO(), io.BytesIO()
    utils.save_image(et(X), a, format="png", nrow=2)
    TU.save_image(torch.from_numpy(X.copy()), b, format="png", nrow=2)
    np.testing.assert_array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))
    for kw in [{}, {"labels": ["cat", "dog"], "colors": ["red", (0, 255, 0)], "width": 2},
               {"fill": True, "labels": ["a", "b"]}, {"colors": "yellow", "label_colors": "white", "labels": ["x", "y"]}]:
        for img in (IMG, IMG[:1]):
            ours = utils.draw_bounding_boxes(et(img), et(BOXES), **kw).numpy()
            theirs = TU.draw_bounding_boxes(torch.from_numpy(img.copy()), torch.from_numpy(BOXES), **kw).numpy()
            np.testing.assert_array_equal(ours, theirs)
    fimg = IMG.astype(np.float32) / 255
    ours = utils.draw_bounding_boxes(et(fimg), et(BOXES), labels=["a", "b"]).numpy()
    theirs = TU.draw_bounding_boxes(torch.from_numpy(fimg), torch.from_numpy(BOXES), labels=["a", "b"]).numpy()
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_array_equal(ours, theirs)
