"""Resampling of ``[..., H, W]`` NumPy arrays, the arithmetic behind ``resize`` on tensors.

Each axis is resampled by an (out, in) weight matrix, so a resize is two matrix products. The
weights follow PyTorch's ``interpolate`` (align_corners=False): the antialiased bilinear/bicubic
filters (Pillow's, which torchvision uses by default), the plain bilinear/bicubic ones
(``antialias=False``) and the two nearest-neighbour index rules.
"""

from __future__ import annotations

import numpy as np


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(x))


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return np.where(x <= 1.0, near, np.where(x < 2.0, far, 0.0))


def _antialias_weights(n_in: int, n_out: int, cubic: bool) -> np.ndarray:
    """Pillow/PyTorch antialiased weights: the filter is stretched by the scale when shrinking."""
    scale = n_in / n_out
    base = 2.0 if cubic else 1.0  # half the filter's width
    support = base * scale if scale >= 1.0 else base
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)  # int() truncates toward zero, as C's cast does
        hi = min(int(center + support + 0.5), n_in)
        x = (np.arange(lo, hi) - center + 0.5) * invscale
        taps = _cubic(x, -0.5) if cubic else _triangle(x)
        total = taps.sum()
        w[i, lo:hi] = taps / total if total != 0 else taps
    return w


def _linear_weights(n_in: int, n_out: int) -> np.ndarray:
    scale = n_in / n_out
    src = np.maximum(scale * (np.arange(n_out) + 0.5) - 0.5, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    w = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(w, (rows, i0), 1.0 - frac)
    np.add.at(w, (rows, i1), frac)
    return w


def _cubic_weights(n_in: int, n_out: int) -> np.ndarray:
    """PyTorch's bicubic without antialiasing: a = -0.75, taps outside the image clamp to its edge."""
    scale = n_in / n_out
    src = scale * (np.arange(n_out) + 0.5) - 0.5
    i0 = np.floor(src).astype(np.int64)
    t = src - i0
    w = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    for k in range(4):
        taps = _cubic(t - (k - 1), -0.75)
        np.add.at(w, (rows, np.clip(i0 + k - 1, 0, n_in - 1)), taps)
    return w


def _nearest_index(n_in: int, n_out: int, exact: bool) -> np.ndarray:
    # PyTorch computes the scale and the source index in float32; doing the same keeps ties equal
    scale = np.float32(n_in) / np.float32(n_out)
    dst = np.arange(n_out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    return np.minimum(np.floor(dst * scale).astype(np.int64), n_in - 1)


def resample(x: np.ndarray, size: tuple[int, int], mode: str, antialias: bool,
             uint8_passes: bool = False) -> np.ndarray:
    """``x`` ([..., H, W], floating unless mode is nearest) resampled to ``size`` = (h, w).

    ``uint8_passes`` rounds and clips to [0, 255] after the horizontal pass, as PyTorch's native
    uint8 kernel (which torchvision's v2 uses) and Pillow do.
    """
    h_in, w_in = x.shape[-2:]
    h_out, w_out = size
    if min(h_out, w_out) <= 0 or min(h_in, w_in) <= 0:
        raise ValueError(f"resize needs a non-empty input and output, got {(h_in, w_in)} -> {size}")
    if mode in ("nearest", "nearest-exact"):
        rows = _nearest_index(h_in, h_out, mode == "nearest-exact")
        cols = _nearest_index(w_in, w_out, mode == "nearest-exact")
        return x[..., rows[:, None], cols[None, :]]
    if mode not in ("bilinear", "bicubic"):
        raise ValueError(f"interpolation {mode!r} is not supported for tensors: use nearest, "
                         "nearest-exact, bilinear or bicubic (or a PIL image for box, hamming, lanczos)")
    if antialias:
        wh = _antialias_weights(h_in, h_out, mode == "bicubic")
        ww = _antialias_weights(w_in, w_out, mode == "bicubic")
    elif mode == "bilinear":
        wh, ww = _linear_weights(h_in, h_out), _linear_weights(w_in, w_out)
    else:
        wh, ww = _cubic_weights(h_in, h_out), _cubic_weights(w_in, w_out)
    wh, ww = wh.astype(x.dtype), ww.astype(x.dtype)
    rows = np.matmul(x, ww.T)
    if uint8_passes:
        rows = np.clip(np.round(rows), 0, 255)
    return np.matmul(wh, rows)


def resized_shape(height: int, width: int, size: list[int] | None, max_size: int | None) -> list[int]:
    """torchvision's output size rule: one number matches the shorter edge, keeping the aspect."""
    short, long = (width, height) if width <= height else (height, width)
    if size is None:
        if not isinstance(max_size, int):
            raise ValueError(f"max_size must be an integer when size is None, got {max_size!r}")
        new_short, new_long = int(max_size * short / long), max_size
    elif len(size) == 1:
        new_short, new_long = size[0], int(size[0] * long / short)
        if max_size is not None:
            if max_size <= size[0]:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested "
                                 f"size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
    else:
        return [int(size[0]), int(size[1])]
    return [new_long, new_short] if width <= height else [new_short, new_long]

