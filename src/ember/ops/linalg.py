"""Linear algebra: matmul and friends, einsum, transposes, triangular parts, diagonals, and the
matrix functions (inverse, det, slogdet, solve, cholesky, svd, eigh, pinv; qr without a
derivative) that ``ember.linalg`` exposes.

The matmul family follows ``torch.matmul``: 1-D operands are promoted to matrices (and the unit
dim dropped again), batch dims broadcast, both operands must have the same dtype (no promotion,
as in PyTorch), and float16/bfloat16 multiply in float32 (what BLAS-backed PyTorch does too).
Shape and dtype errors name both operands. Backward rules return gradients in the broadcast
shape; the engine sums broadcast batch dims, and the rules drop the promoted unit dims themselves.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import namedtuple
from typing import Any

import numpy as np

from .. import _backend
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import casting as _cast
from . import pointwise_piecewise as _pp

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
    "einsum",
    "tensordot",
    "addmm",
    "addmv",
    "addbmm",
    "baddbmm",
    "addr",
    "chain_matmul",
    "matrix_power",
    "t",
    "tril",
    "triu",
    "tril_indices",
    "triu_indices",
    "diag",
    "diagflat",
    "diagonal",
    "diag_embed",
    "trace",
    "kron",
    "cross",
    "inverse",
    "det",
    "logdet",
    "slogdet",
    "cholesky",
    "qr",
    "svd",
    "pinverse",
]


# ---------------------------------------------------------------------------------------------
# helpers

_CPP_NAME = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool",
}
_LEGACY_NAME = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool",
}
_CONVERT = {
    "float32": ".float()", "float64": ".double()", "float16": ".half()",
    "bfloat16": ".bfloat16()", "int64": ".long()", "int32": ".int()", "int16": ".short()",
    "int8": ".char()", "uint8": ".byte()", "bool": ".bool()",
}


def _is_t(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "grad_fn")


def _tensor(x: Any, fn: str, arg: str, pos: int) -> Any:
    """``x`` if it is a tensor, else PyTorch's TypeError for a non-tensor argument."""
    if _is_t(x):
        return x
    raise TypeError(
        f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}; "
        f"wrap it first, e.g. torch.tensor(...)"
    )


def _dname(x: Any) -> str:
    return str(x.dtype).removeprefix("torch.")


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x._data.shape)


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _same_dtype_mm(fn: str, a: Any, b: Any) -> None:
    """PyTorch's matmul dtype error: no promotion between the two matrices."""
    if a._data.dtype != b._data.dtype:
        da, db = _dname(a), _dname(b)
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_CPP_NAME[da]} != "
            f"{_CPP_NAME[db]} ({fn} of a {da} tensor of shape {_shape(a)} and a {db} tensor of "
            f"shape {_shape(b)}); convert one first, e.g. a.float() @ b.float(), or "
            f"b.to(a.dtype)"
        )


def _no_bool(fn: str, *xs: Any) -> None:
    for x in xs:
        if x._data.dtype == np.bool_:
            raise NotImplementedError(
                f"\"{fn}\" not implemented for 'Bool' (a bool tensor of shape {_shape(x)}); "
                "convert first, e.g. x.float() or x.long()"
            )


def _same_dtype(fn: str, *xs: Any) -> None:
    """The generic 'expected scalar type' error of ops that do not promote."""
    d0 = xs[0]._data.dtype
    for x in xs[1:]:
        if x._data.dtype != d0:
            n0, n1 = _dname(xs[0]), _dname(x)
            raise RuntimeError(
                f"expected scalar type {_LEGACY_NAME[n0]} but found {_LEGACY_NAME[n1]} ({fn}: "
                f"{n0} tensor of shape {_shape(xs[0])} and {n1} tensor of shape {_shape(x)}); "
                f"convert first, e.g. y = y{_CONVERT[n0]} or y.to(x.dtype)"
            )


def _broadcast_batch(fn: str, sa: tuple, sb: tuple, full_a: tuple, full_b: tuple) -> tuple:
    """Broadcast two batch shapes (PyTorch's error when they do not)."""
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i} ({fn}: {full_a} @ {full_b}: the batch dims "
                f"{tuple(sa)} and {tuple(sb)} do not broadcast; each batch dim, from the right, "
                f"must match or be 1)"
            )
        out.append(max(x, y) if x and y else 0)
    return tuple(out)


def _result(res: Any, out: Any) -> Any:
    if out is None:
        return res
    out.copy_(res)
    return out


def _is_low(dt: Any) -> bool:
    """float16 / bfloat16: multiplied in float32."""
    return dt.itemsize == 2 and dt.kind in "fV"


def _mm_arrays(a: Any, b: Any) -> Any:
    """a @ b on arrays: half types through float32, (batch..., n, k) @ (k, m) as one GEMM."""
    dt = a.dtype
    if a.ndim <= 2 and b.ndim <= 2 and dt.itemsize != 2:  # the common case, straight to BLAS
        out = a @ b
        return np.asarray(out) if isinstance(out, np.generic) else out
    low = _is_low(dt)
    if low:
        a = a.astype(np.float32)
        b = b.astype(np.float32)
    if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
        rows = math.prod(a.shape[:-1])
        out = (a.reshape(rows, a.shape[-1]) @ b).reshape(a.shape[:-1] + (b.shape[-1],))
    else:
        out = a @ b
    if isinstance(out, np.generic):  # NumPy's 1-D @ 1-D gives a scalar
        out = np.asarray(out)
    return out.astype(dt) if low or out.dtype != dt else out


def _const(like: Any, make: Any) -> Any:
    """A constant array ``make(xp, dtype)`` on ``like``'s device and in its dtype; a tensor when
    ``like`` is a tensor (a rule running under create_graph), so the rule stays in ember."""
    if _is_t(like):
        raw = like._data
        return TensorBase._make(make(_backend.xp_of(raw), raw.dtype))
    return make(_backend.xp_of(like), like.dtype)


# ---------------------------------------------------------------------------------------------
# matmul family


def _matmul_grads(ctx: Any, a: Any, b: Any, grad: Any, need_a: bool, need_b: bool) -> tuple:
    """Gradients of ``a @ b`` (matmul semantics) for the cotangent ``grad``.

    Vectors are promoted (a: (k,) -> (1, k), b: (k,) -> (k, 1)) and ``grad`` reshaped to the
    promoted output; the unit dims are dropped from the results again. A matrix shared by a
    whole batch gets its gradient as one GEMM over the flattened batch.
    """
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
    if need_a:
        if A.ndim == 2 and batch:  # A shared by the batch of B: sum_b G_b B_b^T
            gp = xp.moveaxis(G, -2, 0).reshape((n, nbatch * m))
            bp = B.swapaxes(-1, -2).reshape((nbatch * m, k))
            ga = ctx.call(Matmul, gp, bp)
        elif B.ndim == 2 and batch:
            ga = ctx.call(Matmul, G.reshape((nbatch * n, m)), B.swapaxes(-1, -2))
            ga = ga.reshape(batch + (n, k))
        else:
            ga = ctx.call(Matmul, G, B.swapaxes(-1, -2))
        if na == 1:
            ga = ga.reshape(tuple(ga.shape[:-2]) + (k,))
    if need_b:
        if B.ndim == 2 and batch:  # B shared by the batch of A: sum_b A_b^T G_b
            gb = ctx.call(
                Matmul, A.reshape((nbatch * n, k)).swapaxes(-1, -2), G.reshape((nbatch * n, m))
            )
        else:
            gb = ctx.call(Matmul, A.swapaxes(-1, -2), G)
        if nb == 1:
            gb = gb.reshape(tuple(gb.shape[:-1]))
    return ga, gb


def _needs(ctx: Any) -> tuple:
    # a node made by ctx.call (a rule running on arrays) records nothing: assume all needed
    return getattr(ctx, "needs_input_grad", None) or (True,) * 8


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


class Dot(Op):
    """out = sum_i a_i b_i          grad_a = grad * b          grad_b = grad * a"""

    node_name = "DotBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return _mm_arrays(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        need = ctx.needs_input_grad
        return (grad * b if need[0] else None), (grad * a if need[1] else None)


class Vdot(Dot):
    """out = sum_i conj(a_i) b_i (= dot for real tensors)   grad_a = grad * b   grad_b = grad * a"""

    node_name = "VdotBackward0"


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


def matmul(input: Any, other: Any, *, out: Any = None) -> Any:
    """Matrix product with PyTorch's rules for 1-D operands and broadcast batch dims.

    Shapes: (k,)@(k,) -> (); (n, k)@(k,) -> (n,); (k,)@(k, m) -> (m,); (*, n, k)@(*, k, m) ->
    (*, n, m) with the batch dims ``*`` broadcast. Example: ``matmul(x, w.mT)``.
    """
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
    return _result(op.apply(a, b), out)


def mm(input: Any, mat2: Any, *, out: Any = None) -> Any:
    """Matrix product of two 2-D tensors: (n, k) @ (k, m) -> (n, m)."""
    a = _tensor(input, "mm", "input", 1)
    b = _tensor(mat2, "mm", "mat2", 2)
    for x, name in ((a, "self"), (b, "mat2")):
        if x._data.ndim != 2:
            raise RuntimeError(
                f"{name} must be a matrix (mm: got shapes {_shape(a)} and {_shape(b)}); mm takes "
                "2-D tensors only, use torch.matmul for vectors or batches"
            )
    _check_matmul("mm", a, b)
    return _result(Mm.apply(a, b), out)


def bmm(input: Any, mat2: Any, *, out: Any = None) -> Any:
    """Batched matrix product of 3-D tensors: (b, n, k) @ (b, k, m) -> (b, n, m)."""
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
    return _result(Bmm.apply(a, b), out)


def mv(input: Any, vec: Any, *, out: Any = None) -> Any:
    """Matrix-vector product: (n, k) @ (k,) -> (n,)."""
    a = _tensor(input, "mv", "input", 1)
    v = _tensor(vec, "mv", "vec", 2)
    if a._data.ndim != 2 or v._data.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {a._data.ndim}, {v._data.ndim} (mv: shapes "
            f"{_shape(a)} and {_shape(v)}; mv takes a 2-D matrix and a 1-D vector)"
        )
    _check_matmul("mv", a, v)
    return _result(Mv.apply(a, v), out)


def _check_vectors(fn: str, a: Any, b: Any) -> None:
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D tensors ({fn}: "
            f"shapes {_shape(a)} and {_shape(b)}); flatten them first, or use torch.matmul"
        )
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"{fn} : expected both vectors to have same dtype, but found "
            f"{_LEGACY_NAME[_dname(a)]} and {_LEGACY_NAME[_dname(b)]}; convert one first, "
            f"e.g. b.to(a.dtype)"
        )
    _no_bool(fn, a, b)
    if a._data.shape[0] != b._data.shape[0]:
        n, m = a._data.shape[0], b._data.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
            f"number of elements, but got {n} and {m} elements respectively ({fn}: {(n,)} . {(m,)})"
        )


def dot(input: Any, tensor: Any, *, out: Any = None) -> Any:
    """Inner product of two 1-D tensors (a 0-d tensor)."""
    a = _tensor(input, "dot", "input", 1)
    b = _tensor(tensor, "dot", "tensor", 2)
    _check_vectors("dot", a, b)
    return _result(Dot.apply(a, b), out)


def vdot(input: Any, other: Any, *, out: Any = None) -> Any:
    """sum(conj(a) * b) of two 1-D tensors (the dot product for real tensors)."""
    a = _tensor(input, "vdot", "input", 1)
    b = _tensor(other, "vdot", "other", 2)
    _check_vectors("dot", a, b)
    return _result(Vdot.apply(a, b), out)


def inner(input: Any, other: Any, *, out: Any = None) -> Any:
    """Sum over the last dims: out[i..., j...] = sum_k a[i..., k] b[j..., k] (a * b for 0-d)."""
    a = _tensor(input, "inner", "input", 1)
    b = _tensor(other, "inner", "other", 2)
    if a._data.ndim == 0 or b._data.ndim == 0:
        return _result(a * b, out)
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
        return _result(dot(a, b), out)
    k = sa[-1]
    res = mm(a.reshape(math.prod(sa[:-1]), k), b.reshape(math.prod(sb[:-1]), k).mT)
    return _result(res.reshape(sa[:-1] + sb[:-1]), out)


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
    return _result(a.reshape(-1, 1) * b.reshape(1, -1), out)


ger = outer


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    """Contract ``dims`` (an int: the last dims of a with the first of b; or two lists) of a and b."""
    a = _tensor(a, "tensordot", "a", 1)
    b = _tensor(b, "tensordot", "b", 2)
    sa, sb = _shape(a), _shape(b)
    if isinstance(dims, int) or (_is_t(dims) and dims.ndim == 0):
        d = int(dims)
        if d < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={d}")
        if d > min(len(sa), len(sb)):
            raise RuntimeError(
                f"tensordot expects dims < ndim_a or ndim_b, but got dims={d} (shapes {sa} and "
                f"{sb})"
            )
        da = list(range(len(sa) - d, len(sa)))
        db = list(range(d))
    else:
        da_, db_ = dims
        da = [da_] if isinstance(da_, int) else [int(x) for x in da_]
        db = [db_] if isinstance(db_, int) else [int(x) for x in db_]
        if len(da) != len(db):
            raise RuntimeError(
                f"both dimension lists should have same length (tensordot: {da} and {db})"
            )
        da = [_wrap_dim(x, len(sa)) for x in da]
        db = [_wrap_dim(x, len(sb)) for x in db]
    for x, y in zip(da, db):
        if sa[x] != sb[y]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {sa[x]} in dim {x} and "
                f"second has size {sb[y]} in dim {y} (tensordot: shapes {sa} and {sb})"
            )
    _same_dtype_mm("tensordot", a, b)
    free_a = [i for i in range(len(sa)) if i not in da]
    free_b = [i for i in range(len(sb)) if i not in db]
    k = math.prod(sa[x] for x in da)
    rows = math.prod(sa[i] for i in free_a)
    cols = math.prod(sb[i] for i in free_b)
    pa = a.permute(*(free_a + da)) if free_a + da != list(range(len(sa))) else a
    pb = b.permute(*(db + free_b)) if db + free_b != list(range(len(sb))) else b
    res = mm(pa.reshape(rows, k), pb.reshape(k, cols))
    return _result(res.reshape(tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b)), out)


# ---------------------------------------------------------------------------------------------
# addmm family: beta * input + alpha * (product)


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
    beta = beta.item() if _is_t(beta) else beta
    alpha = alpha.item() if _is_t(alpha) else alpha
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
            f"self and mat2 must have the same dtype, but got {_LEGACY_NAME[_dname(inp)]} and "
            f"{_LEGACY_NAME[_dname(m2)]} ({fn}: input is {_dname(inp)}, the matrices are "
            f"{_dname(m1)}); convert one first, e.g. input.to(mat1.dtype)"
        )
    _no_bool(fn, inp, m1, m2)


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1,
          out: Any = None) -> Any:
    """beta * input + alpha * (mat1 @ mat2) for matrices; input broadcasts to (n, m)."""
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
    return _result(Addmm.apply(inp, m1, m2, beta, alpha), out)


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1,
          out: Any = None) -> Any:
    """beta * input + alpha * (mat @ vec); input broadcasts to (n,)."""
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
            f"addmv input tensors must have the same dtype, but got {_LEGACY_NAME[_dname(inp)]}, "
            f"{_LEGACY_NAME[_dname(m)]}, and {_LEGACY_NAME[_dname(v)]}; convert first, e.g. "
            "vec.to(mat.dtype)"
        )
    _no_bool("addmv", inp, m, v)
    _check_matmul("addmv", m, v)
    _check_input_expands("addmv", inp, (m._data.shape[0],))
    beta, alpha = _scalars("addmv", inp, beta, alpha)
    return _result(Addmv.apply(inp, m, v, beta, alpha), out)


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


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
           out: Any = None) -> Any:
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]; input broadcasts to (n, m)."""
    inp = _tensor(input, "addbmm", "input", 1)
    b1 = _tensor(batch1, "addbmm", "batch1", 2)
    b2 = _tensor(batch2, "addbmm", "batch2", 3)
    _check_batches("addbmm", b1, b2)
    _check_add_dtypes("addbmm", inp, b1, b2)
    _check_input_expands("addbmm", inp, (b1._data.shape[1], b2._data.shape[2]))
    beta, alpha = _scalars("addbmm", inp, beta, alpha)
    return _result(Addbmm.apply(inp, b1, b2, beta, alpha), out)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
            out: Any = None) -> Any:
    """beta * input + alpha * bmm(batch1, batch2); input broadcasts to (b, n, m)."""
    inp = _tensor(input, "baddbmm", "input", 1)
    b1 = _tensor(batch1, "baddbmm", "batch1", 2)
    b2 = _tensor(batch2, "baddbmm", "batch2", 3)
    _check_batches("baddbmm", b1, b2)
    _check_add_dtypes("baddbmm", inp, b1, b2)
    s1, s2 = _shape(b1), _shape(b2)
    _check_input_expands("baddbmm", inp, (s1[0], s1[1], s2[2]))
    beta, alpha = _scalars("baddbmm", inp, beta, alpha)
    return _result(Baddbmm.apply(inp, b1, b2, beta, alpha), out)


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1,
         out: Any = None) -> Any:
    """beta * input + alpha * outer(vec1, vec2)."""
    inp = _tensor(input, "addr", "input", 1)
    prod = outer(vec1, vec2)
    if alpha != 1:
        prod = prod * alpha
    res = prod if beta == 0 else (inp + prod if beta == 1 else inp * beta + prod)
    return _result(res, out)


def chain_matmul(*matrices: Any, out: Any = None) -> Any:
    """The product of two or more 2-D tensors, left to right (use torch.linalg.multi_dot)."""
    if len(matrices) == 1 and isinstance(matrices[0], list | tuple):
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
    return _result(res, out)


def matrix_power(input: Any, n: int) -> Any:
    """A^n for square matrices (batches allowed); n < 0 uses the inverse, n = 0 the identity."""
    a = _tensor(input, "matrix_power", "input", 1)
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are "
            f"{s[-2] if len(s) > 1 else s[-1] if s else 1} by {s[-1] if s else 1} matrices "
            f"(shape {s})"
        )
    n = int(n)
    if n == 0:
        from .creation import eye

        e = eye(s[-1], dtype=a.dtype, device=a.device)
        return e.expand(*s).clone() if len(s) > 2 else e
    if n < 0:
        a = inverse(a)
        n = -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


# ---------------------------------------------------------------------------------------------
# einsum


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_arrays(xp: Any, ins: list, out: str, arrays: list, sizes: dict) -> Any:
    """xp.einsum on an explicit equation; size-1 dims broadcast to the subscript's size."""
    fixed = []
    for s, arr in zip(ins, arrays):
        target = tuple(sizes[c] for c in s)
        if tuple(arr.shape) != target:
            arr = xp.broadcast_to(arr, target)
        fixed.append(arr)
    eq = ",".join(ins) + "->" + out
    low = fixed and _is_low(fixed[0].dtype)
    dt = fixed[0].dtype if fixed else None
    if low:
        fixed = [f.astype(np.float32) for f in fixed]
    res = xp.asarray(xp.einsum(eq, *fixed, optimize=len(fixed) > 1))
    return res.astype(dt) if low else res


class Einsum(Op):
    """out = einsum(ins -> out, *operands)
    grad_i = einsum(out, ins_j (j != i) -> ins_i)(grad, operands_j), with subscripts repeated in
    operand i re-embedded on diagonals (times identity matrices) and subscripts that only
    operand i has broadcast back (times ones)."""

    node_name = "EinsumBackward0"

    @staticmethod
    def forward(ctx: Any, spec: tuple, *ops: Any) -> Any:
        ins, out, sizes = spec
        ctx.spec = spec
        ctx.save_for_backward(*ops)
        return _einsum_arrays(ctx.xp, ins, out, list(ops), sizes)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        ins, out, sizes = ctx.spec
        ops = ctx.saved
        need = ctx.needs_input_grad
        used = set("".join(ins) + out)
        fresh = iter(c for c in _LETTERS if c not in used)
        grads: list = [None]
        for i, s in enumerate(ins):
            if not need[i + 1]:
                grads.append(None)
                continue
            terms = [out] + [ins[j] for j in range(len(ins)) if j != i]
            arrays = [grad] + [ops[j] for j in range(len(ins)) if j != i]
            available = set("".join(terms))
            target = []
            seen: list[str] = []
            for c in s:
                if c in seen:  # a repeated subscript: a diagonal of operand i
                    f = next(fresh)
                    target.append(f)
                    n = sizes[c]
                    terms.append(c + f)
                    arrays.append(_const(grad, lambda xp, dt, n=n: xp.eye(n, dtype=dt)))
                    sizes = {**sizes, f: n}
                else:
                    seen.append(c)
                    target.append(c)
            for c in seen:
                if c not in available:  # summed over in operand i alone: broadcast back
                    terms.append(c)
                    arrays.append(_const(grad, lambda xp, dt, n=sizes[c]: xp.ones(n, dtype=dt)))
            tgt = "".join(target)
            if _is_t(grad):
                g = einsum(",".join(terms) + "->" + tgt, *arrays)
            else:
                g = _einsum_arrays(ctx.xp, terms, tgt, arrays, sizes)
            grads.append(g)
        return tuple(grads)


def _parse_sublist(args: tuple) -> tuple[str, list]:
    """einsum(op0, sublist0, op1, sublist1, ..., [out_sublist]) -> (equation, operands)."""
    ops, subs = [], []
    items = list(args)
    out_sub = None
    if len(items) % 2 == 1:
        out_sub = items.pop()
    for k in range(0, len(items), 2):
        ops.append(items[k])
        subs.append(items[k + 1])

    def conv(sub: Any) -> str:
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += "..."
            else:
                v = int(v)
                if not 0 <= v < 52:
                    raise RuntimeError(
                        f"einsum(): expected subscript to be within the range [0, 52), but got {v}"
                    )
                s += _LETTERS[v]
        return s

    eq = ",".join(conv(s) for s in subs)
    if out_sub is not None:
        eq += "->" + conv(out_sub)
    return eq, ops


@functools.lru_cache(maxsize=512)
def _parse_einsum(eq: str, shapes: tuple) -> tuple[tuple, str, dict]:
    """Explicit per-operand subscripts (ellipses expanded), the output, and each letter's size."""
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = eq, "", False
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for c in lhs.replace(",", "").replace(".", "") + out.replace(".", ""):
        if c not in _LETTERS:
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {eq.index(c)} in the equation string, "
                f"subscripts must be in [a-zA-Z] (got {c!r} in {eq!r})"
            )
    letters_used = set(lhs.replace(",", "").replace(".", "") + out.replace(".", ""))
    spare = [c for c in _LETTERS if c not in letters_used]
    ell_n = 0
    for t, shp in zip(terms, shapes):
        if "..." in t:
            named = len(t.replace("...", ""))
            if named > len(shp):
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({named}) is more than "
                    f"the number of dimensions ({len(shp)}) for operand {terms.index(t)}"
                )
            ell_n = max(ell_n, len(shp) - named)
    if ell_n > len(spare):
        raise RuntimeError("einsum(): too many dimensions in the ellipsis")
    ell = "".join(spare[:ell_n])
    ins = []
    sizes: dict[str, int] = {}
    for idx, (t, shp) in enumerate(zip(terms, shapes)):
        if "..." in t:
            k = len(shp) - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_n - k:] if k else "")
        elif len(t) != len(shp):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the "
                f"number of dimensions ({len(shp)}) for operand {idx} and no ellipsis was given"
            )
        seen_here: dict[str, int] = {}
        for c, n in zip(t, shp):
            if c in seen_here and seen_here[c] != n:
                raise RuntimeError(
                    f"einsum(): subscript {c} is repeated for operand {idx} but the sizes don't "
                    f"match, {n} != {seen_here[c]}"
                )
            seen_here[c] = n
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n
            elif n != 1 and n != prev:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {n} for operand {idx} which does not "
                    f"broadcast with previously seen size {prev} (equation {eq!r}, shapes "
                    f"{[tuple(s) for s in shapes]})"
                )
        ins.append(t)
    if explicit:
        if "..." in out:
            out = out.replace("...", ell)
        elif ell_n and any(c in ell for c in "".join(ins)):
            pass  # ellipsis dims summed away, as PyTorch does when '->' omits them
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(
                    f"einsum(): output subscript {c} appears more than once in the output"
                )
            if c not in sizes:
                raise RuntimeError(
                    f"einsum(): output subscript {c} does not appear in the equation for any "
                    "input operand"
                )
    else:
        counts: dict[str, int] = {}
        for c in "".join(ins):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return tuple(ins), out, sizes


def einsum(equation: Any, *operands: Any) -> Any:
    """Sum of products over subscripts, e.g. ``einsum('bij,bjk->bik', a, b)`` (batched matmul).

    Also the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` and a list of operands.
    Size-1 dims broadcast; '...' stands for the remaining (broadcast) dims.
    """
    if not isinstance(equation, str):
        equation, ops = _parse_sublist((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], list | tuple):
        ops = list(operands[0])
    else:
        ops = list(operands)
    ops = [_tensor(o, "einsum", "operands", k + 2) for k, o in enumerate(ops)]
    if not ops:
        raise RuntimeError("einsum(): must provide at least one operand")
    _same_dtype("einsum", *ops)
    ins, out, sizes = _parse_einsum(equation, tuple(_shape(o) for o in ops))
    kind = ops[0]._data.dtype.kind
    if kind in "biu":  # PyTorch: a one-operand sum gives int64; contractions keep the dtype
        if len(ops) == 1 and set(ins[0]) - set(out):
            ops = [_cast.cast(ops[0], "int64")]
        elif len(ops) > 1 and kind == "b":
            raise NotImplementedError(
                "\"bmm\" not implemented for 'Bool' (einsum of bool tensors); convert first, "
                "e.g. x.long()"
            )
    return Einsum.apply((ins, out, sizes), *ops)


# ---------------------------------------------------------------------------------------------
# transposes and triangles


class T(Op):
    """out = x^T for a matrix, x itself for 0-d and 1-D (a view)     grad_x = grad^T"""

    node_name = "TBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.T if x.ndim == 2 else x.view()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad.T if grad.ndim == 2 else grad


def t(input: Any) -> Any:
    """Transpose a tensor of at most 2 dims (0-d and 1-D come back as they are)."""
    x = _tensor(input, "t", "input", 1)
    if x._data.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {x._data.ndim}D (shape "
            f"{_shape(x)}); use x.mT to transpose the last two dims, or x.permute(...)"
        )
    return T.apply(x)


def _triangle(xp: Any, x: Any, k: int, lower: bool) -> Any:
    """x with the elements above (``lower``) or below diagonal k of each matrix zeroed."""
    n, m = x.shape[-2:]
    keep = xp.tri(n, m, k, dtype=bool) if lower else ~xp.tri(n, m, k - 1, dtype=bool)
    out = xp.where(keep, x, xp.zeros((), dtype=x.dtype))
    return out if out.flags.c_contiguous else xp.ascontiguousarray(out)  # (as PyTorch's)


class Tril(Op):
    """out = x with the elements above diagonal k of each matrix zeroed     grad_x = tril(grad, k)"""

    node_name = "TrilBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, k: int) -> Any:
        ctx.k = k
        return _triangle(ctx.xp, x, k, lower=True)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Tril, grad, ctx.k), None


class Triu(Op):
    """out = x with the elements below diagonal k of each matrix zeroed     grad_x = triu(grad, k)"""

    node_name = "TriuBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, k: int) -> Any:
        ctx.k = k
        return _triangle(ctx.xp, x, k, lower=False)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Triu, grad, ctx.k), None


def _check_matrix_rank(fn: str, x: Any) -> None:
    if x._data.ndim < 2:
        raise RuntimeError(
            f"{fn}: input tensor must have at least 2 dimensions (got shape {_shape(x)}); it "
            "applies to the last two dims of a matrix or a batch of matrices"
        )


def tril(input: Any, diagonal: int = 0, *, out: Any = None) -> Any:
    """Lower triangle of each matrix (last two dims): zero the elements above ``diagonal``."""
    x = _tensor(input, "tril", "input", 1)
    _check_matrix_rank("tril", x)
    return _result(Tril.apply(x, int(diagonal)), out)


def triu(input: Any, diagonal: int = 0, *, out: Any = None) -> Any:
    """Upper triangle of each matrix (last two dims): zero the elements below ``diagonal``."""
    x = _tensor(input, "triu", "input", 1)
    _check_matrix_rank("triu", x)
    return _result(Triu.apply(x, int(diagonal)), out)


def _tri_indices(fn: str, row: int, col: int, offset: int, lower: bool, dtype: Any,
                 device: Any) -> Any:
    from .creation import tensor

    if row < 0 or col < 0:
        raise RuntimeError(f"{fn}: row and col must be non-negative (got row={row}, col={col})")
    r, c = np.indices((row, col))
    keep = (c - r <= offset) if lower else (c - r >= offset)
    idx = np.stack([r[keep], c[keep]]).astype(np.int64)
    return tensor(idx, dtype=dtype if dtype is not None else "int64", device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:
    """The (2, N) row/column indices of the lower triangle of a row x col matrix."""
    return _tri_indices("tril_indices", int(row), int(col), int(offset), True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:
    """The (2, N) row/column indices of the upper triangle of a row x col matrix."""
    return _tri_indices("triu_indices", int(row), int(col), int(offset), False, dtype, device)


# ---------------------------------------------------------------------------------------------
# diagonals


def _diag_positions(xp: Any, n: int, offset: int) -> tuple[Any, Any]:
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    return rows, cols


class Diagonal(Op):
    """out = the ``offset`` diagonal of x over (dim1, dim2), as the last dim (a view)
    grad_x = zeros of x's shape with grad written on that diagonal (diag_embed)"""

    node_name = "DiagonalBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, offset: int, d1: int, d2: int) -> Any:
        ctx.args = (tuple(x.shape), offset, d1, d2)
        out = ctx.xp.diagonal(x, offset, d1, d2)
        if type(out) is np.ndarray and not out.flags.writeable and x.flags.writeable:
            out.flags.writeable = True  # writes through the view reach x, as in PyTorch
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        shape, offset, d1, d2 = ctx.args
        return ctx.call(DiagEmbed, grad, shape, offset, d1, d2), None, None, None


class _DiagonalCopy(Diagonal):
    """out = a copy of the ``offset`` diagonal of a matrix     grad_x = grad on that diagonal"""

    node_name = "DiagonalBackward0_copy"
    is_view = False

    @staticmethod
    def forward(ctx: Any, x: Any, offset: int, d1: int, d2: int) -> Any:
        ctx.args = (tuple(x.shape), offset, d1, d2)
        return ctx.xp.diagonal(x, offset, d1, d2).copy()


class DiagEmbed(Op):
    """out = zeros of ``shape`` with x's last dim written on the ``offset`` diagonal of
    (dim1, dim2)          grad_x = that diagonal of grad"""

    node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple, offset: int, d1: int, d2: int) -> Any:
        xp = ctx.xp
        ctx.args = (offset, d1, d2)
        out = xp.zeros(shape, dtype=x.dtype)
        n = x.shape[-1] if x.ndim else 0
        if n:
            rows, cols = _diag_positions(xp, n, offset)
            view = xp.moveaxis(out, (d1, d2), (-2, -1))
            view[..., rows, cols] = x
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        offset, d1, d2 = ctx.args
        return ctx.call(_DiagonalCopy, grad, offset, d1, d2), None, None, None, None, None


def diagonal(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """View of the ``offset`` diagonal over dims (dim1, dim2), appended as the last dim."""
    x = _tensor(input, "diagonal", "input", 1)
    nd = x._data.ndim
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(x, int(offset), d1, d2)


def _embed_shape(batch: tuple, n: int, d1: int, d2: int) -> tuple:
    it = iter(batch)
    return tuple(n if i in (d1, d2) else next(it) for i in range(len(batch) + 2))


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    """Matrices (over dims dim1, dim2 of the output) whose ``offset`` diagonal is input's last dim."""
    x = _tensor(input, "diag_embed", "input", 1)
    nd = x._data.ndim + 1
    if x._data.ndim == 0:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [-1, 0], but got {dim1}) "
            "(diag_embed needs at least a 1-D input)"
        )
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x._data.shape[-1] + abs(int(offset))
    shape = _embed_shape(_shape(x)[:-1], n, min(d1, d2), max(d1, d2))
    return DiagEmbed.apply(x, shape, int(offset), d1, d2)


def diag(input: Any, diagonal: int = 0, *, out: Any = None) -> Any:
    """1-D input: a square matrix with it on the ``diagonal``; 2-D: a copy of that diagonal."""
    x = _tensor(input, "diag", "input", 1)
    nd = x._data.ndim
    k = int(diagonal)
    if nd == 1:
        n = x._data.shape[0] + abs(k)
        return _result(DiagEmbed.apply(x, (n, n), k, 0, 1), out)
    if nd == 2:
        return _result(_DiagonalCopy.apply(x, k, 0, 1), out)
    raise RuntimeError(
        f"diag(): Supports 1D or 2D tensors. Got {nd}D (shape {_shape(x)}); use "
        "torch.diagonal or torch.diag_embed for batches"
    )


def diagflat(input: Any, offset: int = 0) -> Any:
    """A square matrix with the flattened input on the ``offset`` diagonal."""
    x = _tensor(input, "diagflat", "input", 1)
    return diag(x.reshape(-1), offset)


class Trace(Op):
    """out = sum_i x[i, i]          grad_x = grad on the main diagonal, zeros elsewhere"""

    node_name = "TraceBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.shape = tuple(x.shape)
        return ctx.xp.asarray(ctx.xp.trace(x))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        n = min(ctx.shape)
        g = ctx.xp.broadcast_to(grad, (n,))
        return ctx.call(DiagEmbed, g, ctx.shape, 0, 0, 1)


def trace(input: Any) -> Any:
    """Sum of the main diagonal of a 2-D tensor (integer inputs give int64)."""
    x = _tensor(input, "trace", "input", 1)
    if x._data.ndim != 2:
        raise RuntimeError(
            f"trace: expected a matrix, but got tensor with dim {x._data.ndim} (shape "
            f"{_shape(x)}); use torch.diagonal(x, dim1=-2, dim2=-1).sum(-1) for batches"
        )
    _no_bool("trace", x)
    if x._data.dtype.kind in "iu":
        x = _cast.cast(x, "int64")
    return Trace.apply(x)


def kron(input: Any, other: Any, *, out: Any = None) -> Any:
    """Kronecker product: out[i*B + k] = a[i] * b[k] along every dim (dtypes promote)."""
    a = _tensor(input, "kron", "input", 1)
    b = _tensor(other, "kron", "other", 2)
    nd = max(a._data.ndim, b._data.ndim)
    sa = (1,) * (nd - a._data.ndim) + _shape(a)
    sb = (1,) * (nd - b._data.ndim) + _shape(b)
    ia = tuple(x for s in sa for x in (s, 1))
    ib = tuple(x for s in sb for x in (1, s))
    res = (a.reshape(ia) * b.reshape(ib)).reshape(tuple(x * y for x, y in zip(sa, sb)))
    return _result(res, out)


class Cross(Op):
    """out = a x b along dim          grad_a = b x grad          grad_b = grad x a"""

    node_name = "LinalgCrossBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, dim: int) -> Any:
        ctx.save_for_backward(a, b)
        ctx.dim = dim
        return ctx.xp.cross(a, b, axis=dim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        need = ctx.needs_input_grad
        ga = ctx.call(Cross, b, grad, ctx.dim) if need[0] else None
        gb = ctx.call(Cross, grad, a, ctx.dim) if need[1] else None
        return ga, gb, None


_cross_warned = False


def _cross(fn: str, a: Any, b: Any, dim: int | None) -> Any:
    a = _tensor(a, fn, "input", 1)
    b = _tensor(b, fn, "other", 2)
    sa, sb = _shape(a), _shape(b)
    _same_dtype(fn, a, b)
    _no_bool(fn, a, b)
    if len(sa) != len(sb):
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions. ({fn}: shapes {sa} "
            f"and {sb}; unsqueeze the smaller one, e.g. b[None])"
        )
    shape = _broadcast_batch(fn, sa, sb, sa, sb)
    if dim is None:
        global _cross_warned
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input (cross: shapes {sa} and {sb})")
        if not _cross_warned:
            _cross_warned = True
            warnings.warn(
                "Using torch.cross without specifying the dim arg is deprecated.\nPlease either "
                "pass the dim explicitly or simply use torch.linalg.cross.\nThe default value of "
                "dim will change to agree with that of linalg.cross in a future release.",
                UserWarning, stacklevel=3,
            )
    d = _wrap_dim(dim, len(shape))
    na, nb = len(sa), len(sb)
    la = sa[d - (len(shape) - na)] if d - (len(shape) - na) >= 0 else 1
    lb = sb[d - (len(shape) - nb)] if d - (len(shape) - nb) >= 0 else 1
    if la != 3 or lb != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {la} and {lb} "
            f"({fn}: shapes {sa} and {sb})"
        )
    return Cross.apply(a, b, d - len(shape))


def cross(input: Any, other: Any, dim: int | None = None, *, out: Any = None) -> Any:
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3, deprecated)."""
    return _result(_cross("cross", input, other, dim), out)


# ---------------------------------------------------------------------------------------------
# inverse, determinants, solve (the matrix functions with cheap derivatives)


class LinAlgError(RuntimeError):
    """A linear-algebra routine could not complete (singular or not positive-definite input)."""


def _check_square(fn: str, x: Any, what: str = "A") -> None:
    s = _shape(x)
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(
            f"{fn}: {what} must be batches of square matrices, but they are "
            f"{s[-2] if len(s) > 1 else 1} by {s[-1] if s else 1} matrices (shape {s})"
        )


def _check_float(fn: str, x: Any) -> None:
    k = x._data.dtype
    if k.kind not in "fV":
        raise RuntimeError(
            f"{fn}: Expected a floating point or complex tensor as input. Got "
            f"{_LEGACY_NAME[_dname(x)]}; convert first, e.g. A.double() or A.float()"
        )
    if _is_low(k):
        raise RuntimeError(
            f"{fn}: Low precision dtypes not supported. Got {_LEGACY_NAME[_dname(x)]}; use "
            "A.float() (and convert the result back if needed)"
        )


def _lapack(fn: str, call: Any, x: Any) -> Any:
    """Run a NumPy/CuPy linalg routine, turning its LinAlgError into ember's, with the shape."""
    try:
        return call()
    except Exception as e:  # numpy.linalg.LinAlgError / cupy's
        if type(e).__name__ != "LinAlgError":
            raise
        if "singular" in str(e).lower():
            raise LinAlgError(
                f"{fn}: The input matrix (shape {tuple(x.shape)}) is singular, so the operation "
                "could not be completed; use torch.linalg.pinv / lstsq for a least-squares "
                "answer, or regularise it (A + eps * I)"
            ) from None
        raise LinAlgError(f"{fn}: {e} (input shape {tuple(x.shape)})") from None


class Inverse(Op):
    """out = A^-1          grad_A = -out^T @ grad @ out^T"""

    node_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        out = _lapack("linalg.inv", lambda: xp.linalg.inv(a), a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (inv,) = ctx.saved
        it = inv.swapaxes(-1, -2)
        return -ctx.call(Matmul, ctx.call(Matmul, it, grad), it)


def inverse(input: Any, *, out: Any = None) -> Any:
    """The inverse of a square matrix (or of each matrix in a batch)."""
    x = _tensor(input, "inverse", "input", 1)
    _check_float("linalg.inv", x)
    _check_square("linalg.inv", x)
    return _result(Inverse.apply(x), out)


def _prod_except(xp: Any, s: Any) -> Any:
    """p[..., i] = prod_{j != i} s[..., j], without dividing (s may hold zeros)."""
    n = s.shape[-1]
    ones = xp.ones(s.shape[:-1] + (1,), dtype=s.dtype)
    left = xp.concatenate([ones, xp.cumprod(s[..., : n - 1], axis=-1)], axis=-1)
    right = xp.concatenate([xp.cumprod(s[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
    return left * right


class Det(Op):
    """out = det(A)          grad_A = grad * det(A) * A^-T  (the cofactor matrix; via the SVD
    A = U S V^T as det(U) det(V) U diag(prod_{j != i} s_j) V^T, so singular A works too)"""

    node_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        out = xp.asarray(xp.linalg.det(a))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, det = ctx.saved
        shape = tuple(grad.shape) + (1, 1)
        if _is_t(a):  # under create_graph: differentiable form (A invertible)
            inv_t = ctx.call(Inverse, a).swapaxes(-1, -2)
            return (grad * det).reshape(shape) * inv_t
        xp = ctx.xp
        if a.shape[-1] == 0:
            return xp.zeros(a.shape, dtype=a.dtype)
        u, s, vh = xp.linalg.svd(a)
        sign = xp.linalg.det(u) * xp.linalg.det(vh)
        cof = (u * _prod_except(xp, s)[..., None, :]) @ vh
        return (grad * sign).reshape(shape) * cof


def det(input: Any) -> Any:
    """The determinant of a square matrix (or of each matrix in a batch)."""
    x = _tensor(input, "det", "input", 1)
    _check_float("linalg.det", x)
    _check_square("linalg.det", x)
    return Det.apply(x)


class Slogdet(Op):
    """(sign, logabsdet) = slogdet(A)          grad_A = grad_logabsdet * A^-T  (sign: no gradient)"""

    node_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        sign, logabs = xp.linalg.slogdet(a)
        sign, logabs = xp.asarray(sign), xp.asarray(logabs)
        ctx.save_for_backward(a)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx: Any, gsign: Any, glog: Any) -> Any:
        (a,) = ctx.saved
        inv_t = ctx.call(Inverse, a).swapaxes(-1, -2)
        return glog.reshape(tuple(glog.shape) + (1, 1)) * inv_t


_slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])


def slogdet(input: Any) -> Any:
    """(sign, log|det|) of a square matrix (or each in a batch): log|det| stays finite."""
    x = _tensor(input, "slogdet", "input", 1)
    _check_float("linalg.slogdet", x)
    _check_square("linalg.slogdet", x)
    sign, logabs = Slogdet.apply(x)
    return _slogdet_result(sign, logabs)


def logdet(input: Any) -> Any:
    """log det(A): -inf for a singular matrix, nan for a negative determinant."""
    sign, logabs = slogdet(input)
    return _pp.where(sign < 0, float("nan"), logabs)


class Solve(Op):
    """X = A^-1 B  (B: (*, n, k))          grad_B = A^-T grad          grad_A = -grad_B X^T"""

    node_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        xp = ctx.xp
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        aa = xp.broadcast_to(a, batch + a.shape[-2:])
        bb = xp.broadcast_to(b, batch + b.shape[-2:])
        x = _lapack("linalg.solve", lambda: xp.linalg.solve(aa, bb), a)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, x = ctx.saved
        need = ctx.needs_input_grad
        gb = ctx.call(Solve, a.swapaxes(-1, -2), grad)
        ga = -ctx.call(Matmul, gb, x.swapaxes(-1, -2)) if need[0] else None
        return ga, (gb if need[1] else None)


def _solve_is_vector(sa: tuple, sb: tuple) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D or has A's shape minus one dim."""
    return len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])


def solve(A: Any, B: Any, *, left: bool = True, out: Any = None) -> Any:
    """X with A @ X = B (``left=False``: X @ A = B); B is a vector, a matrix or a batch of them."""
    a = _tensor(A, "linalg.solve", "A", 1)
    b = _tensor(B, "linalg.solve", "B", 2)
    _check_float("linalg.solve", a)
    _check_square("linalg.solve", a)
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{_LEGACY_NAME[_dname(a)]} and B of type {_LEGACY_NAME[_dname(b)]} instead; convert "
            "one first, e.g. B.to(A.dtype)"
        )
    sa, sb = _shape(a), _shape(b)
    vector = _solve_is_vector(sa, sb)
    if not left:
        a = a.mT
    bm = b.unsqueeze(-1) if vector else b
    if not vector and not left:
        bm = bm.mT
    smat = _shape(bm)
    if len(smat) < 2 or smat[-2] != sa[-1]:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({sa[-2]}x{sa[-1]} and "
            f"{'x'.join(str(v) for v in (sb[-2:] if not vector else sb[-1:]))}) (shapes {sa} and "
            f"{sb})"
        )
    _broadcast_batch("linalg.solve", sa[:-2], smat[:-2], sa, sb)
    x = Solve.apply(a, bm)
    if vector:
        x = x.squeeze(-1)
    elif not left:
        x = x.mT
    return _result(x, out)


class Cholesky(Op):
    """L = cholesky(A), A = L L^T
    grad_A = sym(L^-T Phi(L^T grad) L^-1), Phi = lower triangle with the diagonal halved,
    sym(S) = (S + S^T) / 2"""

    node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        try:
            low = xp.linalg.cholesky(a)
        except Exception as e:  # numpy.linalg.LinAlgError
            if type(e).__name__ != "LinAlgError":
                raise
            raise LinAlgError(
                "linalg.cholesky: The factorization could not be completed because the input is "
                f"not positive-definite (input shape {tuple(a.shape)}). Check that A is symmetric "
                "positive-definite; adding a small multiple of the identity often helps"
            ) from None
        ctx.save_for_backward(low)
        return low

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (low,) = ctx.saved
        p = ctx.call(Matmul, low.swapaxes(-1, -2), grad)
        phi = ctx.call(Tril, p, -1) + 0.5 * ctx.call(Triu, ctx.call(Tril, p, 0), 0)
        inv = ctx.call(Inverse, low)
        s = ctx.call(Matmul, ctx.call(Matmul, inv.swapaxes(-1, -2), phi), inv)
        return 0.5 * (s + s.swapaxes(-1, -2))


def cholesky(input: Any, upper: bool = False, *, out: Any = None) -> Any:
    """The Cholesky factor L (lower; U = L^T with ``upper``) of a symmetric positive-definite A."""
    a = _tensor(input, "linalg.cholesky", "A", 1)
    _check_float("linalg.cholesky", a)
    _check_square("linalg.cholesky", a)
    low = Cholesky.apply(a)
    return _result(low.mT if upper else low, out)


class _ForwardOnly(Op):
    """A decomposition computed by NumPy/CuPy; its derivative is not implemented."""

    fn_name = ""

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        name = ctx._fn.fn_name
        raise RuntimeError(
            f"ember does not implement the derivative of torch.{name} yet. Compute it on a "
            f"detached tensor ({name}(A.detach())) or under torch.no_grad() when its outputs "
            "need no gradient"
        )


class Qr(_ForwardOnly):
    """(Q, R) = qr(A), A = Q R          (no derivative yet)"""

    node_name = "LinalgQrBackward0"
    fn_name = "linalg.qr"

    @staticmethod
    def forward(ctx: Any, a: Any, mode: str) -> Any:
        xp = ctx.xp
        if mode == "r":
            r = xp.linalg.qr(a, mode="r")
            return xp.zeros((0,), dtype=a.dtype), r
        q, r = xp.linalg.qr(a, mode=mode)
        return q, r


def _row(v: Any) -> Any:
    """(..., k) -> (..., 1, k)"""
    return v.reshape(tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _col(v: Any) -> Any:
    """(..., k) -> (..., k, 1)"""
    return v.reshape(tuple(v.shape) + (1,))


def _eye_like(v: Any) -> Any:
    """The k x k identity for a (..., k) array or tensor ``v``."""
    return _const(v, lambda xp, dt, k=v.shape[-1]: xp.eye(k, dtype=dt))


class Svd(Op):
    """(U, S, Vh) = svd(A), A = U diag(S) Vh  (reduced; full_matrices uses the first k columns)
    grad_A = U [ (skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS) ] Vh, E_ij = S_j^2 - S_i^2,
    skew(X) = X - X^T, plus the parts of gU (m > n) or gV (m < n) outside the column spaces:
    (I - U U^T) gU S^-1 Vh and U S^-1 gV^T (I - V V^T). Finite for distinct S only."""

    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, full_matrices: bool) -> Any:
        u, s, vh = ctx.xp.linalg.svd(a, full_matrices=full_matrices)
        ctx.save_for_backward(u, s, vh)
        ctx.set_materialize_grads(False)
        ctx.full = full_matrices
        return u, s, vh

    @staticmethod
    def backward(ctx: Any, gu: Any, gs: Any, gvh: Any) -> Any:
        u, s, vh = ctx.saved
        if gu is None and gs is None and gvh is None:
            return None, None
        k = s.shape[-1]
        if ctx.full:
            u, vh = u[..., :k], vh[..., :k, :]
            gu = gu[..., :k] if gu is not None else None
            gvh = gvh[..., :k, :] if gvh is not None else None
        m, n = u.shape[-2], vh.shape[-1]
        if gu is None and gvh is None:  # singular values only
            return ctx.call(Matmul, u * _row(gs), vh), None
        eye = _eye_like(s)
        v = vh.swapaxes(-1, -2)
        s2 = s * s
        e = _row(s2) - _col(s2) + eye  # 1 on the diagonal, where the numerators are 0
        num = None
        if gu is not None:
            uhgu = ctx.call(Matmul, u.swapaxes(-1, -2), gu)
            num = (uhgu - uhgu.swapaxes(-1, -2)) * _row(s)
        if gvh is not None:
            gv = gvh.swapaxes(-1, -2)
            vhgv = ctx.call(Matmul, vh, gv)
            term = _col(s) * (vhgv - vhgv.swapaxes(-1, -2))
            num = term if num is None else num + term
        inner = num / e
        if gs is not None:
            inner = inner + eye * _row(gs)
        if m > n and gu is not None:
            ga = ctx.call(Matmul, u, inner)
            gus = gu / _row(s)
            ga = ga + gus - ctx.call(Matmul, u, ctx.call(Matmul, u.swapaxes(-1, -2), gus))
            return ctx.call(Matmul, ga, vh), None
        if m < n and gvh is not None:
            ga = ctx.call(Matmul, inner, vh)
            gvs = gv / _row(s)
            rest = gvs - ctx.call(Matmul, v, ctx.call(Matmul, vh, gvs))
            return ctx.call(Matmul, u, ga + rest.swapaxes(-1, -2)), None
        return ctx.call(Matmul, u, ctx.call(Matmul, inner, vh)), None


class Svdvals(Op):
    """S = the singular values of A, descending          grad_A = U diag(gS) Vh"""

    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        need = getattr(ctx, "needs_input_grad", None)
        if not need or not need[0]:
            return xp.linalg.svd(a, compute_uv=False)
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        ctx.save_for_backward(a, u, vh)
        return s

    @staticmethod
    def backward(ctx: Any, gs: Any) -> Any:
        a, u, vh = ctx.saved
        if _is_t(gs):  # under create_graph: U and Vh must carry their own dependence on A
            u, _, vh = ctx.call(Svd, a, False)
        return ctx.call(Matmul, u * _row(gs), vh)


class Eigh(Op):
    """(L, V) = eigh(A), A = V diag(L) V^T for symmetric A
    grad_A = V (diag(gL) + F o (X - X^T) / 2) V^T, X = V^T gV, F_ij = 1 / (L_j - L_i) (i != j),
    F_ii = 0: symmetric, as PyTorch's. Finite for distinct eigenvalues only."""

    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, uplo: str) -> Any:
        w, v = ctx.xp.linalg.eigh(a, UPLO=uplo)
        ctx.save_for_backward(w, v)
        ctx.set_materialize_grads(False)
        return w, v

    @staticmethod
    def backward(ctx: Any, gw: Any, gv: Any) -> Any:
        w, v = ctx.saved
        vt = v.swapaxes(-1, -2)
        if gv is None:
            if gw is None:
                return None, None
            return ctx.call(Matmul, v * _row(gw), vt), None
        eye = _eye_like(w)
        f = 1.0 / (_row(w) - _col(w) + eye) - eye
        x = ctx.call(Matmul, vt, gv)
        inner = f * (0.5 * (x - x.swapaxes(-1, -2)))
        if gw is not None:
            inner = inner + eye * _row(gw)
        return ctx.call(Matmul, ctx.call(Matmul, v, inner), vt), None


class Eigvalsh(Op):
    """L = the eigenvalues of symmetric A, ascending          grad_A = V diag(gL) V^T"""

    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, uplo: str) -> Any:
        xp = ctx.xp
        need = getattr(ctx, "needs_input_grad", None)
        if not need or not need[0]:
            return xp.linalg.eigvalsh(a, UPLO=uplo)
        w, v = xp.linalg.eigh(a, UPLO=uplo)
        ctx.save_for_backward(a, v)
        ctx.uplo = uplo
        return w

    @staticmethod
    def backward(ctx: Any, gw: Any) -> Any:
        a, v = ctx.saved
        if _is_t(gw):  # under create_graph: V must carry its own dependence on A
            _, v = ctx.call(Eigh, a, ctx.uplo)
        return ctx.call(Matmul, v * _row(gw), v.swapaxes(-1, -2)), None


class Pinv(Op):
    """P = A^+ (the Moore-Penrose pseudo-inverse)
    grad_A = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)  (G = grad; valid where the
    rank of A does not change)"""

    node_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, rtol: float, hermitian: bool) -> Any:
        xp = ctx.xp
        if hermitian:  # CuPy's pinv has no `hermitian`; the result is the same without it
            out = xp.linalg.pinv(a, rcond=rtol, hermitian=True)
        else:
            out = xp.linalg.pinv(a, rcond=rtol)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        a, p = ctx.saved

        def mm(x: Any, y: Any) -> Any:
            return ctx.call(Matmul, x, y)

        pt, gt = p.swapaxes(-1, -2), g.swapaxes(-1, -2)
        term1 = -mm(mm(pt, g), pt)
        gt_ppt = mm(gt, mm(p, pt))
        term2 = gt_ppt - mm(a, mm(p, gt_ppt))  # (I - A P) G^T P P^T
        ptp_gt = mm(mm(pt, p), gt)
        term3 = ptp_gt - mm(mm(ptp_gt, p), a)  # P^T P G^T (I - P A)
        return term1 + term2 + term3, None, None


_qr_result = namedtuple("qr", ["Q", "R"])
_svd_result = namedtuple("svd", ["U", "S", "V"])


def _check_decomposable(fn: str, x: Any) -> None:
    _check_float(fn, x)
    if x._data.ndim < 2:
        raise RuntimeError(
            f"{fn}: The input tensor A must have at least 2 dimensions (got shape {_shape(x)})"
        )


def qr(input: Any, some: bool = True, *, out: Any = None) -> Any:
    """(Q, R) with A = Q R (reduced when ``some``); prefer torch.linalg.qr."""
    a = _tensor(input, "qr", "input", 1)
    _check_decomposable("linalg.qr", a)
    q, r = Qr.apply(a, "reduced" if some else "complete")
    return _qr_result(q, r)


def svd(input: Any, some: bool = True, compute_uv: bool = True, *, out: Any = None) -> Any:
    """(U, S, V) with A = U diag(S) V^T (note: V, not Vh); prefer torch.linalg.svd."""
    a = _tensor(input, "svd", "input", 1)
    _check_decomposable("linalg.svd", a)
    u, s, vh = Svd.apply(a, not some)
    if not compute_uv:
        from .creation import zeros_like

        return _svd_result(zeros_like(u), s, zeros_like(vh.mT))
    return _svd_result(u, s, vh.mT)


def pinverse(input: Any, rcond: float = 1e-15) -> Any:
    """The Moore-Penrose pseudo-inverse; prefer torch.linalg.pinv."""
    a = _tensor(input, "pinverse", "input", 1)
    _check_decomposable("linalg.pinv", a)
    return Pinv.apply(a, rcond, False)


def _move_to_end(a: Any, d0: int, d1: int) -> Any:
    return a.movedim((d0, d1), (-2, -1))


def _restore_dims(r: Any, d0: int, d1: int, keepdim: bool) -> Any:
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


def matrix_norm(A: Any, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2."""
    a = _tensor(A, "linalg.matrix_norm", "A", 1)
    if dtype is not None:
        a = a.to(dtype)
    _check_float("linalg.matrix_norm", a)
    nd = a.ndim
    if nd < 2:
        raise RuntimeError(
            f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions (got shape "
            f"{tuple(a.shape)}); use torch.linalg.vector_norm for vectors"
        )
    if not isinstance(dim, tuple | list) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = _wrap_dim(dim[0], nd), _wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        from .reduction_stats import vector_norm

        res = vector_norm(a, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        s = Svdvals.apply(_move_to_end(a, d0, d1))
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        res = _restore_dims(r, d0, d1, keepdim)
    elif ord in (math.inf, -math.inf, 1, -1):
        # inf: max over rows of the row sums |A|; 1: max over columns of the column sums
        inner, outer_ = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
        sums = a.abs().sum(inner, keepdim=True)
        r = sums.amax(outer_, keepdim=True) if ord > 0 else sums.amin(outer_, keepdim=True)
        res = r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    else:
        raise RuntimeError(
            f"linalg.matrix_norm: Order {ord} not supported; use 'fro', 'nuc', inf, -inf, 1, -1, "
            "2 or -2"
        )
    return _result(res, out)
