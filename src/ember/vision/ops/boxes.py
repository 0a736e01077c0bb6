"""Box operations: ``nms``, ``batched_nms``, ``remove_small_boxes``, ``clip_boxes_to_image``,
``box_convert``, ``box_area``, ``box_iou``.

Boxes are ``(x1, y1, x2, y2)`` unless a ``fmt`` says otherwise. The arithmetic functions are
made of ember tensor ops, so gradients flow through them as through torchvision's; ``nms``
returns indices (no gradient) and runs on NumPy arrays.
"""

from __future__ import annotations

import numpy as np

from ... import float32, float64, from_numpy, int32, int64, maximum, minimum, stack
from ..._tensor import Tensor

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert",
           "box_area", "box_iou"]

_AXIS_ALIGNED = ("xyxy", "xywh", "cxcywh")
_ROTATED = ("xywhr", "cxcywhr", "xyxyxyxy")


def _check_boxes(boxes: object, fn: str, name: str = "boxes", k: int = 4) -> None:
    if not isinstance(boxes, Tensor):
        raise TypeError(f"{fn}: {name} must be a Tensor of shape [..., {k}], got "
                        f"{type(boxes).__name__}")
    if boxes.ndim < 1 or boxes.shape[-1] != k:
        raise ValueError(f"{fn}: {name} must have shape [..., {k}] (one box per row), got "
                         f"{tuple(boxes.shape)}")


def _upcast(t: Tensor) -> Tensor:
    """float16/bfloat16 -> float32 and small ints -> int32, so products cannot overflow."""
    if t.is_floating_point():
        return t if t.dtype in (float32, float64) else t.float()
    return t if t.dtype in (int32, int64) else t.int()


def _nms_keep(b: np.ndarray, s: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices kept by greedy NMS, highest score first. One vectorised IoU row per kept box:
    the loop runs over surviving boxes, not pixels or pairs."""
    order = np.argsort(-s, kind="stable")
    b = b[order].astype(np.float64, copy=False)  # IoU in float64: no threshold flips by rounding
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    area = (x2 - x1) * (y2 - y1)
    alive = np.ones(len(order), dtype=bool)
    keep = []
    for i in range(len(order)):
        if not alive[i]:
            continue
        keep.append(i)
        rest = np.nonzero(alive[i + 1:])[0] + i + 1
        if rest.size == 0:
            break
        w = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        h = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = w * h
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (area[i] + area[rest] - inter)
        alive[rest[iou > iou_threshold]] = False
    return order[np.asarray(keep, dtype=np.int64)]


def _indices_on(idx: np.ndarray, like: Tensor) -> Tensor:
    """int64 indices as a tensor on ``like``'s device."""
    out = from_numpy(np.ascontiguousarray(idx, dtype=np.int64))
    return out if like.device.type == "cpu" else out.to(like.device)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression: drop every box whose IoU with a higher-scoring kept box
    is greater than ``iou_threshold``.

    Args:
        boxes: Tensor[N, 4] in ``(x1, y1, x2, y2)`` format.
        scores: Tensor[N].
        iou_threshold: boxes overlapping a kept one by more than this are discarded.

    Returns:
        int64 Tensor of the kept indices, in decreasing order of score.
    """
    _check_boxes(boxes, "nms")
    if boxes.ndim != 2:
        raise ValueError(f"nms: boxes must be 2-D [N, 4], got {tuple(boxes.shape)}")
    if not isinstance(scores, Tensor) or scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        got = tuple(scores.shape) if isinstance(scores, Tensor) else type(scores).__name__
        raise ValueError(f"nms: scores must be a 1-D Tensor with one score per box "
                         f"({boxes.shape[0]}), got {got}")
    b = boxes.detach().cpu().numpy()
    s = scores.detach().cpu().numpy()
    return _indices_on(_nms_keep(b, s, float(iou_threshold)), boxes)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """NMS within each category: boxes of different ``idxs`` never suppress each other.

    Returns the kept indices (int64), in decreasing order of score."""
    _check_boxes(boxes, "batched_nms")
    if not isinstance(idxs, Tensor) or idxs.shape != (boxes.shape[0],):
        got = tuple(idxs.shape) if isinstance(idxs, Tensor) else type(idxs).__name__
        raise ValueError(f"batched_nms: idxs must be a 1-D Tensor with one category per box "
                         f"({boxes.shape[0]}), got {got}")
    b = boxes.detach().cpu().numpy()
    s = scores.detach().cpu().numpy()
    c = idxs.detach().cpu().numpy()
    # per category rather than torchvision's coordinate offsets: offsets lose precision on
    # large coordinates; the kept set is the same
    keep_mask = np.zeros(len(s), dtype=bool)
    for cls in np.unique(c):
        where = np.nonzero(c == cls)[0]
        keep_mask[where[_nms_keep(b[where], s[where], float(iou_threshold))]] = True
    kept = np.nonzero(keep_mask)[0]
    return _indices_on(kept[np.argsort(-s[kept], kind="stable")], boxes)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices (int64) of the boxes whose width and height are both at least ``min_size``."""
    _check_boxes(boxes, "remove_small_boxes")
    ws = boxes[..., 2] - boxes[..., 0]
    hs = boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return keep.nonzero(as_tuple=True)[0]


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Clip ``(x1, y1, x2, y2)`` boxes to an image of ``size = (height, width)``."""
    _check_boxes(boxes, "clip_boxes_to_image")
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return stack((x, y), dim=boxes.ndim).reshape(boxes.shape)


def _xywh_to_xyxy(b: Tensor) -> Tensor:
    x, y, w, h = b.unbind(-1)
    return stack([x, y, x + w, y + h], dim=-1)


def _xyxy_to_xywh(b: Tensor) -> Tensor:
    x1, y1, x2, y2 = b.unbind(-1)
    return stack([x1, y1, x2 - x1, y2 - y1], dim=-1)


def _cxcywh_to_xyxy(b: Tensor) -> Tensor:
    cx, cy, w, h = b.unbind(-1)
    return stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def _xyxy_to_cxcywh(b: Tensor) -> Tensor:
    x1, y1, x2, y2 = b.unbind(-1)
    return stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], dim=-1)


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert boxes between ``'xyxy'`` (corners), ``'xywh'`` (corner, size) and ``'cxcywh'``
    (centre, size); any leading dims. The rotated formats (``'xywhr'``, ``'cxcywhr'``,
    ``'xyxyxyxy'``) are not supported in ember and raise ``NotImplementedError``."""
    allowed = _AXIS_ALIGNED + _ROTATED
    if in_fmt not in allowed or out_fmt not in allowed:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and "
                         f"out_fmt {out_fmt}; formats are {', '.join(allowed)}")
    if in_fmt in _ROTATED or out_fmt in _ROTATED:
        if in_fmt == out_fmt:
            return boxes.clone()
        raise NotImplementedError(f"box_convert: rotated box formats ({in_fmt} -> {out_fmt}) are "
                                  "not supported by ember.vision; use xyxy, xywh or cxcywh")
    _check_boxes(boxes, "box_convert")
    if in_fmt == out_fmt:
        return boxes.clone()
    if in_fmt == "xywh":
        boxes = _xywh_to_xyxy(boxes)
    elif in_fmt == "cxcywh":
        boxes = _cxcywh_to_xyxy(boxes)
    if out_fmt == "xywh":
        return _xyxy_to_xywh(boxes)
    if out_fmt == "cxcywh":
        return _xyxy_to_cxcywh(boxes)
    return boxes


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """Area of each box (Tensor[...]); ``fmt`` is ``'xyxy'``, ``'xywh'`` or ``'cxcywh'``."""
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported Bounding Box area for given format {fmt}; use one of "
                         f"{', '.join(_AXIS_ALIGNED)}")
    _check_boxes(boxes, "box_area")
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _corners(b: Tensor, fmt: str) -> tuple[Tensor, Tensor]:
    """(top-left, bottom-right) corners, each [..., 2]."""
    if fmt == "xyxy":
        return b[..., :2], b[..., 2:]
    if fmt == "xywh":
        return b[..., :2], b[..., :2] + b[..., 2:]
    return b[..., :2] - b[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2


def _box_inter_union(boxes1: Tensor, boxes2: Tensor, fmt: str) -> tuple[Tensor, Tensor]:
    area1 = box_area(boxes1, fmt=fmt)
    area2 = box_area(boxes2, fmt=fmt)
    lt1, rb1 = _corners(boxes1, fmt)
    lt2, rb2 = _corners(boxes2, fmt)
    lt = maximum(lt1[..., :, None, :], lt2[..., None, :, :])  # [..., N, M, 2]
    rb = minimum(rb1[..., :, None, :], rb2[..., None, :, :])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1[..., :, None] + area2[..., None, :] - inter
    return inter, union


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    """Pairwise intersection over union: Tensor[..., N, M] for boxes1 [..., N, 4] and boxes2
    [..., M, 4]; ``fmt`` is ``'xyxy'``, ``'xywh'`` or ``'cxcywh'`` (rotated formats raise
    ``NotImplementedError``: they need torchvision's compiled kernel)."""
    if fmt in _ROTATED:
        raise NotImplementedError(f"box_iou: rotated boxes (fmt={fmt!r}) are not supported by "
                                  "ember.vision; use xyxy, xywh or cxcywh")
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported format '{fmt}'. Supported axis-aligned formats: "
                         f"{_AXIS_ALIGNED}. Supported rotated formats: {_ROTATED}.")
    _check_boxes(boxes1, "box_iou", "boxes1")
    _check_boxes(boxes2, "box_iou", "boxes2")
    inter, union = _box_inter_union(boxes1, boxes2, fmt)
    return inter / union
