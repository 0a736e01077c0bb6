"""Other operations on matrices, as PyTorch's docs list them under "Other Operations": einsum and
tensordot, the triangles (tril, triu and their indices), the diagonals (diagonal, diag, diag_embed,
diagflat), trace, kron and cross; also ``t`` (a view op, in PyTorch's shape-and-views group).

Neighbours: ``blas.py`` (the matmul family these build on), ``linalg.py`` (the matrix
functions), ``other.py`` (the other composites); shared argument checks in ``_matrix.py``.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

from .. import _backend
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase, wrap_dim
from ..autograd.function import Op, internal_view
from . import casting as _cast
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._matrix import (
    _broadcast_batch,
    _const,
    _is_low,
    _no_bool,
    _result,
    _same_dtype,
    _same_dtype_mm,
    _shape,
    _tensor,
)
from ._promote import conjugated
from .blas import mm
from .creation import tensor

__all__ = [
    "einsum",
    "tensordot",
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
]


# ---------------------------------------------------------------------------------------------
# tensordot


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    """Contract ``dims`` (an int: the last dims of a with the first of b; or two lists) of a and b."""
    if _amp.active and out is None:
        a, b = _amp_cast("tensordot", a, b)
    a = _tensor(a, "tensordot", "a", 1)
    b = _tensor(b, "tensordot", "b", 2)
    sa, sb = _shape(a), _shape(b)
    if isinstance(dims, int) or (isinstance(dims, TensorBase) and dims.ndim == 0):
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
        da = [wrap_dim(x, len(sa)) for x in da]
        db = [wrap_dim(x, len(sb)) for x in db]
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
    res = res.reshape(tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))
    return _result(res, out, "tensordot")


# ---------------------------------------------------------------------------------------------
# einsum


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def einsum(*args: Any) -> Any:
    """Sum of products over subscripts, e.g. ``einsum('bij,bjk->bik', a, b)`` (batched matmul).

    Also the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` and a list of operands.
    Size-1 dims broadcast; '...' stands for the remaining (broadcast) dims. All arguments are
    positional, as PyTorch's ``einsum(*args)``.
    """
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    equation, operands = args[0], tuple(args[1:])
    if _amp.active:
        operands = _amp_cast("einsum", *operands)
    if not isinstance(equation, str):
        equation, ops = _parse_sublist((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
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
    op = conjugated(Einsum) if kind == "c" else Einsum  # (complex: PyTorch's conjugated rule)
    res = op.apply((ins, out, sizes), *ops)
    if len(ins) == 2 and (set(ins[0]) & set(ins[1])) - set(out):
        # PyTorch's contraction is a view of its bmm's output: so is ember's (a recorded
        # ViewBackward0 where autograd records, so views of it and in-place ops see that base)
        if res._grad_fn is None:
            return internal_view(res)
        return res.view(res.shape)
    return res


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
        # an operand is needed by the other operands' gradients only (PyTorch's products keep
        # it only then): one whose partners need none is not kept
        need = ctx.needs_input_grad[1:]
        ctx.save_for_backward(*[o if any(need[:i] + need[i + 1:]) else None
                                for i, o in enumerate(ops)])
        res = _einsum_arrays(ctx.xp, ins, out, list(ops), sizes)
        if len(ops) > 1 and not res.flags.c_contiguous:
            # NumPy may contract in another dim order and hand back a transposed view; PyTorch's
            # products come out contiguous for the usual equations (attention's bij,bkj->bik)
            res = ctx.xp.ascontiguousarray(res)
        return res

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
            if isinstance(grad, TensorBase):
                g = einsum(",".join(terms) + "->" + tgt, *arrays)
            else:
                g = _einsum_arrays(ctx.xp, terms, tgt, arrays, sizes)
            grads.append(g)
        return tuple(grads)


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
    res = _pair_product(xp, ins, out, fixed, sizes) if len(fixed) == 2 else None
    if res is None:
        res = xp.asarray(xp.einsum(eq, *fixed, optimize=len(fixed) > 1))
    return res.astype(dt) if low else res


def _pair_product(xp: Any, ins: list, out: str, arrays: list, sizes: dict) -> Any:
    """A two-operand contraction as one batched matmul laid out for ``out``, as PyTorch's
    einsum does it: operands permuted to (batch, rows, summed) and (batch, summed, columns).
    None where it does not apply (a subscript repeated in one operand, nothing summed over
    both operands). NumPy's own planner may pick the transposed product, whose copy into
    ``out``'s order cost more than the product (attention's ``bhid,bhjd->bhij``)."""
    sa, sb = ins
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb):
        return None
    a, b = arrays
    alone_a = [c for c in sa if c not in sb and c not in out]  # summed in a alone
    alone_b = [c for c in sb if c not in sa and c not in out]
    if alone_a:
        a = a.sum(axis=tuple(sa.index(c) for c in alone_a))
        sa = "".join(c for c in sa if c not in alone_a)
    if alone_b:
        b = b.sum(axis=tuple(sb.index(c) for c in alone_b))
        sb = "".join(c for c in sb if c not in alone_b)
    summed = [c for c in sa if c in sb and c not in out]
    if not summed:
        return None
    batch = [c for c in out if c in sa and c in sb]
    rows = [c for c in out if c in sa and c not in sb]
    cols = [c for c in out if c in sb and c not in sa]

    def size(cs: list) -> int:
        return math.prod(sizes[c] for c in cs)

    pa = a.transpose([sa.index(c) for c in batch + rows + summed])
    pb = b.transpose([sb.index(c) for c in batch + summed + cols])
    res = xp.matmul(pa.reshape(size(batch), size(rows), size(summed)),
                    pb.reshape(size(batch), size(summed), size(cols)))
    have = batch + rows + cols
    res = res.reshape(tuple(sizes[c] for c in have))
    return res.transpose([have.index(c) for c in out])


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


# ---------------------------------------------------------------------------------------------
# transposes and triangles


def t(input: Any) -> Any:
    """Transpose a tensor of at most 2 dims (0-d and 1-D come back as they are)."""
    x = _tensor(input, "t", "input", 1)
    if x._data.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {x._data.ndim}D (shape "
            f"{_shape(x)}); use x.mT to transpose the last two dims, or x.permute(...)"
        )
    return T.apply(x)


def tril(input: Any, diagonal: int = 0, *, out: Any = None) -> Any:
    """Lower triangle of each matrix (last two dims): zero the elements above ``diagonal``."""
    x = _tensor(input, "tril", "input", 1)
    _check_matrix_rank("tril", x)
    return _result(Tril.apply(x, int(diagonal)), out, "tril")


def triu(input: Any, diagonal: int = 0, *, out: Any = None) -> Any:
    """Upper triangle of each matrix (last two dims): zero the elements below ``diagonal``."""
    x = _tensor(input, "triu", "input", 1)
    _check_matrix_rank("triu", x)
    return _result(Triu.apply(x, int(diagonal)), out, "triu")


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """The (2, N) row/column indices of the lower triangle of a row x col matrix."""
    return _tri_indices("tril_indices", int(row), int(col), int(offset), True, dtype, device,
                        requires_grad)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """The (2, N) row/column indices of the upper triangle of a row x col matrix."""
    return _tri_indices("triu_indices", int(row), int(col), int(offset), False, dtype, device,
                        requires_grad)


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


def _triangle(xp: Any, x: Any, k: int, lower: bool) -> Any:
    """x with the elements above (``lower``) or below diagonal k of each matrix zeroed."""
    if (out := _kernels.triangle(x, k, lower)) is not None:  # (row by row: the same bits)
        return out
    n, m = x.shape[-2:]
    keep = xp.tri(n, m, k, dtype=bool) if lower else ~xp.tri(n, m, k - 1, dtype=bool)
    out = xp.where(keep, x, xp.zeros((), dtype=x.dtype))
    return out if out.flags.c_contiguous else xp.ascontiguousarray(out)  # (as PyTorch's)


def _check_matrix_rank(fn: str, x: Any) -> None:
    if x._data.ndim < 2:
        raise RuntimeError(
            f"{fn}: input tensor must have at least 2 dimensions (got shape {_shape(x)}); it "
            "applies to the last two dims of a matrix or a batch of matrices"
        )


def _tri_indices(fn: str, row: int, col: int, offset: int, lower: bool, dtype: Any,
                 device: Any, requires_grad: bool = False) -> Any:
    if row < 0 or col < 0:
        raise RuntimeError(f"{fn}: row and col must be non-negative (got row={row}, col={col})")
    r, c = np.indices((row, col))
    keep = (c - r <= offset) if lower else (c - r >= offset)
    idx = np.stack([r[keep], c[keep]]).astype(np.int64)
    return tensor(idx, dtype=dtype if dtype is not None else np.int64, device=device,
                  requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------
# diagonals


_cross_warned = False


def diagonal(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """View of the ``offset`` diagonal over dims (dim1, dim2), appended as the last dim."""
    x = _tensor(input, "diagonal", "input", 1)
    nd = x._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(x, int(offset), d1, d2)


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    """Matrices (over dims dim1, dim2 of the output) whose ``offset`` diagonal is input's last dim."""
    x = _tensor(input, "diag_embed", "input", 1)
    nd = x._data.ndim + 1
    if x._data.ndim == 0:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [-1, 0], but got {dim1}) "
            "(diag_embed needs at least a 1-D input)"
        )
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
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
        return _result(DiagEmbed.apply(x, (n, n), k, 0, 1), out, "diag")
    if nd == 2:
        return _result(_DiagonalCopy.apply(x, k, 0, 1), out, "diag")
    raise RuntimeError(
        f"diag(): Supports 1D or 2D tensors. Got {nd}D (shape {_shape(x)}); use "
        "torch.diagonal or torch.diag_embed for batches"
    )


def diagflat(input: Any, offset: int = 0) -> Any:
    """A square matrix with the flattened input on the ``offset`` diagonal."""
    x = _tensor(input, "diagflat", "input", 1)
    return diag(x.reshape(-1), offset)


def trace(input: Any) -> Any:
    """Sum of the main diagonal of a 2-D tensor (integer inputs give int64)."""
    if _amp.active:
        (input,) = _amp_cast("trace", input)
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
    return _result(res, out, "kron")


def cross(input: Any, other: Any, dim: int | None = None, *, out: Any = None) -> Any:
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3, deprecated)."""
    if _amp.active and out is None:
        input, other = _amp_cast("cross", input, other)
    return _result(_cross("cross", input, other, dim), out, "cross")


class Diagonal(Op):
    """out = the ``offset`` diagonal of x over (dim1, dim2), as the last dim (a view)
    grad_x = zeros of x's shape with grad written on that diagonal (diag_embed)"""

    node_name = "DiagonalBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, offset: int, d1: int, d2: int) -> Any:
        ctx.args = (tuple(x.shape), offset, d1, d2)
        out = ctx.xp.diagonal(x, offset, d1, d2)
        if type(out) is _backend.CPU_ARRAY and not out.flags.writeable and x.flags.writeable:
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
        kind = (grad._data if isinstance(grad, TensorBase) else grad).dtype.kind
        op = conjugated(Cross) if kind == "c" else Cross  # complex: recorded as such
        ga = ctx.call(op, b, grad, ctx.dim) if need[0] else None
        gb = ctx.call(op, grad, a, ctx.dim) if need[1] else None
        return ga, gb, None


def _diag_positions(xp: Any, n: int, offset: int) -> tuple[Any, Any]:
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    return rows, cols


def _embed_shape(batch: tuple, n: int, d1: int, d2: int) -> tuple:
    it = iter(batch)
    return tuple(n if i in (d1, d2) else next(it) for i in range(len(batch) + 2))


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
    d = wrap_dim(dim, len(shape))
    na, nb = len(sa), len(sb)
    la = sa[d - (len(shape) - na)] if d - (len(shape) - na) >= 0 else 1
    lb = sb[d - (len(shape) - nb)] if d - (len(shape) - nb) >= 0 else 1
    if la != 3 or lb != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {la} and {lb} "
            f"({fn}: shapes {sa} and {sb})"
        )
    return (conjugated(Cross) if a._data.dtype.kind == "c" else Cross).apply(a, b, d - len(shape))
