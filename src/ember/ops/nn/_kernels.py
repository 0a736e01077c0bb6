"""The array kernels under convolution and pooling (resampling's axis maps: ``_resample.py``).

Layout is NCHW (NCL in 1-D); a 1-D op runs as the 2-D op with a height of 1. Every sliding-window
op works on a strided *view* of the (padded) input, so the only copies are the im2col matrix that
feeds a convolution's single GEMM and the output itself.

Convolution columns are channel-major, (C * kh * kw, N * L), so forward, weight gradient and
input gradient are one large GEMM each. Stride-1 convolutions use a *wide* im2col: with the
padded image flattened, every kernel offset is one contiguous slice, so im2col and col2im move
long rows instead of 8-element pieces (several times faster); the GEMM computes ``kw - 1``
throw-away columns per output row, dropped afterwards. The wide layout is skipped where those
columns would add half the GEMM or more (small outputs).

Small outputs of a large enough batch (at most ``_BATCH_INNER_PIXELS`` output pixels, at least
``_BATCH_INNER_MIN_N`` images: ResNet's later stages, CIFAR-sized CNNs) use a *batch-inner* layout
instead: the padded input is transposed once to (C, Hp, Wp, N) and the columns are ordered
(OH, OW, N), so im2col and col2im move runs of N (or OW * N) values rather than OW-value pieces
(2-4x faster on 8x8 and smaller outputs); the GEMM result is transposed back to (N, O, OH, OW).
Where such a convolution's GEMM is long against its taps (one group, ``N * OH * OW`` at least
``_ROWS_MIN_RATIO`` times ``C * kh * kw``: CIFAR-sized CNNs, not ResNet's later stages), the
forward builds its columns as *rows* instead, (OH * OW * N, kh * kw * C), from an NHWC copy of
the input (each copy moves runs of ``kw * C`` values), and multiplies them by the weight's
transpose: OpenBLAS runs that orientation up to 15% faster than weight-rows-times-columns for
such thin products (CNN conv2: 1.45 -> 1.25 ms). Its backward takes the output gradient as rows
(N * OH * OW, O): weight gradient gr^T @ rows, input gradient gr @ W summed back by
``_rows_col2im``. Its batch tiles keep the layout (batch-inner depends on the tile's batch).

Convolutions with few taps per output (``C / groups * kh * kw`` at most ``_IMAGE_MAX_K``: one or
two input channels, a 3-channel 3x3 stem) over outputs of at least ``_IMAGE_MIN_PIXELS`` pixels use
a *per-image* layout: columns (N, C * kh * kw, OH * OW) and one GEMM per image (a batched
``matmul``), whose results are already in NCHW order. Their GEMMs are memory-bound (K is tiny), so
the layouts above lose as much to the copies around the product (the wide layout's throw-away
columns, the output and gradient transposes) as the product costs; per image, the weight gradient's
partial products also stay in cache (CNN conv1, 1 -> 16 channels 5x5 on 28x28: forward 1.3 -> 0.9
ms, weight gradient 1.6 -> 0.65 ms). Small images with up to ``_IMAGE_MAX_K_SMALL`` taps take it too
(ResNet's 3-channel 7x7/2 stem on 32x32).

A 1 x 1 convolution without padding (one group, host float arrays) needs no columns at all: it
runs *pointwise*, per image W (O, C) @ the (strided) pixels (C, OH * OW), one batched product whose
result is already NCHW; its gradients are the batched W^T product placed on the stride's pixels
and one product over the whole batch (``_pointwise_*``).

With the eager kernels the batch-inner layout's transposes (input to (C, Hp, Wp, N), output and
output gradient back and forth), its columns (straight from the image, each channel's windows
transposed in cache) and its col2im are C loops (``_kl.to_batch_inner`` and friends): the same
values and sums as the NumPy copies and adds, 2-5x faster on ResNet's 8x8 and smaller stages.

``Resample`` is a separable linear map on the last one or two axes (interpolate, adaptive average
pooling), whose adjoint is again a ``Resample``. Maps with many taps per output (antialiased
downscaling) run as one dense matrix product per axis rather than a gather per tap.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ... import _kernels_loader as _kl
from ... import _threads
from ..._tensor_base import TensorBase
from ..shape import reshape
from . import _bf16_products as _bf16
from ._resample import Resample, _apply_map, _AxisMap, _resample  # noqa: F401 (re-exported)

Pad2 = tuple[tuple[int, int], tuple[int, int]]


_C10_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
           "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int"}


_LAYOUT = {1: "L", 2: "H x W", 3: "D x H x W"}

# convolutions with at most this many output pixels and at least this batch use the batch-inner
# column layout (see the module doc)
_BATCH_INNER_PIXELS = 64
_BATCH_INNER_MIN_N = 8
# batch-inner col2im sums each kernel column's taps first for kernels this tall or taller
_COLUMN_SUM_MIN_KH = 5
# batch-inner convolutions (one group, host float arrays) with N * OH * OW at least this many
# times C * kh * kw build row-major forward columns (see the module doc)
_ROWS_MIN_RATIO = 8
# convolutions with at most this many taps per output (C / groups * kh * kw) and at least this
# many output pixels use the per-image column layout (see the module doc)
_IMAGE_MAX_K = 64
_IMAGE_MIN_PIXELS = 144
# ... and those with up to this many taps whose image's columns have at most
# _IMAGE_SMALL_COLS elements (ResNet's 7x7/2 stem on 32x32 images, 3 channels: forward
# 1.33 -> 1.18x its GEMM floor)
_IMAGE_MAX_K_SMALL = 160
_IMAGE_SMALL_COLS = 1 << 17
# per-image convolutions (one group, column stride 1) with _DIRECT_MIN_K to _DIRECT_MAX_K taps
# per output (C * kh * kw), at most _DIRECT_MAX_O output channels and outputs a whole number of
# 8-pixel vectors wide run the direct kernel, without columns (see _direct_ok)
_DIRECT_MIN_K = 16
_DIRECT_MAX_K = 32
_DIRECT_MAX_O = 32
# the per-image forward builds its columns and runs its products this many bytes of columns at a
# time, so the product reads them from cache
_IMAGE_CHUNK_BYTES = 1 << 19
_IMAGE_SPLIT_MACS = 1 << 22  # a batch's products from which it splits over the threads (about 80 us)
# a convolution whose im2col columns (forward, input or weight gradient) would take more than
# max(_COLS_CAP_MIN, _COLS_CAP_OUT x its output's bytes) runs over batch tiles of at most that
# many bytes of columns (see _batch_step)
_COLS_CAP_MIN = 2 << 20
_COLS_CAP_OUT = 1.0
# ... and the gradients' ops (ConvTranspose, ConvWeight) this many times more: whole-batch products
# sharing the output gradient's columns beat tiles of them more than a forward's product reading
# cache-sized tiles of columns does (ResNet's 3x3 128 on 4x4 outputs, batch 32: backward 1.17 ->
# 1.07x its GEMM floor; its forward is best in tiles)
_COLS_CAP_GRAD = 1.25


class _Geom:
    """Sliding windows over the last two axes of an (N, C, H, W) array.

    ``pad`` is ((top, bottom), (left, right)); ``out`` the number of window positions. With
    ``wide`` (stride 1) windows are addressed in the flattened padded image, see the module doc.
    A convolution passes its batch ``n`` and input channels per group ``cin``, which choose its
    column layout (per-image, batch-inner, wide or plain).
    """
    __slots__ = ("H", "W", "kh", "kw", "sh", "sw", "pt", "pb", "pl", "pr", "dh", "dw", "OH", "OW",
                 "Hp", "Wp", "wide", "batch", "image", "rows", "L")

    def __init__(self, in_hw: tuple[int, int], k: tuple[int, int], stride: tuple[int, int],
                 pad: Pad2, dil: tuple[int, int], out: tuple[int, int] | None = None,
                 wide: bool = True, n: int | None = None, cin: int | None = None) -> None:
        self.H, self.W = in_hw
        self.kh, self.kw = k
        self.sh, self.sw = stride
        (self.pt, self.pb), (self.pl, self.pr) = pad
        self.dh, self.dw = dil
        self.Hp = self.H + self.pt + self.pb
        self.Wp = self.W + self.pl + self.pr
        if out is None:
            out = ((self.Hp - self.dh * (self.kh - 1) - 1) // self.sh + 1,
                   (self.Wp - self.dw * (self.kw - 1) - 1) // self.sw + 1)
        self.OH, self.OW = out
        # per-image for a convolution (``n`` given) with few taps and large enough outputs;
        # batch-inner for one with small outputs; else wide at stride 1 unless its throw-away
        # columns would be half the GEMM or more
        taps = None if cin is None else cin * self.kh * self.kw
        self.image = (n is not None and taps is not None and self.OH * self.OW >= _IMAGE_MIN_PIXELS
                      and (taps <= _IMAGE_MAX_K or (taps <= _IMAGE_MAX_K_SMALL and
                                                    taps * self.OH * self.OW <= _IMAGE_SMALL_COLS)))
        self.batch = (n is not None and n >= _BATCH_INNER_MIN_N and not self.image
                      and 0 < self.OH * self.OW <= _BATCH_INNER_PIXELS)
        self.rows = (self.batch and
                     n * self.OH * self.OW >= _ROWS_MIN_RATIO * cin * self.kh * self.kw)
        self.wide = (wide and not self.batch and not self.image and self.sh == 1 and self.sw == 1 and self.OH > 0
                     and self.OW > 0 and 2 * self.Wp < 3 * self.OW)
        self.L = self.OH * self.Wp if self.wide else self.OH * self.OW

    def __eq__(self, other: object) -> bool:  # by value: compile compares two traces' arguments
        return type(other) is _Geom and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    @property
    def padded(self) -> bool:
        return bool(self.pt or self.pb or self.pl or self.pr)

    def window(self, i: int, j: int) -> tuple:
        """Index of kernel tap (i, j) across all windows: an (N, C, OH, OW) strided view."""
        h0, w0 = i * self.dh, j * self.dw
        return (slice(None), slice(None),
                slice(h0, h0 + self.sh * (self.OH - 1) + 1, self.sh),
                slice(w0, w0 + self.sw * (self.OW - 1) + 1, self.sw))


def _4d(a: Any) -> Any:
    """(N, C, L) -> (N, C, 1, L): 1-D ops run as 2-D ones (a view)."""
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if a.ndim == 3 else a


def _pad(xp: Any, x: Any, g: _Geom, value: Any = 0) -> Any:
    if not g.padded:
        return x
    N, C = x.shape[:2]
    out = xp.full((N, C, g.Hp, g.Wp), value, dtype=x.dtype)
    out[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W] = x
    return out


def _crop(xp: Any, xpad: Any, g: _Geom) -> Any:
    if not g.padded:
        return xpad
    return xp.ascontiguousarray(xpad[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W])


def _unfold_cols(xp: Any, xpad: Any, g: _Geom) -> Any:
    """Padded (N, C, Hp, Wp) -> unfold's columns (N, C * kh * kw, OH * OW): one copy."""
    N, C = xpad.shape[:2]
    s0, s1, s2, s3 = xpad.strides
    v = xp.lib.stride_tricks.as_strided(
        xpad, (N, C, g.kh, g.kw, g.OH, g.OW),
        (s0, s1, g.dh * s2, g.dw * s3, g.sh * s2, g.sw * s3))
    return v.reshape(N, C * g.kh * g.kw, g.OH * g.OW)


def _kgeom(g: _Geom, N: int, C: int, per_image: bool) -> tuple:
    """The eager kernels' (``_kl.im2col`` / ``col2im``) geometry of ``g``'s columns over N
    images of C channels: per image (N, C * kh * kw, L), batch-inner (C * kh * kw, OH, OW, N),
    else (C * kh * kw, N, L) with rows of Wp (wide) or OW values."""
    if per_image:
        sn, st, rs, cs = C * g.kh * g.kw * g.L, g.L, g.OW, 1
    elif g.batch:
        sn, st, rs, cs = 1, g.L * N, g.OW * N, N
    else:
        sn, st, rs, cs = g.L, N * g.L, g.Wp if g.wide else g.OW, 1
    return (N, C, g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW, sn, st,
            rs, cs, int(g.wide))


def _unfold(xp: Any, x: Any, g: _Geom) -> Any:
    """unfold's columns (N, C * kh * kw, OH * OW) of an (N, C, H, W) array: the eager kernel
    where it applies, else a strided copy of the padded input."""
    if type(x) is np.ndarray:
        N, C = x.shape[:2]
        shape = (N, C * g.kh * g.kw, g.L)
        if (cols := _kl.im2col(x, shape, _kgeom(g, N, C, True))) is not None:
            return cols
    return _unfold_cols(xp, _pad(xp, x, g), g)


def _fold(xp: Any, cols: Any, g: _Geom) -> Any:
    """fold: columns (N, C * kh * kw, OH * OW) summed into (N, C, H, W) (the eager kernel where
    it applies: the same sums in the same order)."""
    if type(cols) is np.ndarray:
        N, C = cols.shape[0], cols.shape[1] // (g.kh * g.kw)
        if (out := _kl.col2im(cols, (N, C, g.H, g.W), _kgeom(g, N, C, True))) is not None:
            return out
    return _crop(xp, _fold_cols(xp, cols, g), g)


def _fold_cols(xp: Any, cols: Any, g: _Geom) -> Any:
    """Fold's columns (N, C * kh * kw, OH * OW) -> padded (N, C, Hp, Wp), overlaps summed."""
    N = cols.shape[0]
    c = cols.reshape(N, cols.shape[1] // (g.kh * g.kw), g.kh, g.kw, g.OH, g.OW)
    out = xp.zeros((N, c.shape[1], g.Hp, g.Wp), dtype=cols.dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            out[g.window(i, j)] += c[:, :, i, j]
    return out


def _conv_input(xp: Any, x4: Any, g: _Geom) -> Any:
    """(N, C, H, W) -> the padded buffer the windows read (one extra zero row when wide;
    (C, Hp, Wp, N) when batch-inner; plain when per-image)."""
    if g.batch:
        N, C = x4.shape[:2]
        if (buf := _kl.to_batch_inner(x4, (C, g.Hp, g.Wp, N), (g.pt, g.pl))) is not None:
            return buf
        buf = xp.zeros((C, g.Hp, g.Wp, N), dtype=x4.dtype)
        buf[:, g.pt:g.pt + g.H, g.pl:g.pl + g.W, :] = x4.transpose(1, 2, 3, 0)
        return buf
    if not g.wide:
        return _pad(xp, x4, g)
    N, C = x4.shape[:2]
    buf = xp.zeros((N, C, g.Hp + 1, g.Wp), dtype=x4.dtype)
    buf[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W] = x4
    return buf


def _im2col(xp: Any, x4: Any, g: _Geom, groups: int) -> Any:
    """``_cols`` of ``_conv_input``: the eager kernel (host float arrays; wide or plain columns;
    batch-inner ones by their own kernel: ``im2col``'s planes would write them N apart), which
    reads the padding as zeros rather than copying the input into a padded buffer."""
    if type(x4) is np.ndarray and not g.image:
        N, C = x4.shape[:2]
        shape = (groups, (C // groups) * g.kh * g.kw, N * g.L)
        if g.batch:  # (each channel's windows transposed in cache, then runs of N copied out)
            geom = (N, C, g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW)
            if (cols := _kl.im2col_batch_inner(x4, shape, geom)) is not None:
                return cols
        elif (cols := _kl.im2col(x4, shape, _kgeom(g, N, C, False))) is not None:
            return cols
    return _cols(xp, _conv_input(xp, x4, g), g, groups)


def _cols(xp: Any, buf: Any, g: _Geom, groups: int) -> Any:
    """im2col: padded buffer (N, C, ...) -> columns (groups, C / groups * kh * kw, N * L), or
    (N, groups, C / groups * kh * kw, L) per image."""
    strided = xp.lib.stride_tricks.as_strided
    if g.image:
        N, C = buf.shape[:2]
        s0, s1, s2, s3 = buf.strides
        v = strided(buf, (N, C, g.kh, g.kw, g.OH, g.OW),
                    (s0, s1, g.dh * s2, g.dw * s3, g.sh * s2, g.sw * s3))
        return v.reshape(N, groups, (C // groups) * g.kh * g.kw, g.L)
    if g.batch:  # buffer (C, Hp, Wp, N), columns ordered (OH, OW, N)
        C, N = buf.shape[0], buf.shape[3]
        s0, s1, s2, s3 = buf.strides
        v = strided(buf, (C, g.kh, g.kw, g.OH, g.OW, N),
                    (s0, g.dh * s1, g.dw * s2, g.sh * s1, g.sw * s2, s3))
        return v.reshape(groups, (C // groups) * g.kh * g.kw, N * g.L)
    N, C = buf.shape[:2]
    if g.wide:  # every kernel tap is one contiguous run of each flattened image
        flat = buf.reshape(N, C, buf.shape[2] * buf.shape[3])
        s0, s1, s2 = flat.strides
        v = strided(flat, (C, g.kh, g.kw, N, g.L), (s1, g.dh * g.Wp * s2, g.dw * s2, s0, s2))
    else:
        s0, s1, s2, s3 = buf.strides
        v = strided(buf, (C, g.kh, g.kw, N, g.OH, g.OW),
                    (s1, g.dh * s2, g.dw * s3, s0, g.sh * s2, g.sw * s3))
    return v.reshape(groups, (C // groups) * g.kh * g.kw, N * g.L)


def _image_cols_source(x4: np.ndarray, g: _Geom, groups: int) -> np.ndarray | None:
    """None where the eager kernel builds the per-image columns (one group, a C-ordered input:
    the padding read as zeros), else the padded input that ``_image_cols`` copies from."""
    if groups == 1 and _kl.active is not None and x4.flags.c_contiguous:
        return None
    return _conv_input(np, x4, g)


def _image_cols(x4: np.ndarray, buf: np.ndarray | None, g: _Geom, groups: int, n0: int, n: int,
                cn: np.ndarray, K: int) -> None:
    """Images n0 .. n0 + n's columns into the first K rows of ``cn`` (n, groups, K + extra, L),
    by the eager kernel (``buf`` None) or a strided copy of the padded input ``buf``: the same
    values."""
    if buf is None:  # (per image: the K + extra rows of L apart)
        geom = (n, x4.shape[1], g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH,
                g.OW, cn.shape[1] * cn.shape[2] * g.L, g.L, g.OW, 1, 0)
        _kl.im2col(x4[n0:n0 + n], None, geom, cn)
        return
    s0, s1, s2, s3 = buf.strides
    Cg = x4.shape[1] // groups
    v = np.lib.stride_tricks.as_strided(
        buf[n0:], (n, groups, Cg, g.kh, g.kw, g.OH, g.OW),
        (s0, Cg * s1, s1, g.dh * s2, g.dw * s3, g.sh * s2, g.sw * s3))
    dst = cn[:, :, :K]
    dst.shape = v.shape  # (a view: raises rather than copy)
    dst[...] = v


def _image_forward(x4: np.ndarray, w3: np.ndarray, b: np.ndarray | None, g: _Geom,
                   groups: int) -> tuple[np.ndarray, None]:
    """The per-image convolution on the host: input (N, C, H, W), weight (groups, O / groups,
    C / groups * kh * kw) and bias -> (output (N, O, OH, OW), None). Columns are built and
    multiplied a few images at a time (``_IMAGE_CHUNK_BYTES``) in one reused buffer, so each
    product reads them from cache rather than memory, and the bias rides in the product as one
    more column row of ones (no pass over the output to add it). The columns come from the eager
    kernel where it applies (one group; the padding read as zeros), else from a strided copy of
    the padded input: the same values."""
    N, C = x4.shape[:2]
    G, Og, K = w3.shape
    extra = 0 if b is None else 1
    if extra:
        w3 = np.concatenate([w3, b.reshape(G, Og, 1)], axis=2)
    y = np.empty((N, G, Og, g.L), dtype=x4.dtype)
    buf = _image_cols_source(x4, g, G)

    def images(lo: int, hi: int) -> None:
        for n0, n, cn in _image_chunks(x4, g, G, K, extra, lo, hi):
            _image_cols(x4, buf, g, G, n0, n, cn, K)  # (the taps' K rows, then the bias's)
            _bf16.matmul(w3, cn, out=y[n0:n0 + n])

    _over_images(images, N, Og * (K + extra) * g.L * G)
    return y.reshape(N, G * Og, g.OH, g.OW), None


def _image_chunks(x4: np.ndarray, g: _Geom, G: int, K: int, extra: int, lo: int,
                  hi: int) -> Any:
    """(first image, images, their columns' buffer (n, G, K + extra, L)) for images lo .. hi in
    chunks of ``_IMAGE_CHUNK_BYTES``, one buffer reused (its bias row of ones set once)."""
    step = max(1, _IMAGE_CHUNK_BYTES // max(G * (K + extra) * g.L * x4.itemsize, 1))
    cols = np.empty((min(step, hi - lo), G, K + extra, g.L), dtype=x4.dtype)
    if extra:
        cols[:, :, K] = 1
    for n0 in range(lo, hi, step):
        n = min(step, hi - n0)
        yield n0, n, cols[:n]


def _over_images(images: Any, N: int, macs: int) -> None:
    """``images(lo, hi)`` over the batch: in parts on the threads (``_threads.split``: each
    part's products on one BLAS thread) where two or more run and the batch's products (``macs``
    multiply-adds an image) are at least ``_IMAGE_SPLIT_MACS``, else whole. Each image's values
    are the same either way (its products and columns do not depend on the part)."""
    parts = _threads.split_parts(N) if macs * N >= _IMAGE_SPLIT_MACS else None
    if parts is None or not _threads.split(images, parts):
        images(0, N)


def _direct_ok(g: _Geom, groups: int, x4: Any, w4: Any, b: Any) -> bool:
    """Whether a convolution's forward runs the direct kernel (``_kl.conv_direct``): per-image
    layout, one group, column stride 1, ``_DIRECT_MIN_K`` to ``_DIRECT_MAX_K`` taps per output,
    at most ``_DIRECT_MAX_O`` output channels and output rows of whole 8-pixel vectors, host
    float32 / float64 arrays of one dtype. Its columns would be the output's pixels times the
    taps, built and read again for a product of a few taps: CNN conv1 (1 -> 16 channels, 5 x 5,
    batch 64 of 28 x 28) 0.48 -> 0.40 ms with the caches warm, 0.63 -> 0.54 ms cold. Outside
    these bounds it measured slower than the columns (fewer taps, more channels, a part-vector
    at each row's end: 0.72-0.96x; docs/benchmarks.md)."""
    return (_kl.active is not None and g.image and groups == 1 and g.sw == 1
            and _DIRECT_MIN_K <= w4.shape[1] * g.kh * g.kw <= _DIRECT_MAX_K
            and w4.shape[0] <= _DIRECT_MAX_O and g.OW % 8 == 0
            and type(x4) is np.ndarray and x4.dtype in (np.float32, np.float64)
            and type(w4) is np.ndarray and w4.dtype == x4.dtype
            and (b is None or (type(b) is np.ndarray and b.dtype == x4.dtype)))


def _direct_forward(x4: np.ndarray, w4: np.ndarray, b: np.ndarray | None, g: _Geom) -> Any:
    """The direct kernel's output (N, O, OH, OW), bias added; None where it does not apply."""
    geom = (x4.shape[0], x4.shape[1], g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw,
            g.OH, g.OW)
    return _kl.conv_direct(np.ascontiguousarray(x4), w4, b, geom)


def _image_weight_grad(x4: np.ndarray, g4: np.ndarray, g: _Geom, groups: int,
                       shape: tuple, bias: bool = False) -> Any:
    """The per-image weight gradient on the host: per image, columns (groups, K, L) @ gy^T
    (L, O / groups), the products summed over the batch axis, transposed into an array of the
    weight's ``shape``; columns built a few images at a time, as ``_image_forward``'s. ``bias``:
    also the bias's gradient, as the product of one more column row of ones (the sums of gy's
    planes ride in the product: no pass over gy of their own) -> (weight's, bias's)."""
    N, C = x4.shape[:2]
    O = g4.shape[1]
    G, Og, Cg = groups, O // groups, C // groups
    K = Cg * g.kh * g.kw
    extra = 1 if bias else 0
    gt = g4.reshape(N, G, Og, g.L)
    parts = np.empty((N, G, K + extra, Og), dtype=x4.dtype)
    buf = _image_cols_source(x4, g, G)

    def images(lo: int, hi: int) -> None:
        for n0, n, cn in _image_chunks(x4, g, G, K, extra, lo, hi):
            _image_cols(x4, buf, g, G, n0, n, cn, K)  # (the taps' K rows, then the bias's)
            _bf16.matmul(cn, gt[n0:n0 + n].swapaxes(2, 3), out=parts[n0:n0 + n])

    _over_images(images, N, Og * (K + extra) * g.L * G)
    total = parts.sum(axis=0)
    gw = np.empty(shape, dtype=x4.dtype)
    gw.reshape(G, Og, -1)[...] = total[:, :K].swapaxes(1, 2)
    return (gw, total[:, K].reshape(O)) if bias else gw


def _batch_step(g: _Geom, n: int, k: int, out_channels: int, itemsize: int,
                out_hw: tuple[int, int] | None = None, grad: bool = False) -> int:
    """Images per batch tile of a convolution over ``n`` images with ``k`` column rows
    (C * kh * kw) and ``out_channels`` output planes (of ``out_hw``, default the windows'
    OH x OW): all ``n`` where the columns of the whole batch fit the cap (near the size of the
    output, at least ``_COLS_CAP_MIN``), else as many as fit it (at least one). PyTorch's
    kernels never hold a whole batch's columns either: a 3x3 convolution's are 9x its input.
    ``grad``: for a gradient's op (ConvTranspose, ConvWeight): at least ``_COLS_CAP_GRAD`` times
    that."""
    per = k * g.L * itemsize
    least = _COLS_CAP_MIN * _COLS_CAP_GRAD if grad else _COLS_CAP_MIN
    if n <= 1 or per * n <= least:
        return n
    pixels = g.OH * g.OW if out_hw is None else out_hw[0] * out_hw[1]
    cap = max(least, _COLS_CAP_OUT * n * out_channels * pixels * itemsize)
    if per * n <= cap:
        return n
    # tiles of even size (each at most the cap): no small last tile, which would run a thin
    # product (and, under _BATCH_INNER_MIN_N images, another column layout)
    step = max(1, int(cap // per))
    return -(-n // -(-n // step))


def _pointwise_ok(g: _Geom, groups: int, *arrays: Any) -> bool:
    """Whether a convolution runs as a pointwise one: a 1 x 1 kernel without padding (any
    stride), one group and host float32 / float64 arrays of one dtype (``None`` entries
    skipped). It needs no columns: the (strided) input's pixels are the columns."""
    if g.kh != 1 or g.kw != 1 or g.padded or groups != 1:
        return False
    dt = arrays[0].dtype
    return dt in (np.float32, np.float64) and all(
        type(a) is np.ndarray and a.dtype == dt for a in arrays if a is not None)


def _pointwise_pixels(x4: np.ndarray, g: _Geom) -> np.ndarray:
    """The pixels a 1 x 1 convolution reads, (N, C, OH * OW): the input itself at stride 1, else
    one strided copy."""
    N, C = x4.shape[:2]
    v = x4[:, :, :(g.OH - 1) * g.sh + 1:g.sh, :(g.OW - 1) * g.sw + 1:g.sw]
    return np.ascontiguousarray(v).reshape(N, C, g.OH * g.OW)


def _pointwise_forward(x4: np.ndarray, w4: np.ndarray, b: np.ndarray | None,
                       g: _Geom) -> np.ndarray:
    """A 1 x 1 convolution: per image W (O, C) @ pixels (C, L), one batched product whose result
    is already (N, O, OH, OW) (one image pixel each: pixels (N, C) @ W^T, also NCHW), then the
    bias. No im2col, output transpose or batch tiles (ResNet's 1x1/2 downsamples: 2.1-3.1x ->
    1.5-1.7x their GEMM floor)."""
    N, O = x4.shape[0], w4.shape[0]
    xs = _pointwise_pixels(x4, g)
    w2 = w4.reshape(O, -1)
    y = _bf16.matmul(xs.reshape(N, -1), w2.T) if g.L == 1 else _bf16.matmul(w2, xs)
    if b is not None:
        y = y.reshape(N, O, g.L)
        y += b.reshape(1, O, 1)
    return y.reshape(N, O, g.OH, g.OW)


def _pointwise_input_grad(g4: np.ndarray, w4: np.ndarray, g: _Geom,
                          in_hw: tuple[int, int]) -> np.ndarray:
    """The input gradient of a 1 x 1 convolution: per image W^T (C, O) @ gy (O, L) (one image
    pixel each: gy (N, O) @ W), placed on the stride's pixels of a zero image (or the image
    itself at stride 1)."""
    N, O = g4.shape[:2]
    C = w4.shape[1]
    gy = np.ascontiguousarray(g4).reshape(N, O, g.L)
    w2 = w4.reshape(O, C)
    gs = _bf16.matmul(gy.reshape(N, O), w2) if g.L == 1 else _bf16.matmul(w2.T, gy)
    gs = gs.reshape(N, C, g.OH, g.OW)
    if tuple(in_hw) == (g.OH, g.OW):
        return gs
    gx = np.zeros((N, C) + tuple(in_hw), dtype=gs.dtype)
    gx[:, :, :(g.OH - 1) * g.sh + 1:g.sh, :(g.OW - 1) * g.sw + 1:g.sw] = gs
    return gx


def _pointwise_weight_grad(x4: np.ndarray, g4: np.ndarray, g: _Geom,
                           shape: tuple) -> np.ndarray:
    """The weight gradient of a 1 x 1 convolution, gy (O, N * L) @ pixels^T (N * L, C): one
    product (after a copy of each into channel-major order unless L is 1), into an array of the
    weight's ``shape`` that owns its memory."""
    N, O = g4.shape[:2]
    xs = _pointwise_pixels(x4, g)
    C = xs.shape[1]
    gy = np.ascontiguousarray(g4).reshape(N, O, g.L)
    gw = np.empty(shape, dtype=xs.dtype)
    if g.L == 1:
        _bf16.matmul(gy.reshape(N, O).T, xs.reshape(N, C), out=gw.reshape(O, C))
    else:
        a = gy.transpose(1, 0, 2).reshape(O, N * g.L)
        bt = xs.transpose(1, 0, 2).reshape(C, N * g.L)
        _bf16.matmul(a, bt.T, out=gw.reshape(O, C))
    return gw


def _rows_ok(g: _Geom, groups: int, *arrays: Any) -> bool:
    """Whether a convolution takes the row-major forward columns: ``g.rows``, one group and host
    float32 / float64 arrays of one dtype (``None`` entries skipped)."""
    if not g.rows or groups != 1:
        return False
    dt = arrays[0].dtype
    return dt in (np.float32, np.float64) and all(
        type(a) is np.ndarray and a.dtype == dt for a in arrays if a is not None)


def _rows(x4: np.ndarray, g: _Geom) -> np.ndarray:
    """(N, C, H, W) -> forward columns as rows (N * OH * OW, kh * kw * C): rows ordered
    (n, oh, ow), taps (i, j, c), copied in one pass from windows of a padded NHWC copy of the
    input (runs of ``kw * C`` values at stride 1); the eager kernel where it applies (an image at
    a time, transposed in cache: the same values)."""
    N, C = x4.shape[:2]
    geom = (N, C, g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW)
    if (rows := _kl.im2row(x4, (N * g.L, g.kh * g.kw * C), geom)) is not None:
        return rows
    buf = (np.zeros if g.padded else np.empty)((N, g.Hp, g.Wp, C), dtype=x4.dtype)
    buf[:, g.pt:g.pt + g.H, g.pl:g.pl + g.W] = x4.transpose(0, 2, 3, 1)
    s0, s1, s2, s3 = buf.strides
    v = np.lib.stride_tricks.as_strided(
        buf, (N, g.OH, g.OW, g.kh, g.kw, C),
        (s0, g.sh * s1, g.sw * s2, g.dh * s1, g.dw * s2, s3))
    rows = np.empty((N * g.L, g.kh * g.kw * C), dtype=x4.dtype)
    dst = rows.view()
    dst.shape = v.shape  # (a view: raises rather than copy)
    dst[...] = v
    return rows


def _rows_forward(x4: np.ndarray, w4: np.ndarray, b: np.ndarray | None,
                  g: _Geom) -> tuple[np.ndarray, np.ndarray]:
    """The row-major forward on the host: rows (N * L, K) @ weight^T (K, O) = (N, L, O), each
    image's (L, O) block transposed into (N, O, OH, OW) with the bias added on the way ->
    (output, rows). (Rows ordered (n, oh, ow) rather than batch-inner make that transpose one of
    small blocks that stay in cache: CNN conv2 forward 1.69 -> 1.32 ms, its GEMM 1.04 ms.)"""
    N, O = x4.shape[0], w4.shape[0]
    rows = _rows(x4, g)
    wt = w4.transpose(2, 3, 1, 0).reshape(rows.shape[1], O)  # (taps (i, j, c), O): a small copy
    y = _bf16.matmul(rows, wt)
    out = np.empty((N, O, g.OH, g.OW), dtype=x4.dtype)
    src = y.reshape(N, g.OH, g.OW, O).transpose(0, 3, 1, 2)
    if b is None:
        out[...] = src
    else:
        np.add(src, b.reshape(1, O, 1, 1), out=out)
    return out, rows


def _grad_rows(gy: np.ndarray) -> np.ndarray:
    """An output gradient (N, O, OH, OW) as rows (N * OH * OW, O), ordered as the forward's."""
    N, O = gy.shape[:2]
    return np.ascontiguousarray(gy.reshape(N, O, -1).transpose(0, 2, 1)).reshape(-1, O)


def _rows_weight_grad(rows: np.ndarray, gy: np.ndarray, shape: tuple, k: tuple[int, int],
                      gr: np.ndarray | None = None) -> np.ndarray:
    """The weight gradient from the forward's rows (N * L, K) and the output gradient
    (N, O, OH, OW) (``gr``: its rows (N * L, O), when at hand): gr^T @ rows = (O, K), taps
    reordered (i, j, c) -> (c, i, j) into an array of the weight's ``shape`` that owns its
    memory."""
    if gr is None:
        gr = _grad_rows(gy)
    O = gr.shape[1]
    part = _bf16.matmul(gr.T, rows).reshape(O, k[0], k[1], -1)
    gw = np.empty(shape, dtype=rows.dtype)
    gw.reshape(O, -1, k[0], k[1])[...] = part.transpose(0, 3, 1, 2)
    return gw


def _rows_input_grad(gr: np.ndarray, w4: np.ndarray, g: _Geom, N: int) -> np.ndarray:
    """The input gradient of a row-major convolution: gradient rows (N * L, O) @ the weight as
    (O, taps (i, j, c)) = columns as rows, summed back into (N, C, H, W) by ``_rows_col2im``."""
    O, C, kh, kw = w4.shape
    wr = w4.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)  # (a small copy)
    return _rows_col2im(_bf16.matmul(gr, wr), g, N, C)


def _rows_col2im(rows: np.ndarray, g: _Geom, N: int, C: int) -> np.ndarray:
    """Row-major columns (N * OH * OW, kh * kw * C) summed back into (N, C, H, W), each pixel's
    taps from zero in (i, j) order: the eager kernel (one pass, a row of the image at a time),
    else one add per tap onto a padded NHWC image and a transposing copy (the same sums)."""
    geom = (N, C, g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW)
    if (out := _kl.col2im_rows(rows, (N, C, g.H, g.W), geom)) is not None:
        return out
    r = rows.reshape(N, g.OH, g.OW, g.kh, g.kw, C)
    img = np.zeros((N, g.Hp, g.Wp, C), dtype=rows.dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            img[(slice(None),) + g.window(i, j)[2:]] += r[:, :, :, i, j]
    return np.ascontiguousarray(img[:, g.pt:g.pt + g.H, g.pl:g.pl + g.W].transpose(0, 3, 1, 2))


def _out_from_cols(xp: Any, y: Any, g: _Geom, N: int) -> Any:
    """GEMM result (O, N * L) -> (N, O, OH, OW), dropping the wide layout's extra columns."""
    O = y.shape[0]
    s = y.itemsize
    if g.batch:  # columns ordered (OH, OW, N)
        if (out := _kl.from_batch_inner(y.reshape(O, g.OH, g.OW, N), (N, O, g.OH, g.OW))) \
                is not None:
            return out
        v = xp.lib.stride_tricks.as_strided(
            y, (N, O, g.OH, g.OW), (s, N * g.L * s, g.OW * N * s, N * s))
        return xp.ascontiguousarray(v)
    row = g.Wp if g.wide else g.OW
    v = xp.lib.stride_tricks.as_strided(y, (N, O, g.OH, g.OW), (g.L * s, N * g.L * s, row * s, s))
    return xp.ascontiguousarray(v)


def _grad_to_cols(xp: Any, gy: Any, g: _Geom) -> Any:
    """(N, O, OH, OW) -> (O, N * L), zeros in the wide layout's extra columns."""
    N, O = gy.shape[:2]
    if g.batch:
        if (buf := _kl.to_batch_inner(gy, (O, g.OH, g.OW, N), (0, 0))) is not None:
            return buf.reshape(O, N * g.L)
        return xp.ascontiguousarray(gy.transpose(1, 2, 3, 0)).reshape(O, N * g.L)
    if g.wide:
        buf = xp.zeros((O, N, g.OH, g.Wp), dtype=gy.dtype)
        buf[..., :g.OW] = gy.transpose(1, 0, 2, 3)
        return buf.reshape(O, N * g.L)
    return xp.ascontiguousarray(gy.transpose(1, 0, 2, 3)).reshape(O, N * g.L)


def _col2im(xp: Any, cols: Any, g: _Geom, N: int) -> Any:
    """Columns (C * kh * kw, N * L) (per image: (N, C * kh * kw, L)) -> (N, C, H, W): each tap's
    values added back where it read them (one vectorised add per kernel tap), then the padding
    cropped. The eager kernel, where it applies (not batch-inner columns: 2x slower than the
    adds below on those), sums the same values in the same order."""
    if type(cols) is np.ndarray and not g.batch:
        C = cols.shape[1 if g.image else 0] // (g.kh * g.kw)
        if (out := _kl.col2im(cols, (N, C, g.H, g.W), _kgeom(g, N, C, g.image))) is not None:
            return out
    if g.image:
        C = cols.shape[1] // (g.kh * g.kw)
        c = cols.reshape(N, C, g.kh, g.kw, g.OH, g.OW)
        out = xp.zeros((N, C, g.Hp, g.Wp), dtype=cols.dtype)
        for i in range(g.kh):
            for j in range(g.kw):
                out[g.window(i, j)] += c[:, :, i, j]
        return _crop(xp, out, g)
    C = cols.shape[0] // (g.kh * g.kw)
    if g.batch and g.kh < _COLUMN_SUM_MIN_KH and type(cols) is np.ndarray:
        # the eager kernel: each channel's taps summed in a (H, W, N) tile in cache, in the
        # adds' order below, then transposed into place
        geom = (N, C, g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW)
        if (out := _kl.col2im_batch_inner(cols, (N, C, g.H, g.W), geom)) is not None:
            return out
    if g.batch:  # columns ordered (OH, OW, N): each tap adds runs of N (OW * N at stride 1)
        c = cols.reshape(C, g.kh, g.kw, g.OH, g.OW, N)
        if g.kh < _COLUMN_SUM_MIN_KH or g.sw != 1:
            out = xp.zeros((C, g.Hp, g.Wp, N), dtype=cols.dtype)
        else:  # (the first kernel column is copied in below)
            out = xp.empty((C, g.Hp, g.Wp, N), dtype=cols.dtype)
            out[:, :, g.OW:] = 0
        if g.kh < _COLUMN_SUM_MIN_KH:
            for i in range(g.kh):
                for j in range(g.kw):
                    out[(slice(None),) + g.window(i, j)[2:] + (slice(None),)] += c[:, i, j]
        else:
            # the taps of one kernel column first, into (C, Hp, OW, N), where each lands on
            # whole (OW * N)-long rows (one long run per channel at stride 1: NumPy adds those
            # several times faster than the short strided runs of the full image), then that
            # column's sum into the image: kw strided adds instead of kh * kw (CNN conv2 5x5:
            # 1.33 -> 0.91 ms; 3x3 kernels lose 25-60%, hence the threshold)
            # (at stride 1 the first tap of each column, and the first column, are copied into
            # place and only the rest zeroed, saving a zeroing pass over each)
            col = xp.empty((C, g.Hp, g.OW, N), dtype=cols.dtype)
            rows = g.sh * (g.OH - 1) + 1
            for j in range(g.kw):
                first = 0
                if g.sh == 1:
                    col[:, :rows] = c[:, 0, j]
                    col[:, rows:] = 0
                    first = 1
                else:
                    col[...] = 0
                for i in range(first, g.kh):
                    col[:, i * g.dh:i * g.dh + rows:g.sh] += c[:, i, j]
                if j == 0 and g.sw == 1:
                    out[:, :, :g.OW] = col
                else:
                    out[:, :, g.window(0, j)[3]] += col
        out = out[:, g.pt:g.pt + g.H, g.pl:g.pl + g.W, :]
        return xp.ascontiguousarray(out.transpose(3, 0, 1, 2))
    if g.wide:
        c = cols.reshape(C, g.kh, g.kw, N, g.L)
        out = xp.zeros((C, N, (g.Hp + 1) * g.Wp), dtype=cols.dtype)
        for i in range(g.kh):
            for j in range(g.kw):
                o = i * g.dh * g.Wp + j * g.dw
                out[:, :, o:o + g.L] += c[:, i, j]
        out = out.reshape(C, N, g.Hp + 1, g.Wp)
    else:
        c = cols.reshape(C, g.kh, g.kw, N, g.OH, g.OW)
        out = xp.zeros((C, N, g.Hp, g.Wp), dtype=cols.dtype)
        for i in range(g.kh):
            for j in range(g.kw):
                out[g.window(i, j)] += c[:, i, j]
    out = out[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W]
    return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))


def _spatial_axes(ndim: int) -> tuple[int, ...]:
    return (0,) + tuple(range(2, ndim))


def _bias_grad(xp: Any, grad: Any, ndim: int) -> Any:
    """A convolution's bias gradient, the sum of ``grad`` (N, C, ...) over all axes but C: one
    matrix-vector product with ones over the spatial axes, then a sum over the batch, 4x faster
    than NumPy's reduction over axes (0, 2, 3) (CNN conv1's 64 x 16 x 24 x 24: 0.31 -> 0.08 ms).
    The same on every device (their results agree to the last bit); a recorded gradient
    (create_graph) and other dtypes take the plain sum."""
    if isinstance(grad, TensorBase) or grad.dtype not in (np.float32, np.float64) or \
            grad.ndim < 3:
        return grad.sum(axis=_spatial_axes(ndim))
    N, C = grad.shape[:2]
    L = math.prod(grad.shape[2:])
    return xp.matmul(grad.reshape(N, C, L), xp.ones(L, dtype=grad.dtype)).sum(axis=0)


def _reshape(t: Any, shape: tuple) -> Any:
    return reshape(t, shape)


def _check_tensor(x: Any, fn: str, what: str = "input") -> None:
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fn}(): argument '{what}' must be Tensor, not {type(x).__name__}")


def _ints(v: Any, n: int, name: str, fn: str, conv_msg: bool = True) -> tuple[int, ...]:
    """An int or a sequence of ints as an n-tuple, as PyTorch accepts them."""
    if isinstance(v, (bool, float)) or v is None:
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not "
                        f"{type(v).__name__}")
    try:
        return (operator.index(v),) * n
    except TypeError:
        pass
    try:
        vals = tuple(operator.index(e) for e in v)
    except TypeError:
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but got "
                        f"{v!r}") from None
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        if conv_msg:
            raise RuntimeError(
                f"expected {name} to be a single integer value or a list of {n} values to "
                f"match the convolution dimensions, but got {name}={list(vals)}")
        raise RuntimeError(f"{fn}: {name} must either be a single int, or a tuple of {n} ints, "
                           f"but got {name}={list(vals)}")
    return vals


def _tname(t: Any) -> str:
    s = str(t._data.dtype)
    return _C10_NAMES.get(s, s)


def _same_dtype(fn: str, x: Any, other: Any, what: str) -> None:
    if x._data.dtype != other._data.dtype:
        raise RuntimeError(
            f"Input type ({_tname(x)}) and {what} type ({_tname(other)}) should be the same "
            f"({fn}: input is {x.dtype}, {what} is {other.dtype}); convert one of them, e.g. "
            f"input.to({other.dtype}) or module.to({x.dtype})")


def _to2(v: tuple, fill: int) -> tuple:
    return (fill,) + v if len(v) == 1 else v


def _unbatch(x: Any, batched_ndim: int) -> tuple[Any, bool]:
    if x._data.ndim == batched_ndim - 1:
        return _reshape(x, (1,) + tuple(x._data.shape)), True
    return x, False


def _rebatch(y: Any, unbatched: bool) -> Any:
    return _reshape(y, tuple(y._data.shape[1:])) if unbatched else y


def _depth_taps(x: Any, k: int, s: int, d: int, n_out: int) -> list:
    """The ``k`` strided depth slices (N, C, n_out, H, W) that kernel tap i reads."""
    return [x[:, :, i * d: i * d + s * (n_out - 1) + 1: s] for i in range(k)]
