"""NumPy kernels for tensor images (``[..., C, H, W]`` arrays): padding, rotation, colour.

They do torchvision's arithmetic in the same dtype (float32 for integer images) and the same
order, so uint8 results that torchvision truncates come out equal rather than off by one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import ember

_INT_MAX = {np.dtype(np.uint8): 255, np.dtype(np.int8): 127, np.dtype(np.int16): 32767,
            np.dtype(np.uint16): 65535, np.dtype(np.int32): 2**31 - 1, np.dtype(np.int64): 2**63 - 1}


def to_numpy(t: ember.Tensor) -> np.ndarray:
    """The tensor's values as a NumPy array (a copy where the tensor lives off the CPU)."""
    return t.detach().cpu().numpy()


def from_numpy(a: np.ndarray, like: ember.Tensor) -> ember.Tensor:
    """A tensor holding ``a`` on ``like``'s device."""
    out = ember.from_numpy(np.ascontiguousarray(a))
    return out if like.device.type == "cpu" else out.to(like.device)


def max_value(dtype: np.dtype) -> int:
    """The value of full intensity: 1 for floating images, the type's maximum for integers."""
    return _INT_MAX.get(np.dtype(dtype), 1)


def work_dtype(dtype: np.dtype) -> np.dtype:
    """The floating type arithmetic on an image of ``dtype`` runs in (float32 for integers)."""
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float32)


def cast_back(x: np.ndarray, dtype: np.dtype, rounding: bool) -> np.ndarray:
    """``x`` (floating) as ``dtype``; integers are rounded first where torchvision rounds."""
    if np.dtype(dtype).kind == "f":
        return x.astype(dtype, copy=False)
    return (np.round(x) if rounding else x).astype(dtype)


# --- padding ---------------------------------------------------------------------------------

def pad(a: np.ndarray, left: int, top: int, right: int, bottom: int, fill: object,
        mode: str) -> np.ndarray:
    """Pad (or, for negative amounts, crop) the last two axes."""
    h, w = a.shape[-2:]
    a = a[..., max(-top, 0): h - max(-bottom, 0), max(-left, 0): w - max(-right, 0)]
    widths = [(0, 0)] * (a.ndim - 2) + [(max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))]
    if mode == "constant":
        fills = _channel_fill(fill, a)
        if fills is None or fills.size == 1:
            value = 0 if fills is None else fills.reshape(()).item()
            return np.pad(a, widths, mode="constant", constant_values=value)
        out = np.pad(a, widths, mode="constant")
        inner = np.ones(a.shape[-2:], dtype=bool)
        border = ~np.pad(inner, widths[-2:], mode="constant")
        out[..., border] = fills.reshape(-1, 1).astype(a.dtype)
        return out
    return np.pad(a, widths, mode={"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}[mode])


def _channel_fill(fill: object, a: np.ndarray) -> np.ndarray | None:
    """``fill`` as an array of one value or one per channel; errors name the mismatch."""
    if fill is None:
        return None
    values = np.asarray(fill if isinstance(fill, Sequence) else [fill], dtype=np.float64).ravel()
    channels = a.shape[-3] if a.ndim >= 3 else 1
    if values.size not in (1, channels):
        raise ValueError(f"fill has {values.size} values but the image has {channels} channels: "
                         "give one number or one per channel")
    return values


# --- rotation (torchvision's affine grid + grid_sample, align_corners=False) -------------------

def rotated_size(matrix: list[float], w: int, h: int) -> tuple[int, int]:
    """(width, height) that holds the whole rotated image, computed as torchvision does (float32)."""
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]], dtype=np.float32)
    theta = np.array(matrix, dtype=np.float32).reshape(2, 3)
    new = pts @ theta.T
    center = np.array([w * 0.5, h * 0.5], dtype=np.float32)
    lo, hi = new.min(axis=0) + center, new.max(axis=0) + center
    tol = np.float32(1e-4)  # drop float noise so 1e-15 above an integer does not round up
    size = np.ceil(np.trunc(hi / tol) * tol) - np.floor(np.trunc(lo / tol) * tol)
    return int(size[0]), int(size[1])


def affine_sample(a: np.ndarray, matrix: list[float], out_w: int, out_h: int, mode: str,
                  fill: object) -> np.ndarray:
    """Sample ``a`` ([..., H, W], floating) at ``matrix`` applied to the output pixel centres."""
    h, w = a.shape[-2:]
    dt = a.dtype
    theta = np.array(matrix, dtype=dt).reshape(2, 3)
    xs = np.linspace(-out_w * 0.5 + 0.5, out_w * 0.5 - 0.5, out_w, dtype=dt)
    ys = np.linspace(-out_h * 0.5 + 0.5, out_h * 0.5 - 0.5, out_h, dtype=dt)[:, None]
    # same order as torchvision: theta rescaled to [-1, 1] first, then applied to (x, y, 1)
    rx, ry = theta[0] / dt.type(0.5 * w), theta[1] / dt.type(0.5 * h)
    gx = xs * rx[0] + ys * rx[1] + rx[2]
    gy = xs * ry[0] + ys * ry[1] + ry[2]
    ix = ((gx + 1) * w - 1) / 2  # grid_sample's unnormalisation with align_corners=False
    iy = ((gy + 1) * h - 1) / 2
    if mode == "nearest":
        xi, yi = np.rint(ix).astype(np.int64), np.rint(iy).astype(np.int64)
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        out = a[..., np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)] * inside.astype(dt)
        mask = inside.astype(dt)
    else:
        x0, y0 = np.floor(ix), np.floor(iy)
        out = np.zeros(a.shape[:-2] + ix.shape, dtype=dt)
        mask = np.zeros(ix.shape, dtype=dt)
        wxs, wys = (x0 + 1 - ix, ix - x0), (y0 + 1 - iy, iy - y0)
        for dy in (0, 1):
            for dx in (0, 1):
                xc, yc = x0 + dx, y0 + dy
                wt = (wxs[dx] * wys[dy]).astype(dt)
                ok = (xc >= 0) & (xc < w) & (yc >= 0) & (yc < h)
                wt = wt * ok
                xi = np.clip(xc, 0, w - 1).astype(np.int64)
                yi = np.clip(yc, 0, h - 1).astype(np.int64)
                out += a[..., yi, xi] * wt
                mask += wt
    fills = _channel_fill(fill, a)
    if fills is None:
        return out
    fill_img = fills.astype(dt).reshape((-1, 1, 1)) if fills.size > 1 else dt.type(fills[0])
    if mode == "nearest":
        return np.where(mask < 0.5, fill_img, out)
    return out * mask + (1.0 - mask) * fill_img


def inverse_rotation(center: list[float], angle: float) -> list[float]:
    """torchvision's inverse affine matrix for a rotation by ``angle`` degrees about ``center``."""
    rot = math.radians(angle)
    cx, cy = center
    a, b, c, d = math.cos(rot), -math.sin(rot), math.sin(rot), math.cos(rot)
    m = [d, -b, 0.0, -c, a, 0.0]
    m[2] += m[0] * -cx + m[1] * -cy
    m[5] += m[3] * -cx + m[4] * -cy
    m[2] += cx
    m[5] += cy
    return m


# --- colour ----------------------------------------------------------------------------------

def blend(a: np.ndarray, b: np.ndarray, ratio: float) -> np.ndarray:
    """``ratio * a + (1 - ratio) * b`` clamped to the image range; integers truncate, as torchvision."""
    wd = work_dtype(a.dtype)
    out = wd.type(ratio) * a.astype(wd) + wd.type(1.0 - ratio) * b.astype(wd)
    return np.clip(out, 0, max_value(a.dtype)).astype(a.dtype)


def grayscale(a: np.ndarray) -> np.ndarray:
    """ITU-R 601-2 luma of an RGB image, one channel, same dtype (integers truncate)."""
    wd = work_dtype(a.dtype)
    r, g, b = (a[..., i, :, :].astype(wd) for i in range(3))
    luma = wd.type(0.2989) * r + wd.type(0.587) * g + wd.type(0.114) * b
    return luma.astype(a.dtype)[..., None, :, :]


def rgb_to_hsv(a: np.ndarray) -> np.ndarray:
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    maxc, minc = a.max(axis=-3), a.min(axis=-3)
    eqc = maxc == minc
    cr = maxc - minc
    one = a.dtype.type(1)
    s = cr / np.where(eqc, one, maxc)
    div = np.where(eqc, one, cr)  # grey pixels: any divisor, their hue terms cancel to 0
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = np.fmod((hr + hg + hb).astype(a.dtype) / a.dtype.type(6.0) + one, one)
    return np.stack((h, s, maxc), axis=-3)


def hsv_to_rgb(a: np.ndarray) -> np.ndarray:
    h, s, v = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.astype(np.int32) % 6
    p = np.clip(v * (1.0 - s), 0.0, 1.0)
    q = np.clip(v * (1.0 - s * f), 0.0, 1.0)
    t = np.clip(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    r = np.choose(i, [v, q, p, p, t, v])
    g = np.choose(i, [t, v, v, q, p, p])
    b = np.choose(i, [p, p, t, v, v, q])
    return np.stack((r, g, b), axis=-3).astype(a.dtype)
