"""Argument checks and array helpers shared by the matrix rooms: ``blas.py`` (the matmul
family), ``other_matrix.py`` (einsum, triangles, diagonals, cross) and ``linalg.py`` (the matrix
functions). PyTorch's error conditions, with messages that name the shapes and dtypes and say the
fix; the half-precision rule (float16/bfloat16 multiply in float32); and ``_const``, a constant
array or tensor for a backward rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from . import _out

_CPP_NAME = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}


_CONVERT = {
    "float32": ".float()", "float64": ".double()", "float16": ".half()",
    "bfloat16": ".bfloat16()", "int64": ".long()", "int32": ".int()", "int16": ".short()",
    "int8": ".char()", "uint8": ".byte()", "bool": ".bool()",
}


def _tensor(x: Any, fn: str, arg: str, pos: int) -> Any:
    """``x`` if it is a tensor, else PyTorch's TypeError for a non-tensor argument."""
    if isinstance(x, TensorBase):
        return x
    raise TypeError(
        f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}; "
        f"wrap it first, e.g. torch.tensor(...)"
    )


def _dname(x: Any) -> str:
    return str(x.dtype).removeprefix("torch.")


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x._data.shape)


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
                f"expected scalar type {_legacy(xs[0])} but found {_legacy(x)} ({fn}: "
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


def _result(res: Any, out: Any, name: str) -> Any:
    """``res``, or ``res`` written into ``out=`` by PyTorch's rules (``ops/_out.py``)."""
    return res if out is None else _out.write(out, res, name)


def _is_low(dt: Any) -> bool:
    """float16 / bfloat16: multiplied in float32."""
    return dt.itemsize == 2 and dt.kind in "fV"


def _const(like: Any, make: Any) -> Any:
    """A constant array ``make(xp, dtype)`` on ``like``'s device and in its dtype; a tensor when
    ``like`` is a tensor (a rule running under create_graph), so the rule stays in ember."""
    if isinstance(like, TensorBase):
        raw = like._data
        return TensorBase._make(make(_backend.xp_of(raw), raw.dtype))
    return make(_backend.xp_of(like), like.dtype)


def _legacy(x: Any) -> str:
    """The legacy scalar-type name of a tensor's dtype ("Float", "Long"...), as PyTorch's errors
    spell it."""
    return _dtype.legacy_name(x.dtype)


def _lu_raw(xp: Any, a: Any, block: int = 32) -> tuple:
    """LAPACK getrf's LU with partial pivoting of a (*, m, n) array, batched: (LU packed, pivots
    as LAPACK's 1-based int32 row swaps (*, min(m, n)), info (*,): the 1-based column of the first
    zero pivot, 0 when none). Blocked as getrf: each panel of ``block`` columns column by column
    (vectorised over the batch), then the rows right of it by a triangular solve and the trailing
    matrix by one product."""
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    a2 = xp.array(a, copy=True).reshape((-1, m, n))
    nb = a2.shape[0]
    piv = xp.empty((nb, k), dtype=np.int32)
    info = xp.zeros((nb,), dtype=np.int32)
    rows = xp.arange(nb)
    cplx = a2.dtype.kind == "c"
    for j0 in range(0, k, block):
        j1 = min(j0 + block, k)
        for j in range(j0, j1):
            c = a2[:, j:, j]  # the first largest |re| + |im|, as i?amax
            p = xp.argmax(xp.abs(c.real) + xp.abs(c.imag) if cplx else xp.abs(c), axis=1) + j
            piv[:, j] = p + 1
            top = a2[:, j, :].copy()
            a2[:, j, :] = a2[rows, p, :]
            a2[rows, p, :] = top
            d = a2[:, j, j]
            zero = d == 0
            info[(info == 0) & zero] = j + 1
            col = a2[:, j + 1:, j] / xp.where(zero, xp.ones_like(d), d)[:, None]
            a2[:, j + 1:, j] = col
            a2[:, j + 1:, j + 1:j1] -= col[:, :, None] * a2[:, j, None, j + 1:j1]
        if j1 < n:  # U12 = L11^-1 A12, A22 -= L21 U12
            w = j1 - j0
            l11 = xp.tril(a2[:, j0:j1, j0:j1], -1) + xp.eye(w, dtype=a2.dtype)
            a2[:, j0:j1, j1:] = xp.linalg.solve(l11, a2[:, j0:j1, j1:])
            if j1 < m:
                a2[:, j1:, j1:] -= a2[:, j1:, j0:j1] @ a2[:, j0:j1, j1:]
    return a2.reshape(batch + (m, n)), piv.reshape(batch + (k,)), info.reshape(batch)


def _pivots_to_perm(xp: Any, piv: Any, m: int) -> Any:
    """LAPACK's row swaps (*, k) (1-based) as the permutation (*, m) with A[perm] = L U."""
    batch = tuple(piv.shape[:-1])
    p2 = xp.asarray(piv).reshape((-1, piv.shape[-1])).astype(np.int64) - 1
    perm = xp.array(xp.broadcast_to(xp.arange(m), (p2.shape[0], m)), copy=True)
    rows = xp.arange(p2.shape[0])
    for j in range(p2.shape[1]):
        t = perm[:, j].copy()
        perm[:, j] = perm[rows, p2[:, j]]
        perm[rows, p2[:, j]] = t
    return perm.reshape(batch + (m,))


def _perm_matrix(xp: Any, piv: Any, m: int, dtype: Any) -> Any:
    """P (*, m, m) with A = P L U for LAPACK's row swaps ``piv``: P[perm[i], i] = 1."""
    perm = _pivots_to_perm(xp, piv, m)
    return (xp.arange(m)[:, None] == perm[..., None, :]).astype(dtype)
