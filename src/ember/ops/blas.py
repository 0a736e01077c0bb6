"""BLAS operations, as PyTorch's docs group them: the matrix products (matmul, mm, bmm, mv, dot,
vdot, inner, outer/ger) and the fused forms beta * input + alpha * product (addmm, addmv, addbmm,
baddbmm, addr, chain_matmul).

The matmul family follows ``torch.matmul``: 1-D operands are promoted to matrices (and the unit
dim dropped again), batch dims broadcast, both operands must have the same dtype (no promotion,
as in PyTorch), and float16/bfloat16 multiply in float32 (what BLAS-backed PyTorch does too).
Shape and dtype errors name both operands. Backward rules return gradients in the broadcast
shape; the engine sums broadcast batch dims, and the rules drop the promoted unit dims themselves.

Neighbours: ``linalg.py`` (inverse, det, solve, decompositions, matrix_power, matrix_norm),
``other_matrix.py`` (einsum, tensordot, triangles, diagonals, trace, kron, cross); the argument
checks all three share are in ``_matrix.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _threads
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd.function import Op
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._matrix import (
    _broadcast_batch,
    _dname,
    _is_low,
    _legacy,
    _no_bool,
    _result,
    _same_dtype_mm,
    _shape,
    _tensor,
)
from ._promote import _om, conjugated, round_half
from .pointwise import Mul

__all__ = [
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "vdot",
    "inner",
    "outer",
    "ger",
    "addmm",
    "addmv",
    "addbmm",
    "baddbmm",
    "addr",
    "chain_matmul",
]


# ---------------------------------------------------------------------------------------------
# matmul family


def matmul(input: Any, other: Any, *, out: Any = None) -> Any:
    """Matrix product with PyTorch's rules for 1-D operands and broadcast batch dims.

    Shapes: (k,)@(k,) -> (); (n, k)@(k,) -> (n,); (k,)@(k, m) -> (m,); (*, n, k)@(*, k, m) ->
    (*, n, m) with the batch dims ``*`` broadcast. Example: ``matmul(x, w.mT)``.
    """
    if out is None and not _amp.active and isinstance(input, TensorBase) \
            and isinstance(other, TensorBase):
        da, db = input._data, other._data  # the common call, matrices that fit, in one test
        if da.ndim == 2 and db.ndim == 2 and da.dtype == db.dtype and da.dtype.kind == "f" \
                and da.shape[1] == db.shape[0]:
            return Mm.apply(input, other)
    if _amp.active and out is None:
        input, other = _amp_cast("matmul", input, other)
    a = _tensor(input, "matmul", "input", 1)
    b = _tensor(other, "matmul", "other", 2)
    _check_matmul("matmul", a, b)
    na, nb = a._data.ndim, b._data.ndim
    if na == 1 and nb == 1:
        op: Any = Dot
    elif na == 2 and nb == 2:
        op = Mm
    elif na == 2 and nb == 1:
        op = Mv
    elif na == 1 and nb == 2:
        op = _VecMat
    elif na == 3 and nb == 3 and a._data.shape[0] == b._data.shape[0]:
        op = Bmm
    else:
        op = Matmul
    if a._data.dtype.kind == "c":
        op = conjugated(op)
    return _result(op.apply(a, b), out, "matmul")


def mm(input: Any, mat2: Any, *, out: Any = None) -> Any:
    """Matrix product of two 2-D tensors: (n, k) @ (k, m) -> (n, m)."""
    if _amp.active and out is None:
        input, mat2 = _amp_cast("mm", input, mat2)
    a = _tensor(input, "mm", "input", 1)
    b = _tensor(mat2, "mm", "mat2", 2)
    for x, name in ((a, "self"), (b, "mat2")):
        if x._data.ndim != 2:
            raise RuntimeError(
                f"{name} must be a matrix (mm: got shapes {_shape(a)} and {_shape(b)}); mm takes "
                "2-D tensors only, use torch.matmul for vectors or batches"
            )
    _check_matmul("mm", a, b)
    return _result((Mm if a._data.dtype.kind != "c" else conjugated(Mm)).apply(a, b), out, "mm")


def bmm(input: Any, mat2: Any, *, out: Any = None) -> Any:
    """Batched matrix product of 3-D tensors: (b, n, k) @ (b, k, m) -> (b, n, m)."""
    if _amp.active and out is None:
        input, mat2 = _amp_cast("bmm", input, mat2)
    a = _tensor(input, "bmm", "input", 1)
    b = _tensor(mat2, "bmm", "mat2", 2)
    for x, name in ((a, "batch1"), (b, "batch2")):
        if x._data.ndim != 3:
            raise RuntimeError(
                f"{name} must be a 3D tensor (bmm: got shapes {_shape(a)} and {_shape(b)}); use "
                "torch.matmul to broadcast batch dims or multiply other ranks"
            )
    _same_dtype_mm("bmm", a, b)
    _no_bool("bmm", a, b)
    sa, sb = _shape(a), _shape(b)
    if sb[0] != sa[0] or sb[1] != sa[2]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] "
            f"but got: [{sb[0]}, {sb[1]}]. (bmm: {sa} @ {sb}: the batch sizes must be equal and "
            f"the inner dimensions {sa[2]} and {sb[1]} must match)"
        )
    return _result((Bmm if a._data.dtype.kind != "c" else conjugated(Bmm)).apply(a, b), out,
                   "bmm")


def mv(input: Any, vec: Any, *, out: Any = None) -> Any:
    """Matrix-vector product: (n, k) @ (k,) -> (n,)."""
    if _amp.active and out is None:
        input, vec = _amp_cast("mv", input, vec)
    a = _tensor(input, "mv", "input", 1)
    v = _tensor(vec, "mv", "vec", 2)
    if a._data.ndim != 2 or v._data.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {a._data.ndim}, {v._data.ndim} (mv: shapes "
            f"{_shape(a)} and {_shape(v)}; mv takes a 2-D matrix and a 1-D vector)"
        )
    _check_matmul("mv", a, v)
    return _result((Mv if a._data.dtype.kind != "c" else conjugated(Mv)).apply(a, v), out, "mv")


def dot(input: Any, tensor: Any, *, out: Any = None) -> Any:
    """Inner product of two 1-D tensors (a 0-d tensor)."""
    if _amp.active and out is None:
        input, tensor = _amp_cast("dot", input, tensor)
    a = _tensor(input, "dot", "input", 1)
    b = _tensor(tensor, "dot", "tensor", 2)
    _check_vectors("dot", a, b)
    return _result((Dot if a._data.dtype.kind != "c" else conjugated(Dot)).apply(a, b), out,
                   "dot")


def vdot(input: Any, other: Any, *, out: Any = None) -> Any:
    """sum(conj(a) * b) of two 1-D tensors (the dot product for real tensors)."""
    if _amp.active and out is None:
        input, other = _amp_cast("vdot", input, other)
    a = _tensor(input, "vdot", "input", 1)
    b = _tensor(other, "vdot", "other", 2)
    _check_vectors("dot", a, b)
    return _result(Vdot.apply(a, b), out, "vdot")


def inner(input: Any, other: Any, *, out: Any = None) -> Any:
    """Sum over the last dims: out[i..., j...] = sum_k a[i..., k] b[j..., k] (a * b for 0-d)."""
    a = _tensor(input, "inner", "input", 1)
    b = _tensor(other, "inner", "other", 2)
    if a._data.ndim == 0 or b._data.ndim == 0:
        return _result(a * b, out, "inner")
    sa, sb = _shape(a), _shape(b)
    if sa[-1] != sb[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(sa)} and {list(sb)}"
        )
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"both inputs should have same dtype (inner: {_dname(a)} and {_dname(b)}); convert "
            "one first, e.g. b.to(a.dtype)"
        )
    if len(sa) == 1 and len(sb) == 1:
        return _result(dot(a, b), out, "inner")
    k = sa[-1]
    res = mm(a.reshape(math.prod(sa[:-1]), k), b.reshape(math.prod(sb[:-1]), k).mT)
    return _result(res.reshape(sa[:-1] + sb[:-1]), out, "inner")


def outer(input: Any, vec2: Any, *, out: Any = None) -> Any:
    """Outer product of two 1-D tensors: out[i, j] = a[i] * b[j] (dtypes promote)."""
    a = _tensor(input, "outer", "input", 1)
    b = _tensor(vec2, "outer", "vec2", 2)
    for x, name in ((a, "self"), (b, "vec2")):
        if x._data.ndim != 1:
            raise RuntimeError(
                f"outer: Expected 1-D argument {name}, but got {x._data.ndim}-D (shape "
                f"{_shape(x)}); flatten it first, e.g. x.flatten()"
            )
    a, b = a.reshape(-1, 1), b.reshape(1, -1)
    if a._data.dtype.char in "fd" and b._data.dtype == a._data.dtype:  # (one pass in C)
        return _result(Outer.apply(a, b), out, "outer")
    return _result(a * b, out, "outer")


class Matmul(Op):
    """out = a @ b  (1-D operands promoted to matrices and back; batch dims broadcast)
    grad_a = grad @ b^T          grad_b = a^T @ grad
    (promoted unit dims dropped; broadcast batch dims summed)"""

    node_name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        need = _needs(ctx)
        if need[0] or need[1]:
            ctx.shapes = (a.shape, b.shape)
            ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        return _mm_arrays(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad[:2]
        if a is None:  # a is saved for grad_b only; without it, its shape is all the rule reads
            a = _Shape(ctx.shapes[0])
        if b is None:
            b = _Shape(ctx.shapes[1])
        return _matmul_grads(ctx, a, b, grad, need_a, need_b)


class _Shape:
    """Stands in for an operand whose gradient nobody asked for: only its shape is read."""

    __slots__ = ("shape", "ndim")

    def __init__(self, shape: tuple) -> None:
        self.shape, self.ndim = shape, len(shape)

    def reshape(self, shape: tuple) -> _Shape:
        return _Shape(shape)

    def swapaxes(self, i: int, j: int) -> _Shape:
        s = list(self.shape)
        s[i], s[j] = s[j], s[i]
        return _Shape(tuple(s))


class Mm(Matmul):
    """out = a @ b for matrices          grad_a = grad @ b^T          grad_b = a^T @ grad"""

    node_name = "MmBackward0"


class Bmm(Matmul):
    """out[i] = a[i] @ b[i]          grad_a = grad @ b^T          grad_b = a^T @ grad"""

    node_name = "BmmBackward0"


class Mv(Matmul):
    """out = A @ v          grad_A = outer(grad, v)          grad_v = A^T @ grad"""

    node_name = "MvBackward0"


class _VecMat(Matmul):
    """out = v @ A          grad_v = A @ grad          grad_A = outer(v, grad)"""

    node_name = "SqueezeBackward4"


class Outer(Mul):
    """out = a * b of a column (m, 1) and a row (1, n) of one dtype (outer's product), as Mul
    (its backward too) but in one C pass where the kernel applies: NumPy's broadcast multiply
    runs a loop several times slower; the same bits."""

    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        if (out := _kernels.outer(a.ravel(), b.ravel())) is None:
            return Mul.forward(ctx, a, b)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        return out


class Dot(Op):
    """out = sum_i a_i b_i          grad_a = grad * b          grad_b = grad * a"""

    node_name = "DotBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        need = ctx.needs_input_grad  # each operand is kept for the other's gradient only
        ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        return _mm_arrays(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        need = ctx.needs_input_grad
        return (grad * b if need[0] else None), (grad * a if need[1] else None)


class Vdot(Dot):
    """out = sum_i conj(a_i) b_i (= dot for real tensors)
    grad_a = conj(grad) * b          grad_b = grad * a"""

    node_name = "VdotBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        need = ctx.needs_input_grad
        ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        return _mm_arrays(ctx.xp.conj(a) if a.dtype.kind == "c" else a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        need = ctx.needs_input_grad
        return (ctx.xp.conj(grad) * b if need[0] else None), (grad * a if need[1] else None)


def _matmul_grads(ctx: Any, a: Any, b: Any, grad: Any, need_a: bool, need_b: bool) -> tuple:
    """Gradients of ``a @ b`` (matmul semantics) for the cotangent ``grad``.

    Vectors are promoted (a: (k,) -> (1, k), b: (k,) -> (k, 1)) and ``grad`` reshaped to the
    promoted output; the unit dims are dropped from the results again. A matrix shared by a
    whole batch gets its gradient as one GEMM over the flattened batch.
    """
    if (type(grad) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray
            and a.ndim == 2 and b.ndim == 2 and grad.dtype.kind == "f" and grad.dtype.itemsize > 2
            and a.dtype == grad.dtype and b.dtype == grad.dtype):
        # host matrices outside create_graph: the two products ctx.call(Matmul, ...) would make
        return (_backend.gemm(grad, b.T) if need_a else None,
                _backend.gemm(a.T, grad) if need_b else None)
    xp = ctx.xp
    na, nb = a.ndim, b.ndim
    k = a.shape[-1]
    A = a.reshape((1, k)) if na == 1 else a
    B = b.reshape((k, 1)) if nb == 1 else b
    n, m = A.shape[-2], B.shape[-1]
    if na == 1 and nb == 1:
        G = grad.reshape((1, 1))
    elif na == 1:
        G = grad.reshape(tuple(grad.shape[:-1]) + (1, m))
    elif nb == 1:
        G = grad.reshape(tuple(grad.shape) + (1,))
    else:
        G = grad
    batch = tuple(G.shape[:-2])
    nbatch = math.prod(batch)
    ga = gb = None
    op = Matmul  # complex tensors (create_graph records the products): the conjugated op
    if type(G) is not np.ndarray and (G._data if isinstance(G, TensorBase) else G).dtype.kind == "c":
        op = conjugated(Matmul)
    if need_a:
        if A.ndim == 2 and batch:  # A shared by the batch of B: sum_b G_b B_b^T
            gp = xp.moveaxis(G, -2, 0).reshape((n, nbatch * m))
            bp = B.swapaxes(-1, -2).reshape((nbatch * m, k))
            ga = ctx.call(op, gp, bp)
        elif B.ndim == 2 and batch:
            ga = ctx.call(op, G.reshape((nbatch * n, m)), B.swapaxes(-1, -2))
            ga = ga.reshape(batch + (n, k))
        else:
            ga = ctx.call(op, G, B.swapaxes(-1, -2))
        if na == 1:
            ga = ga.reshape(tuple(ga.shape[:-2]) + (k,))
    if need_b:
        if B.ndim == 2 and batch:  # B shared by the batch of A: sum_b A_b^T G_b
            gb = ctx.call(
                op, A.reshape((nbatch * n, k)).swapaxes(-1, -2), G.reshape((nbatch * n, m))
            )
        else:
            gb = ctx.call(op, A.swapaxes(-1, -2), G)
        if nb == 1:
            gb = gb.reshape(tuple(gb.shape[:-1]))
    return ga, gb


def _needs(ctx: Any) -> tuple:
    # a node made by ctx.call (a rule running on arrays) records nothing: assume all needed
    return getattr(ctx, "needs_input_grad", None) or (True,) * 8


def _check_matmul(fn: str, a: Any, b: Any) -> None:
    da, db = a._data, b._data
    sa, sb = da.shape, db.shape
    if not sa or not sb:
        raise RuntimeError(
            f"both arguments to {fn} need to be at least 1D, but they are {len(sa)}D and "
            f"{len(sb)}D (shapes {sa} and {sb}); use a * b for a scalar product"
        )
    if da.dtype != db.dtype:
        _same_dtype_mm(fn, a, b)
    if da.dtype == np.bool_:
        _no_bool("addmm_impl_cpu_", a)
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        where = "its only" if len(sb) == 1 else "its second-to-last"
        torch_msg = ""
        if len(sa) <= 2 and len(sb) == 2:
            m1 = f"{sa[0]}x{ka}" if len(sa) == 2 else f"1x{ka}"
            torch_msg = f" (mat1 and mat2 shapes cannot be multiplied ({m1} and {sb[0]}x{sb[1]}))"
        raise RuntimeError(
            f"{fn}: {sa} @ {sb}: inner dimensions {ka} and {kb} differ{torch_msg}. The last dim "
            f"of the first operand must equal {where} dim of the second; check the layer sizes, "
            f"or transpose an operand (e.g. b.mT)"
        )
    if len(sa) > 2 or len(sb) > 2:
        _broadcast_batch(fn, sa[:-2], sb[:-2], sa, sb)


def _check_vectors(fn: str, a: Any, b: Any) -> None:
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D tensors ({fn}: "
            f"shapes {_shape(a)} and {_shape(b)}); flatten them first, or use torch.matmul"
        )
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"{fn} : expected both vectors to have same dtype, but found "
            f"{_legacy(a)} and {_legacy(b)}; convert one first, "
            f"e.g. b.to(a.dtype)"
        )
    _no_bool(fn, a, b)
    if a._data.shape[0] != b._data.shape[0]:
        n, m = a._data.shape[0], b._data.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
            f"number of elements, but got {n} and {m} elements respectively ({fn}: {(n,)} . {(m,)})"
        )


def _to32(a: Any) -> Any:
    out = _kernels.half_cast(a, np.float32) if a.dtype.itemsize == 2 else None
    return a.astype(np.float32) if out is None else out


def _mm_arrays(a: Any, b: Any) -> Any:
    """a @ b on arrays: half types through float32, (batch..., n, k) @ (k, m) as one GEMM."""
    dt = a.dtype
    if a.ndim <= 2 and b.ndim <= 2 and dt.itemsize != 2:  # the common case, straight to BLAS
        out = _backend.gemm(a, b)
        return np.asarray(out) if isinstance(out, np.generic) else out
    low = _is_low(dt)
    if low and (out := _kernels.bf16_gemm(a, b)) is not None:  # bfloat16 multiplied as it is
        return round_half(out, dt)
    if low:  # (the eager kernel's one pass where it applies: autocast's kept values, too)
        a = _to32(a)
        b = _to32(b)
    if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
        rows = math.prod(a.shape[:-1])
        out = _backend.gemm(a.reshape(rows, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))
    elif (out := _threads.matmul(a, b)) is None:  # (stacked products over the threads)
        out = a @ b
    if isinstance(out, np.generic):  # NumPy's 1-D @ 1-D gives a scalar
        out = np.asarray(out)
    if low:
        return round_half(out, dt)
    return out.astype(dt) if out.dtype != dt else out


ger = outer


# ---------------------------------------------------------------------------------------------
# addmm family: beta * input + alpha * (product)


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1,
          out: Any = None) -> Any:
    """beta * input + alpha * (mat1 @ mat2) for matrices; input broadcasts to (n, m)."""
    if _amp.active and out is None:
        input, mat1, mat2 = _amp_cast("addmm", input, mat1, mat2)
    inp = _tensor(input, "addmm", "input", 1)
    m1 = _tensor(mat1, "addmm", "mat1", 2)
    m2 = _tensor(mat2, "addmm", "mat2", 3)
    for x, name in ((m1, "mat1"), (m2, "mat2")):
        if x._data.ndim != 2:
            raise RuntimeError(
                f"{name} must be a matrix, got {x._data.ndim}-D tensor (addmm: shapes "
                f"{_shape(m1)} and {_shape(m2)})"
            )
    _check_add_dtypes("addmm", inp, m1, m2)
    _check_matmul("addmm", m1, m2)
    _check_input_expands("addmm", inp, (m1._data.shape[0], m2._data.shape[1]))
    beta, alpha = _scalars("addmm", inp, beta, alpha)
    return _result(_om(Addmm, inp, m1, m2).apply(inp, m1, m2, beta, alpha), out, "addmm")


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1,
          out: Any = None) -> Any:
    """beta * input + alpha * (mat @ vec); input broadcasts to (n,)."""
    if _amp.active and out is None:
        input, mat, vec = _amp_cast("addmv", input, mat, vec)
    inp = _tensor(input, "addmv", "input", 1)
    m = _tensor(mat, "addmv", "mat", 2)
    v = _tensor(vec, "addmv", "vec", 3)
    if m._data.ndim != 2 or v._data.ndim != 1 or inp._data.ndim > 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {inp._data.ndim}, {m._data.ndim}, "
            f"{v._data.ndim} (addmv: shapes {_shape(inp)}, {_shape(m)}, {_shape(v)})"
        )
    if not (inp._data.dtype == m._data.dtype == v._data.dtype):
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {_legacy(inp)}, "
            f"{_legacy(m)}, and {_legacy(v)}; convert first, e.g. "
            "vec.to(mat.dtype)"
        )
    _no_bool("addmv", inp, m, v)
    _check_matmul("addmv", m, v)
    _check_input_expands("addmv", inp, (m._data.shape[0],))
    beta, alpha = _scalars("addmv", inp, beta, alpha)
    return _result(_om(Addmv, inp, m, v).apply(inp, m, v, beta, alpha), out, "addmv")


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
           out: Any = None) -> Any:
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]; input broadcasts to (n, m)."""
    if _amp.active and out is None:
        input, batch1, batch2 = _amp_cast("addbmm", input, batch1, batch2)
    inp = _tensor(input, "addbmm", "input", 1)
    b1 = _tensor(batch1, "addbmm", "batch1", 2)
    b2 = _tensor(batch2, "addbmm", "batch2", 3)
    _check_batches("addbmm", b1, b2)
    _check_add_dtypes("addbmm", inp, b1, b2)
    _check_input_expands("addbmm", inp, (b1._data.shape[1], b2._data.shape[2]))
    beta, alpha = _scalars("addbmm", inp, beta, alpha)
    return _result(_om(Addbmm, inp, b1, b2).apply(inp, b1, b2, beta, alpha), out, "addbmm")


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
            out: Any = None) -> Any:
    """beta * input + alpha * bmm(batch1, batch2); input broadcasts to (b, n, m)."""
    if _amp.active and out is None:
        input, batch1, batch2 = _amp_cast("baddbmm", input, batch1, batch2)
    inp = _tensor(input, "baddbmm", "input", 1)
    b1 = _tensor(batch1, "baddbmm", "batch1", 2)
    b2 = _tensor(batch2, "baddbmm", "batch2", 3)
    _check_batches("baddbmm", b1, b2)
    _check_add_dtypes("baddbmm", inp, b1, b2)
    s1, s2 = _shape(b1), _shape(b2)
    _check_input_expands("baddbmm", inp, (s1[0], s1[1], s2[2]))
    beta, alpha = _scalars("baddbmm", inp, beta, alpha)
    return _result(_om(Baddbmm, inp, b1, b2).apply(inp, b1, b2, beta, alpha), out, "baddbmm")


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1,
         out: Any = None) -> Any:
    """beta * input + alpha * outer(vec1, vec2)."""
    if _amp.active and out is None:
        input, vec1, vec2 = _amp_cast("addr", input, vec1, vec2)
    inp = _tensor(input, "addr", "input", 1)
    prod = outer(vec1, vec2)
    if alpha != 1:
        prod = prod * alpha
    res = prod if beta == 0 else (inp + prod if beta == 1 else inp * beta + prod)
    return _result(res, out, "addr")


def chain_matmul(*matrices: Any, out: Any = None) -> Any:
    """The product of two or more 2-D tensors, left to right (use torch.linalg.multi_dot)."""
    if _amp.active and out is None:
        matrices = _amp_cast("chain_matmul", *matrices)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    res = matrices[0]
    if res._data.ndim != 2:
        raise RuntimeError(
            f"Tensor dimension is {res._data.ndim}, expected 2 instead (chain_matmul takes 2-D "
            "tensors)"
        )
    for m in matrices[1:]:
        res = mm(res, m)
    return _result(res, out, "chain_matmul")


class _AddMatmul(Op):
    """out = beta * input + alpha * (m1 @ m2)   (input ignored, nan included, when beta == 0)
    grad_input = beta * grad     grad_m1 = alpha * grad @ m2^T     grad_m2 = alpha * m1^T @ grad"""

    @staticmethod
    def forward(ctx: Any, inp: Any, m1: Any, m2: Any, beta: Any, alpha: Any) -> Any:
        ctx.save_for_backward(m1, m2)
        ctx.ab = (beta, alpha)
        prod = _mm_arrays(m1, m2)
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:
            return prod
        return prod + (inp if beta == 1 else inp * beta)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        m1, m2 = ctx.saved
        beta, alpha = ctx.ab
        need = ctx.needs_input_grad
        gi = (grad if beta == 1 else grad * beta) if need[0] else None
        g = grad if alpha == 1 else grad * alpha
        g1, g2 = _matmul_grads(ctx, m1, m2, g, need[1], need[2])
        return gi, g1, g2, None, None


class Addmm(_AddMatmul):
    __doc__ = _AddMatmul.__doc__
    node_name = "AddmmBackward0"


class Addmv(_AddMatmul):
    __doc__ = _AddMatmul.__doc__
    node_name = "AddmvBackward0"


class Baddbmm(_AddMatmul):
    __doc__ = _AddMatmul.__doc__
    node_name = "BaddbmmBackward0"


class Addbmm(Op):
    """out = beta * input + alpha * sum_b b1[b] @ b2[b]
    grad_input = beta * grad   grad_b1[b] = alpha * grad @ b2[b]^T   grad_b2[b] = alpha * b1[b]^T @ grad"""

    node_name = "AddbmmBackward0"

    @staticmethod
    def forward(ctx: Any, inp: Any, b1: Any, b2: Any, beta: Any, alpha: Any) -> Any:
        ctx.save_for_backward(b1, b2)
        ctx.ab = (beta, alpha)
        nb, n, k = b1.shape
        m = b2.shape[2]
        # sum_b b1[b] @ b2[b] = [b1[0] ... b1[B-1]] (n x Bk) @ [b2[0]; ...; b2[B-1]] (Bk x m)
        prod = _mm_arrays(b1.transpose(1, 0, 2).reshape(n, nb * k), b2.reshape(nb * k, m))
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:
            return prod
        return prod + (inp if beta == 1 else inp * beta)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        b1, b2 = ctx.saved
        beta, alpha = ctx.ab
        need = ctx.needs_input_grad
        gi = (grad if beta == 1 else grad * beta) if need[0] else None
        g = grad if alpha == 1 else grad * alpha
        g = ctx.xp.broadcast_to(g, (b1.shape[0],) + tuple(g.shape))
        g1, g2 = _matmul_grads(ctx, b1, b2, g, need[1], need[2])
        return gi, g1, g2, None, None


def _scalars(fn: str, x: Any, beta: Any, alpha: Any) -> tuple:
    """beta/alpha as Python numbers; integer tensors take them as integers (as PyTorch does)."""
    beta = beta.item() if isinstance(beta, TensorBase) else beta
    alpha = alpha.item() if isinstance(alpha, TensorBase) else alpha
    if x._data.dtype.kind in "iub":
        return int(beta), int(alpha)
    return beta, alpha


def _check_input_expands(fn: str, inp: Any, target: tuple) -> None:
    s = _shape(inp)
    pad = (1,) * (len(target) - len(s)) + s
    if len(s) > len(target) or any(x != 1 and x != t for x, t in zip(pad, target)):
        i = next((i for i, (x, t) in enumerate(zip(pad, target)) if x != 1 and x != t), 0)
        raise RuntimeError(
            f"The expanded size of the tensor ({target[i] if i < len(target) else '?'}) must "
            f"match the existing size ({pad[i]}) at non-singleton dimension {i}.  Target sizes: "
            f"{list(target)}.  Tensor sizes: {list(s)} ({fn}: input must broadcast to the "
            f"product's shape {target})"
        )


def _check_add_dtypes(fn: str, inp: Any, m1: Any, m2: Any) -> None:
    _same_dtype_mm(fn, m1, m2)
    if inp._data.dtype != m1._data.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {_legacy(inp)} and "
            f"{_legacy(m2)} ({fn}: input is {_dname(inp)}, the matrices are "
            f"{_dname(m1)}); convert one first, e.g. input.to(mat1.dtype)"
        )
    _no_bool(fn, inp, m1, m2)


def _check_batches(fn: str, b1: Any, b2: Any) -> None:
    for x, name in ((b1, "batch1"), (b2, "batch2")):
        if x._data.ndim != 3:
            raise RuntimeError(
                f"{name} must be a 3D tensor ({fn}: shapes {_shape(b1)} and {_shape(b2)})"
            )
    s1, s2 = _shape(b1), _shape(b2)
    if s1[0] != s2[0] or s1[2] != s2[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{s1[0]}, {s1[2]}] "
            f"but got: [{s2[0]}, {s2[1]}]. ({fn}: {s1} @ {s2})"
        )
