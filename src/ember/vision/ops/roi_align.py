"""``roi_align`` and the ``RoIAlign`` module (Mask R-CNN's RoIAlign), forward and backward.

Each output bin averages bilinear samples on a regular grid inside the bin. The samples'
weights split into a row part and a column part, so for box k the pooling is two matrix
products: ``out[k, c] = Wy[k] @ x[b_k, c] @ Wx[k].T`` with ``Wy[k]`` (PH, H) and ``Wx[k]``
(PW, W) holding the summed bilinear weights of each bin's samples (divided by their count).
The gradient with respect to the input is the adjoint, ``Wy[k].T @ g[k, c] @ Wx[k]`` summed
into image b_k; no gradient flows to the boxes (as in torchvision).

The weights follow torchvision's CPU kernel: samples more than one pixel outside the image
count as zero, coordinates below zero clamp to 0, and at the last row/column the sample takes
that row/column; ``aligned=True`` shifts the box by half a pixel, ``aligned=False`` makes every
box at least 1x1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _backend, cat, full_like, nn
from ..._tensor import Tensor
from ...autograd.function import Op

__all__ = ["roi_align", "RoIAlign"]

_CHUNK = 1 << 24  # elements per intermediate block: bounds memory for many boxes at once


def _axis_weights(start: np.ndarray, size: np.ndarray, bins: int, grid: np.ndarray, length: int,
                  dtype: np.dtype) -> np.ndarray:
    """(K, bins, length) weights of one axis: row p of box k sums the bilinear weights of the
    ``grid[k]`` samples in bin p, divided by ``grid[k]``.

    ``start``/``size`` are the boxes' start and extent on this axis in ``dtype`` (the kernel's
    arithmetic type); ``grid`` holds non-negative sample counts per bin."""
    k_boxes = start.shape[0]
    g_max = max(int(grid.max()), 1) if k_boxes else 1
    bin_size = size / dtype.type(bins)
    p = np.arange(bins, dtype=dtype)[None, :, None]
    i = np.arange(g_max)[None, None, :]
    g = np.maximum(grid, 1).astype(dtype)[:, None, None]
    # the kernel's expression and rounding order: start + p * bin + (i + .5) * bin / grid
    coord = (start[:, None, None] + p * bin_size[:, None, None]
             + (i + 0.5).astype(dtype) * bin_size[:, None, None] / g)
    # samples over a pixel outside the map weigh nothing; NaN coordinates fail every
    # comparison and land here too
    valid = (i < grid[:, None, None]) & (coord >= -1.0) & (coord <= length)
    c = np.where(valid, np.maximum(coord, dtype.type(0)), dtype.type(0))
    low = c.astype(np.int64)  # c >= 0: truncation is floor
    edge = low >= length - 1
    low = np.where(edge, length - 1, low)
    high = np.where(edge, length - 1, low + 1)
    frac = np.where(edge, dtype.type(0), c - low.astype(dtype))
    w_low = np.where(valid, 1 - frac, 0)
    w_high = np.where(valid, frac, 0)
    rows = (np.arange(k_boxes)[:, None, None] * bins + np.arange(bins)[None, :, None])
    rows = np.broadcast_to(rows, low.shape)
    n = k_boxes * bins * length
    flat = np.bincount((rows * length + low).ravel(), weights=w_low.ravel(), minlength=n)
    flat += np.bincount((rows * length + high).ravel(), weights=w_high.ravel(), minlength=n)
    out = flat.reshape(k_boxes, bins, length) / np.maximum(grid, 1)[:, None, None]
    return out.astype(dtype, copy=False)


def _weights(rois: np.ndarray, height: int, width: int, spatial_scale: float, ph: int, pw: int,
             sampling_ratio: int, aligned: bool, dtype: np.dtype) -> tuple:
    """The row and column weight matrices (K, PH, H), (K, PW, W) of every box."""
    offset = 0.5 if aligned else 0.0
    # the kernel scales in double precision and stores the result in the input's type
    x1 = (rois[:, 1].astype(np.float64) * spatial_scale - offset).astype(dtype)
    y1 = (rois[:, 2].astype(np.float64) * spatial_scale - offset).astype(dtype)
    x2 = (rois[:, 3].astype(np.float64) * spatial_scale - offset).astype(dtype)
    y2 = (rois[:, 4].astype(np.float64) * spatial_scale - offset).astype(dtype)
    rw, rh = x2 - x1, y2 - y1
    if not aligned:  # legacy behaviour: boxes of under a pixel are widened to one pixel
        rw = np.maximum(rw, dtype.type(1))
        rh = np.maximum(rh, dtype.type(1))
    if sampling_ratio > 0:
        gh = np.full(len(rois), sampling_ratio, dtype=np.int64)
        gw = gh
    else:  # adaptive: about one sample per input pixel
        gh = np.maximum(np.ceil(rh / dtype.type(ph)), 0).astype(np.int64)
        gw = np.maximum(np.ceil(rw / dtype.type(pw)), 0).astype(np.int64)
    wy = _axis_weights(y1, rh, ph, gh, height, dtype)
    wx = _axis_weights(x1, rw, pw, gw, width, dtype)
    return wy, wx


def _groups(batch: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(image index, positions of its boxes) for each image that has boxes."""
    return [(int(b), np.nonzero(batch == b)[0]) for b in np.unique(batch)]


def _chunks(idx: np.ndarray, per_box: int, xp: Any) -> list[Any]:
    """``idx`` in blocks of at most ``_CHUNK`` intermediate elements, as ``xp`` index arrays
    (a GPU array is indexed with device indices)."""
    step = max(1, _CHUNK // max(per_box, 1))
    return [idx[s:s + step] if xp is np else xp.asarray(idx[s:s + step])
            for s in range(0, len(idx), step)]


class RoIAlignSample(Op):
    """out[k] = Wy[k] @ x[batch[k]] @ Wx[k].T (per channel)

    grad_x = RoIAlignSampleT(grad): sum over boxes of Wy[k].T @ grad[k] @ Wx[k] into their image"""
    node_name = "RoiAlignBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, wy: Any, wx: Any, batch: np.ndarray) -> Any:
        xp = ctx.xp
        n, c, h, w = x.shape
        k, ph, pw = wy.shape[0], wy.shape[1], wx.shape[1]
        out = xp.zeros((k, c, ph, pw), dtype=x.dtype)
        for b, idx in _groups(batch):
            img = x[b].transpose(1, 0, 2).reshape(h, c * w)  # (H, C*W)
            for part in _chunks(idx, ph * c * w, xp):
                # rows first, as one GEMM for all boxes of the image: (K*PH, H) @ (H, C*W)
                t = (wy[part].reshape(-1, h) @ img).reshape(len(part), ph, c, w)
                # then columns, batched over boxes: (K, PH, C, W) @ (K, 1, W, PW)
                o = t @ wx[part][:, None].transpose(0, 1, 3, 2)
                out[part] = o.transpose(0, 2, 1, 3)
        ctx.wy, ctx.wx, ctx.batch, ctx.shape = wy, wx, batch, x.shape
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(RoIAlignSampleT, grad, ctx.wy, ctx.wx, ctx.batch, ctx.shape)
        return gx, None, None, None


class RoIAlignSampleT(Op):
    """out[b] = sum_{k in image b} Wy[k].T @ g[k] @ Wx[k] (per channel): RoIAlignSample's adjoint

    grad_g = RoIAlignSample(grad)"""
    node_name = "RoiAlignBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, wy: Any, wx: Any, batch: np.ndarray, shape: tuple) -> Any:
        xp = ctx.xp
        n, c, h, w = shape
        ph = wy.shape[1]
        out = xp.zeros(shape, dtype=g.dtype)
        for b, idx in _groups(batch):
            acc = xp.zeros((h, c * w), dtype=g.dtype)
            for part in _chunks(idx, ph * c * w, xp):
                t = g[part] @ wx[part][:, None]  # (K, C, PH, W)
                t = t.transpose(0, 2, 1, 3).reshape(len(part) * ph, c * w)
                acc += wy[part].reshape(-1, h).T @ t  # (H, K*PH) @ (K*PH, C*W)
            out[b] = acc.reshape(h, c, w).transpose(1, 0, 2)
        ctx.wy, ctx.wx, ctx.batch = wy, wx, batch
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(RoIAlignSample, grad, ctx.wy, ctx.wx, ctx.batch), None, None, None, None


def _pair(v: Any) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    if len(v) == 1:
        return int(v[0]), int(v[0])
    if len(v) != 2:
        raise ValueError(f"roi_align: output_size must be an int or (height, width), got {v}")
    return int(v[0]), int(v[1])


def _convert_boxes_to_roi_format(boxes: list[Tensor]) -> Tensor:
    """[Tensor[L_i, 4]] -> Tensor[sum L_i, 5] whose column 0 is the image index i."""
    ids = [full_like(b[:, :1], i) for i, b in enumerate(boxes)]
    return cat([cat(ids, 0), cat(list(boxes), 0)], 1)


def _check_boxes(boxes: Any) -> None:
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if not isinstance(b, Tensor) or b.ndim != 2 or b.shape[1] != 4:
                got = tuple(b.shape) if isinstance(b, Tensor) else type(b).__name__
                raise ValueError("roi_align: the shape of the tensor in the boxes list is not "
                                 f"correct as List[Tensor[L, 4]] (got {got}); give each image's "
                                 "boxes as (x1, y1, x2, y2) rows")
    elif isinstance(boxes, Tensor):
        if boxes.ndim != 2 or boxes.shape[1] != 5:
            raise ValueError("roi_align: the boxes tensor shape is not correct as Tensor[K, 5] "
                             f"(got {tuple(boxes.shape)}); rows are (image index, x1, y1, x2, y2), "
                             "or pass a list with one Tensor[L, 4] per image")
    else:
        raise TypeError("roi_align: boxes is expected to be a Tensor[K, 5] or a List[Tensor[L, 4]], "
                        f"got {type(boxes).__name__}")


def roi_align(input: Tensor, boxes: Tensor | list[Tensor], output_size: int | tuple[int, int],
              spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """Pool each box of ``input`` into an ``output_size`` grid by averaging bilinear samples.

    Args:
        input: Tensor[N, C, H, W], floating point.
        boxes: Tensor[K, 5] of rows ``(image index, x1, y1, x2, y2)``, or a list of
            Tensor[L, 4] (one per image), in input-image coordinates.
        output_size: ``(height, width)`` of each pooled box (or one int for both).
        spatial_scale: factor from box coordinates to ``input``'s (e.g. 1/16 for a stride-16
            feature map).
        sampling_ratio: samples per bin along each axis; ``<= 0`` uses
            ``ceil(box size / output size)``.
        aligned: shift boxes by -0.5 pixel so that pixel centres align (use True for new code;
            False is the original, kept by default for compatibility).

    Returns:
        Tensor[K, C, output_size[0], output_size[1]] of ``input``'s dtype.
    """
    if not isinstance(input, Tensor) or input.ndim != 4:
        got = tuple(input.shape) if isinstance(input, Tensor) else type(input).__name__
        raise ValueError(f"roi_align: input must be a Tensor[N, C, H, W], got {got}")
    if not input.is_floating_point():
        raise TypeError(f"roi_align: input must be floating point, got {input.dtype}; convert "
                        "it with input.float()")
    _check_boxes(boxes)
    rois = boxes if isinstance(boxes, Tensor) else _convert_boxes_to_roi_format(boxes)
    if rois.dtype != input.dtype:
        raise TypeError(f"roi_align: boxes ({rois.dtype}) must have the input's dtype "
                        f"({input.dtype}); convert them with boxes.to(input.dtype)")
    ph, pw = _pair(output_size)
    if ph <= 0 or pw <= 0:
        raise ValueError(f"roi_align: output_size must be positive, got {(ph, pw)}")
    n, _, h, w = input.shape
    r = rois.detach().cpu().numpy()  # boxes are few: their weights are built on the host
    batch = r[:, 0].astype(np.int64) if len(r) else np.zeros(0, dtype=np.int64)
    if len(batch) and (batch.min() < 0 or batch.max() >= n):
        raise ValueError(f"roi_align: box image indices must lie in [0, {n}) for an input of "
                         f"{n} images, got {sorted(set(batch.tolist()) - set(range(n)))}")
    dtype = np.dtype(input._data.dtype)
    wy, wx = _weights(r, h, w, float(spatial_scale), ph, pw, int(sampling_ratio), bool(aligned),
                      dtype)
    xp = _backend.xp_of(input._data)
    if xp is not np:
        wy, wx = xp.asarray(wy), xp.asarray(wx)
    return RoIAlignSample.apply(input, wy, wx, batch)


class RoIAlign(nn.Module):
    """``roi_align`` as a module: ``RoIAlign(output_size, spatial_scale, sampling_ratio,
    aligned=False)(input, boxes)``."""

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float,
                 sampling_ratio: int, aligned: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio,
                         self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned})")

