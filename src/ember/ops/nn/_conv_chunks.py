"""Large convolutions in chunks of output rows, built by the eager kernels one image at a time.

With the eager kernels, a large convolution (wide or plain columns, at least half
``_CHUNK_BYTES`` of them per image; host float32/float64 arrays) runs a chunk of output rows of
one image at a time: ``_kl.im2col`` builds the chunk's columns (at most ``_CHUNK_BYTES``) into one
reused buffer, reading the padding as zeros, and the product reads them from cache and writes the
output in place: no batch-sized columns, padded copy, wide throw-away columns or transposes
(forward and input gradient bit for bit the NumPy path's where the BLAS sums a product's column
alike for any width, as OpenBLAS's AVX-512 kernels do; within rounding of it with its AVX2
kernels; docs/benchmarks.md). At two threads or
more the images are cut into one part per thread (``_threads.split``: each part's products on one
BLAS thread, so an image's values are one thread's); the weight gradient sums its images in
blocks fixed by the shapes alone (``_wgrad_blocks``), so its value does not depend on the thread
count either. ``convolution.py``'s ops choose this path (``_chunked``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _kernels_loader as _kl
from ... import _threads
from . import _bf16_products as _bf16
from ._kernels import _Geom, _over_images

_CHUNK_BYTES = 1 << 21


def _chunked(g: _Geom, k: int, *arrays: Any) -> bool:
    """Whether a convolution with ``k`` column rows (C * kh * kw) runs in row chunks: the
    kernels on, wide or plain columns of at least half ``_CHUNK_BYTES`` per image, non-empty
    host float32/float64 arrays of one dtype (``None`` entries skipped), and one thread or a
    batch that ``_threads.split`` can cut (two images or more, OpenBLAS's count settable: each
    part's chunk products on one BLAS thread). Otherwise, at two threads OpenBLAS would split
    each of the chunks' many small products, and waiting for its second thread made a busy
    machine's step 2.7x slower than the whole-batch products."""
    x = arrays[0]
    if (_kl.active is None or g.batch or g.image or type(x) is not np.ndarray
            or x.size == 0 or x.dtype not in (np.float32, np.float64)
            or 2 * k * g.OH * g.OW * x.itemsize < _CHUNK_BYTES
            or (_kl.active.get_num_threads() != 1 and _threads.split_parts(x.shape[0]) is None)):
        return False
    return all(type(a) is np.ndarray and a.dtype == x.dtype for a in arrays if a is not None)


def _chunks(g: _Geom, k: int, itemsize: int) -> tuple[int, list]:
    """(rows per chunk, [(first output row, rows), ...]) for columns of ``k`` rows."""
    R = max(1, min(g.OH, _CHUNK_BYTES // (k * g.OW * itemsize)))
    return R, [(r0, min(R, g.OH - r0)) for r0 in range(0, g.OH, R)]


def _chunk_geom(g: _Geom, C: int, r0: int, r: int) -> tuple:
    """The kernels' geometry of one image's columns (C * kh * kw, r * OW) for output rows
    [r0, r0 + r): the windows of those rows, as if the padding above were ``pt - r0 * sh``."""
    L = r * g.OW
    return (1, C, g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt - r0 * g.sh, g.pl, g.dh, g.dw, r, g.OW,
            L, L, g.OW, 1, 0)


def _chunk_forward(x4: np.ndarray, w4: np.ndarray, b: Any, g: _Geom, groups: int) -> np.ndarray:
    """Conv's forward in row chunks: w (groups, O / groups, K) @ columns (groups, K, r * OW)
    into the output's rows in place, then the bias (the NumPy path's product and sum); the
    images in one part per thread, each with its own buffer."""
    x4 = np.ascontiguousarray(x4)
    N, C = x4.shape[:2]
    O, Cg, kh, kw = w4.shape
    K, Og, OL = Cg * kh * kw, O // groups, g.OH * g.OW
    w3 = w4.reshape(groups, Og, K)
    y = np.empty((N, O, g.OH, g.OW), x4.dtype)
    y4 = y.reshape(N, groups, Og, OL)
    R, chunks = _chunks(g, groups * K, x4.itemsize)
    bias = None if b is None else b.reshape(groups, Og, 1)

    def images(lo: int, hi: int) -> None:
        buf = np.empty(groups * K * R * g.OW, x4.dtype)
        for n in range(lo, hi):
            xn = x4[n:n + 1]
            for r0, r in chunks:
                cols = buf[:groups * K * r * g.OW].reshape(groups, K, r * g.OW)
                _kl.im2col(xn, cols.shape, _chunk_geom(g, C, r0, r), cols)
                dst = y4[n, :, :, r0 * g.OW:(r0 + r) * g.OW]
                _bf16.matmul(w3, cols, out=dst)
                if bias is not None:
                    dst += bias

    _over_images(images, N, groups * Og * K * OL)
    return y


def _chunk_transpose(g4: np.ndarray, w4: np.ndarray, g: _Geom, groups: int) -> np.ndarray:
    """ConvTranspose's forward (no bias) in row chunks: W^T @ the gradient's rows, summed into
    the image by ``_kl.col2im``. The chunks run last to first, so each pixel still receives its
    taps in (i, j) order (a later output row holds its earlier kernel rows): bit for bit. The
    images in one part per thread, each with its own buffer."""
    g4 = np.ascontiguousarray(g4)
    N, O = g4.shape[:2]
    Cg, kh, kw = w4.shape[1:]
    C, K, Og, OL = Cg * groups, Cg * kh * kw, O // groups, g.OH * g.OW
    wm = w4.reshape(groups, Og, K).swapaxes(1, 2)
    g3 = g4.reshape(N, groups, Og, OL)
    out = np.zeros((N, C, g.H, g.W), g4.dtype)
    R, chunks = _chunks(g, groups * K, g4.itemsize)

    def images(lo: int, hi: int) -> None:
        buf = np.empty(groups * K * R * g.OW, g4.dtype)
        for n in range(lo, hi):
            on = out[n:n + 1]
            for r0, r in reversed(chunks):
                cols = buf[:groups * K * r * g.OW].reshape(groups, K, r * g.OW)
                _bf16.matmul(wm, g3[n, :, :, r0 * g.OW:(r0 + r) * g.OW], out=cols)
                _kl.col2im(cols, on.shape, _chunk_geom(g, C, r0, r), on)

    _over_images(images, N, groups * Og * K * OL)
    return out


# The chunked weight gradient sums its images in at most this many blocks (contiguous images,
# fixed by the shapes: each block's chunks summed in order, then the blocks in order), so two or
# more threads can take blocks and the value is the same at every thread count; the blocks'
# partial sums together at most _WGRAD_BLOCK_BYTES (a 512 -> 512 3x3 weight: 3 blocks).
_WGRAD_BLOCKS = 8
_WGRAD_BLOCK_BYTES = 32 << 20


def _wgrad_blocks(n: int, acc_bytes: int) -> list[tuple[int, int]]:
    """The image blocks [(lo, hi), ...] of a chunked weight gradient over ``n`` images whose
    partial sums take ``acc_bytes`` each: a function of the shapes alone."""
    nb = max(1, min(n, _WGRAD_BLOCKS, _WGRAD_BLOCK_BYTES // max(acc_bytes, 1)))
    return [(n * i // nb, n * (i + 1) // nb) for i in range(nb)]


def _chunk_weight_grad(x4: np.ndarray, g4: np.ndarray, g: _Geom, groups: int,
                       shape: tuple) -> np.ndarray:
    """ConvWeight's forward in row chunks: the sum over chunks of the chunk's columns @ the
    gradient's rows^T (groups, K, O / groups) (the faster orientation for these long, thin
    products, as ``_weight_grad``'s), in image blocks (``_wgrad_blocks``) over the threads,
    transposed into an array of the weight's ``shape`` that owns its memory."""
    x4, g4 = np.ascontiguousarray(x4), np.ascontiguousarray(g4)
    N, C = x4.shape[:2]
    O = g4.shape[1]
    K, Og, OL = (C // groups) * g.kh * g.kw, O // groups, g.OH * g.OW
    g3 = g4.reshape(N, groups, Og, OL)
    R, chunks = _chunks(g, groups * K, x4.itemsize)
    blocks = _wgrad_blocks(N, groups * K * Og * x4.itemsize)
    acc = np.empty((len(blocks), groups, K, Og), x4.dtype)

    def block_sums(lo: int, hi: int) -> None:  # blocks lo .. hi
        buf = np.empty(groups * K * R * g.OW, x4.dtype)
        part = np.empty((groups, K, Og), x4.dtype)
        for i in range(lo, hi):
            first = True
            for n in range(*blocks[i]):
                xn = x4[n:n + 1]
                for r0, r in chunks:
                    cols = buf[:groups * K * r * g.OW].reshape(groups, K, r * g.OW)
                    _kl.im2col(xn, cols.shape, _chunk_geom(g, C, r0, r), cols)
                    _bf16.matmul(cols, g3[n, :, :, r0 * g.OW:(r0 + r) * g.OW].swapaxes(1, 2),
                                 out=acc[i] if first else part)
                    if not first:
                        acc[i] += part
                    first = False

    _over_images(block_sums, len(blocks), groups * Og * K * OL * -(-N // len(blocks)))
    total = acc[0]
    for i in range(1, len(blocks)):  # (in order: the same sum at every thread count)
        total += acc[i]
    gw = np.empty(shape, x4.dtype)
    gw.reshape(groups, Og, K)[...] = total.swapaxes(1, 2)
    return gw
