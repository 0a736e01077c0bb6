"""Vision functions, continued from ``vision.py``: the spatial transformer's ``affine_grid`` and
``grid_sample``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ... import _dtype
from ...autograd.function import Op
from .. import comparison as _cmp
from .. import pointwise as _pw
from .. import pointwise_piecewise as _pp
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from ..creation import arange
from ..joining import stack

__all__ = ["affine_grid", "grid_sample", "GRID_SAMPLE_INTERPOLATION_MODES",
           "GRID_SAMPLE_PADDING_MODES"]


GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}


GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


# ---------------------------------------------------------------------------------------------
# spatial transformers: affine_grid and grid_sample (composites: gradients reach theta, the
# input and the grid through the ops they are made of)


def affine_grid(theta: Any, size: Any, align_corners: bool | None = None) -> Any:
    """Sampling grid (N, H, W, 2) for ``grid_sample`` from affine matrices theta (N, 2, 3)
    (or (N, D, H, W, 3) from (N, 3, 4)): each output pixel's normalised (x, y[, z], 1) times
    theta^T."""
    align = bool(align_corners)
    size = tuple(int(v) for v in size)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{list(size)}. Got {list(theta.shape)}.")
        N, _, H, W = size
        xs = _grid_coords(W, align, theta).reshape(1, W).expand(H, W)
        ys = _grid_coords(H, align, theta).reshape(H, 1).expand(H, W)
        base = stack([xs, ys, xs * 0 + 1], -1).reshape(1, H * W, 3)
        return (base @ theta.transpose(1, 2)).reshape(N, H, W, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{list(size)}. Got {list(theta.shape)}.")
        N, _, D, H, W = size
        xs = _grid_coords(W, align, theta).reshape(1, 1, W).expand(D, H, W)
        ys = _grid_coords(H, align, theta).reshape(1, H, 1).expand(D, H, W)
        zs = _grid_coords(D, align, theta).reshape(D, 1, 1).expand(D, H, W)
        base = stack([xs, ys, zs, xs * 0 + 1], -1).reshape(1, D * H * W, 4)
        return (base @ theta.transpose(1, 2)).reshape(N, D, H, W, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                              f"transforms, respectively. Got size {list(size)}.")


def grid_sample(input: Any, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Any:
    """Sample a 4-D input (N, C, H, W) at the normalised (x, y) locations of grid
    (N, Ho, Wo, 2), or a 5-D input (N, C, D, H, W) at the (x, y, z) locations of grid
    (N, Do, Ho, Wo, 3): (tri)linearly ('bilinear') or from the nearest pixel; locations outside
    read 0 ('zeros'), the edge ('border') or the mirror image ('reflection').

    'bicubic' (4-D only) weighs 4 x 4 taps by PyTorch's a = -0.75 cubic, each tap padded.

    NaN coordinates read as PyTorch's CPU kernels read them: on 4-D inputs as the first pixel
    along that axis under 'border'/'reflection' and out of bounds under 'zeros' (NaN with
    'bilinear', 0 with 'nearest'; 'bicubic' gives NaN); on 5-D inputs as the last pixel under
    'border'/'reflection' and out of bounds (0) under 'zeros'."""
    if _amp.active:
        input, grid = _amp_cast("grid_sample", input, grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    nsp = input.dim() - 2
    if mode == "bicubic" and nsp == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input (got "
                           f"input of size {list(input.shape)}); use 'bilinear' or 'nearest'")
    if nsp not in (2, 3):
        raise NotImplementedError("ember's grid_sample supports 4-D and 5-D inputs, as PyTorch's; "
                                  f"got input of size {list(input.shape)}")
    if grid.dim() != nsp + 2 or grid.shape[-1] != nsp:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nsp} in last dimension "
                           f"and {nsp + 2} dimensions (as the {nsp + 2}-D input), but got grid "
                           f"with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, "
                           f"but input has {input.dtype} and grid has {grid.dtype}")
    align = bool(align_corners)
    N, C = input.shape[:2]
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    out_sp = tuple(grid.shape[1:-1])
    M = math.prod(out_sp)
    nan = _cmp.isnan(grid.detach())
    # NaN coordinates: PyTorch's 4-D kernel reads them as index 0 and its 5-D kernel as the
    # last index (border, reflection); under 'zeros' both read them as out of bounds
    fill = (-1.0 if nsp == 2 else 1.0) if padding_mode != "zeros" else -4.0
    grid = _pp.where(nan, fill, grid)
    # pos[a]: the source coordinate along spatial axis a (grid's last entry is axis 0's);
    # bicubic pads each of its taps instead
    pos = [_unnormalise(grid[..., nsp - 1 - a], n, align,
                        "zeros" if mode == "bicubic" else padding_mode)
           for a, n in enumerate(sizes)]
    strides = [math.prod(sizes[a + 1:]) for a in range(nsp)]
    flat = input.reshape(N, C, math.prod(sizes))

    def tap(ii: list) -> tuple[Any, Any]:
        """Values at integer position ii (N, C, *out) and the in-bounds mask (N, 1, *out)."""
        ok = None
        idx = None
        for i, n, s in zip(ii, sizes, strides):
            inb = (i >= 0) & (i <= n - 1)
            ok = inb if ok is None else ok & inb
            term = i.clamp(0, n - 1) * s
            idx = term if idx is None else idx + term
        idx = idx.to(_dtype.int64).reshape(N, 1, M).expand(N, C, M)
        vals = flat.gather(2, idx).reshape(N, C, *out_sp)
        return vals, ok.unsqueeze(1)

    if mode == "nearest":
        vals, ok = tap([_pp.round(p.detach()) for p in pos])
        return vals * ok.to(input.dtype)
    if mode == "bicubic":  # 4 x 4 taps, each padded; weights a = -0.75 cubic in the offsets
        (py, px), (H, W) = pos, sizes
        y0, x0 = py.detach().floor(), px.detach().floor()
        wy, wx = _cubic_weights((py - y0).unsqueeze(1)), _cubic_weights((px - x0).unsqueeze(1))
        out = None
        for i in range(4):
            yi = _pad_coord(y0 + (i - 1), H, align, padding_mode)
            for j in range(4):
                vals, ok = tap([yi, _pad_coord(x0 + (j - 1), W, align, padding_mode)])
                term = vals * ok.to(input.dtype) * (wy[i] * wx[j])
                out = term if out is None else out + term
        return _pp.where(nan.any(-1).unsqueeze(1), math.nan, out)  # PyTorch: NaN weights
    if nsp == 2 and type(input._data) is np.ndarray and input._data.dtype.kind == "f":
        # one op over the four corners, an image at a time: saves the input and positions only
        out = GridSampleBilinear2D.apply(input, pos[0], pos[1])
        if padding_mode == "zeros" and bool(nan.any()):  # PyTorch's 4-D kernel: 0 * NaN weight
            out = _pp.where(nan.any(-1).unsqueeze(1), math.nan, out)
        return out
    return _bilinear_corners(input, pos, sizes, tap, nan, padding_mode)


class GridSampleBilinear2D(Op):
    """out[n, c, p] = sum over corners k of x[n, c, y_k, x_k] * (ok_k wy_k wx_k) at the source
    position (py, px)[n, p] in pixels: corners floor(.) and floor(.) + 1, weights 1 - t and t
    for t = pos - floor(pos), corners outside the image read 0 (ok_k = 0)
    grad_x[n, c, y_k, x_k] += grad[n, c, p] * ok_k wy_k wx_k          (scatter-add)
    grad_py[n, p] = sum_k (-1 or +1) wx_k s_k,  grad_px[n, p] = sum_k wy_k (-1 or +1) s_k,
        s_k = ok_k sum_c grad[n, c, p] x[n, c, y_k, x_k]
    Saves x and the positions (PyTorch's grid sampler saves input and grid); backward rebuilds
    each image's corners. The corners' products sum in the composite's order, so the values are
    the composite's bit for bit."""
    node_name = "GridSampler2DBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, py: Any, px: Any) -> Any:
        N, C, H, W = x.shape
        M = py[0].size
        out = np.empty((N, C, M), x.dtype)
        for n in range(N):  # pixels as rows (H * W, C): each corner gathers whole rows
            pix = np.ascontiguousarray(x[n].reshape(C, H * W).T)
            o = None
            for idx, w, _, _, _ in _grid_corners(py[n], px[n], H, W):
                term = pix[idx]
                term *= w[:, None]
                o = term if o is None else o.__iadd__(term)
            out[n] = o.T
        ctx.save_for_backward(x, py, px)
        return out.reshape((N, C) + py.shape[1:])

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if ctx._tensor_mode:  # a graph of the gradients: differentiate the composite
            return _grid_sample_by_recompute(ctx, grad)
        x, py, px = ctx.saved
        need = ctx.needs_input_grad
        N, C, H, W = x.shape
        M = py[0].size
        g = np.broadcast_to(grad, (N, C) + py.shape[1:])
        gx = np.empty((N, C, H * W), x.dtype) if need[0] else None
        gpy = np.empty((N, M), py.dtype) if need[1] else None
        gpx = np.empty((N, M), px.dtype) if need[2] else None
        for n in range(N):
            pix = np.ascontiguousarray(x[n].reshape(C, H * W).T)
            gn = np.ascontiguousarray(g[n].reshape(C, M).T)  # (M, C)
            acc = np.zeros((H * W, C), x.dtype) if gx is not None else None
            sy = sx = None
            for idx, w, ok, (wy, wx), (dy, dx) in _grid_corners(py[n], px[n], H, W):
                if acc is not None:
                    _add_rows(acc, idx, gn * w[:, None])
                if gpy is not None or gpx is not None:
                    s = np.einsum("mc,mc->m", gn, pix[idx]) * ok
                    ty, tx = s * wx * (1 if dy else -1), s * wy * (1 if dx else -1)
                    sy = ty if sy is None else sy + ty
                    sx = tx if sx is None else sx + tx
            if gx is not None:
                gx[n] = acc.T
            if gpy is not None:
                gpy[n] = sy
            if gpx is not None:
                gpx[n] = sx
        return (None if gx is None else gx.reshape(x.shape),
                None if gpy is None else gpy.reshape(py.shape),
                None if gpx is None else gpx.reshape(px.shape))


def _bilinear_corners(input: Any, pos: list, sizes: tuple, tap: Any, nan: Any,
                      padding_mode: str) -> Any:
    """(Tri)linear sampling as a composite of ember ops: the sum over the corners of their
    values, in-bounds masks and weights (5-D inputs, devices other than the host's, and the
    recomputed graph of ``GridSampleBilinear2D`` under ``create_graph``)."""
    nsp = len(sizes)
    lo = [p.detach().floor() for p in pos]
    w1 = [(p - f).unsqueeze(1) for p, f in zip(pos, lo)]
    w0 = [1 - w for w in w1]
    out = None
    for corner in itertools.product((0, 1), repeat=nsp):
        w = None
        for a, bit in enumerate(corner):
            wa = w1[a] if bit else w0[a]
            w = wa if w is None else w * wa
        vals, ok = tap([f + 1 if bit else f for f, bit in zip(lo, corner)])
        term = vals * ok.to(input.dtype) * w
        out = term if out is None else out + term
    if nan is not None and nsp == 2 and padding_mode == "zeros":  # PyTorch: 0 * NaN weight
        bad = nan.any(-1).unsqueeze(1)
        out = _pp.where(bad, math.nan, out)
    return out


def _add_rows(acc: np.ndarray, idx: np.ndarray, rows: np.ndarray) -> None:
    """acc[idx[m]] += rows[m] for every m, repeated indices summed. Sorted by index, the rows
    are added level by level: the first of each run of equal indices, then the second... (each
    level's indices are distinct, so one fancy-indexed add per level moves whole rows); a grid
    that piles many samples on one pixel takes a flat bincount instead."""
    order = np.argsort(idx, kind="stable")
    keys = idx[order]
    first = np.empty(keys.size, np.bool_)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    rank = np.arange(keys.size) - starts[np.cumsum(first) - 1]
    levels = int(rank.max()) + 1 if keys.size else 0
    if levels > 16:
        C = acc.shape[1]
        flat = (idx[:, None] * C + np.arange(C)).ravel()
        acc += np.bincount(flat, weights=rows.ravel(), minlength=acc.size).reshape(
            acc.shape).astype(acc.dtype, copy=False)
        return
    ordered = rows[order]
    for r in range(levels):
        sel = rank == r if r else first
        acc[keys[sel]] += ordered[sel]


def _grid_corners(py: np.ndarray, px: np.ndarray, H: int, W: int) -> Any:
    """Per corner (0, 0), (0, 1), (1, 0), (1, 1) of the positions (py, px) of one image: the flat
    pixel index (clamped), the weight ok * wy * wx, the in-bounds mask ok, (wy, wx), and the
    corner."""
    y0, x0 = np.floor(py).reshape(-1), np.floor(px).reshape(-1)
    ty, tx = py.reshape(-1) - y0, px.reshape(-1) - x0
    for dy in (0, 1):
        yi = y0 + dy
        wy = ty if dy else 1 - ty
        for dx in (0, 1):
            xi = x0 + dx
            wx = tx if dx else 1 - tx
            ok = (yi >= 0) & (yi <= H - 1) & (xi >= 0) & (xi <= W - 1)
            idx = (np.clip(yi, 0, H - 1) * W + np.clip(xi, 0, W - 1)).astype(np.int64)
            yield idx, ok * (wy * wx), ok, (wy, wx), (dy, dx)


def _grid_sample_by_recompute(ctx: Any, grad: Any) -> tuple:
    """``GridSampleBilinear2D``'s gradients as tensors (``create_graph``): the composite rebuilt
    on fresh aliases of the saved inputs and differentiated with a graph."""
    from ...autograd import grad as autograd_grad

    x, py, px = ctx.saved
    need = ctx.needs_input_grad
    ins = [t.clone() if need[k] else t.detach() for k, t in enumerate((x, py, px))]
    N, C = x.shape[:2]
    sizes = tuple(x.shape[2:])
    M = py[0].numel()
    flat = ins[0].reshape(N, C, sizes[0] * sizes[1])

    def tap(ii: list) -> tuple[Any, Any]:
        ok = None
        idx = None
        for i, n, s in zip(ii, sizes, (sizes[1], 1)):
            inb = (i >= 0) & (i <= n - 1)
            ok = inb if ok is None else ok & inb
            term = i.clamp(0, n - 1) * s
            idx = term if idx is None else idx + term
        idx = idx.to(_dtype.int64).reshape(N, 1, M).expand(N, C, M)
        return flat.gather(2, idx).reshape(N, C, *py.shape[1:]), ok.unsqueeze(1)

    out = _bilinear_corners(ins[0], [ins[1], ins[2]], sizes, tap, None, "zeros")
    wanted = [(k, t) for k, t in enumerate(ins) if need[k]]
    got = autograd_grad([out], [t for _, t in wanted], [grad],
                        create_graph=True, allow_unused=True)
    result: list[Any] = [None, None, None]
    for (k, _), gk in zip(wanted, got):
        result[k] = gk
    return tuple(result)


def _grid_coords(n: int, align_corners: bool, like: Any) -> Any:
    """The normalised coordinates of n pixel centres in [-1, 1] (corner pixels' centres at +-1
    when ``align_corners``, else the corners of the corner pixels)."""
    if n == 1:
        return arange(1, dtype=like.dtype, device=like.device) * 0.0
    i = arange(n, dtype=like.dtype, device=like.device)
    if align_corners:
        return i * (2.0 / (n - 1)) - 1.0
    return (i * 2.0 + 1.0) / n - 1.0


def _reflect(x: Any, lo: float, hi: float) -> Any:
    """x reflected into [lo, hi] (mirror at both ends, repeatedly)."""
    span = hi - lo
    if span <= 0:
        return x * 0 + lo
    d = (x - lo).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    odd = _pw.remainder(flips, 2.0) == 1
    return _pp.where(odd, span - extra, extra) + lo


def _unnormalise(c: Any, n: int, align: bool, padding_mode: str) -> Any:
    x = (c + 1) * ((n - 1) / 2) if align else ((c + 1) * n - 1) / 2
    return _pad_coord(x, n, align, padding_mode)


def _cubic_weights(t: Any) -> list:
    """The four bicubic-convolution weights (a = -0.75) of taps at offsets -1, 0, 1, 2 from
    floor(x), for t = x - floor(x)."""
    a = -0.75

    def near(v: Any) -> Any:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Any) -> Any:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _pad_coord(x: Any, n: int, align: bool, padding_mode: str) -> Any:
    """A source coordinate after the padding mode (zeros: unchanged, out of bounds reads 0)."""
    if padding_mode == "border":
        x = _clip_coord(x, n)
    elif padding_mode == "reflection":
        x = _reflect(x, 0.0, n - 1.0) if align else _reflect(x, -0.5, n - 0.5)
        x = _clip_coord(x, n)
    return x


def _clip_coord(x: Any, n: int) -> Any:
    """x clamped to [0, n - 1], its gradient 0 at the borders too (PyTorch's grid sampler counts
    a coordinate on the border as out of bounds for the gradient; clamp would pass it)."""
    if not x.requires_grad:
        return x.clamp(0, n - 1)
    return _pp.where((x > 0) & (x < n - 1), x, x.detach().clamp(0, n - 1))
