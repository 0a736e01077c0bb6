"""``torch.sparse``: the functions of sparse tensors (``mm``, ``addmm``, ``sum``, ``softmax``,
``log_softmax``), and ``check_sparse_tensor_invariants``.

Sparse tensors themselves (``torch.sparse_coo_tensor``, ``x.to_sparse()``) are
``ember._tensor_sparse.SparseTensor``; their records and kernels are in ``ember/ops/sparse.py``.
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import _dtype, _dtype_info, _overrides
from .. import _tensor_sparse as _ts
from .._tensor_base import TensorBase
from ..ops import sparse as _sp
from ..ops import sparse_compressed as _spc
from ..ops import sparse_creation as _creation

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spmm", "check_sparse_tensor_invariants",
           "as_sparse_gradcheck"]


def mm(mat1: Any, mat2: Any, reduce: str = "sum") -> Any:
    """``mat1 @ mat2`` with ``mat1`` sparse (COO or compressed): dense for a dense ``mat2``
    (gradients to both; ``mat1``'s is sparse, at its indices, in its layout), sparse (of
    ``mat1``'s layout) for a sparse ``mat2``. ``reduce`` (``mean``, ``amax``, ``amin``) reduces
    each row's products of a CSR ``mat1`` otherwise than by summing them."""
    if not _sp.is_sparse(mat1):
        raise RuntimeError("torch.sparse.mm: expected mat1 to be a sparse tensor (use torch.mm "
                           "for two dense matrices)")
    if reduce != "sum":
        return _spc.sparse_mm_reduce(mat1, mat2, reduce)
    if _sp.is_sparse(mat2):
        return _ts._mm(mat1, mat2, dense_grad=False, keep_layout=True)
    return _sp.sparse_mm(mat1._as_coo("mm"), mat2, dense_grad=False, name="mm")


mm = _overrides.dispatcher(mm)  # hands a tensor subclass the call, as PyTorch's does
spmm = mm


def addmm(mat: Any, mat1: Any, mat2: Any, *, beta: float = 1.0, alpha: float = 1.0) -> Any:
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse and ``mat``, ``mat2`` dense."""
    prod = mm(mat1, mat2)
    return mat * beta + prod * alpha if (beta, alpha) != (1, 1) else mat + prod


def sum(input: Any, dim: Any = None, dtype: Any = None) -> Any:  # noqa: A001 - PyTorch's name
    """The sum of a sparse tensor's values: over everything (a dense 0-d tensor), or over
    ``dim`` (a sparse tensor while sparse dims remain, else dense)."""
    if not _sp.is_sparse(input):
        raise RuntimeError("torch.sparse.sum: expected a sparse tensor (use torch.sum for a "
                           "dense one)")
    if dim is None:
        return _sp.sparse_sum_all(input, dtype)
    return _ts.sparse_sum_dims(input, dim, dtype)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """Softmax over ``dim`` of the specified elements only (unspecified ones count as -inf and
    stay unspecified): a sparse tensor of ``input``'s (coalesced) pattern."""
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """``log(softmax(input, dim))`` over the specified elements (see ``softmax``)."""
    return _softmax(input, dim, dtype, log=True)


def _softmax(input: Any, dim: int, dtype: Any, log: bool) -> Any:
    import numpy as np

    from .. import ops
    from .._backend import xp_of
    from .._tensor_base import wrap_dim

    if not _sp.is_sparse(input):
        raise RuntimeError("torch.sparse.softmax: expected a sparse tensor")
    s = _sp.coalesce_tensor(input._as_coo("softmax"))
    c = s._data
    d = wrap_dim(dim, c.ndim)
    if d >= c.sparse_dim:
        raise NotImplementedError("torch.sparse.softmax over a dense dimension is not supported "
                                  "by ember")
    c, v = _sp.values_of(s)
    if dtype is not None:
        v = v.to(dtype)
    others = [k for k in range(c.sparse_dim) if k != d]
    sizes = tuple(c.shape[k] for k in others)
    key = _sp._linear(c.indices[others], sizes) if others else xp_of(c.indices).zeros(
        c.nnz, np.int64)
    uniq, inv = xp_of(key).unique(key, return_inverse=True)
    inv_t = TensorBase._make(inv.reshape(-1))
    n = uniq.shape[0]
    rest = tuple(v.shape[1:])
    with_grad = v.detach()
    mx = ops.full((n,) + rest, float("-inf"), dtype=v.dtype).index_reduce(
        0, inv_t, with_grad, "amax")
    shifted = v - mx[inv_t]
    e = shifted.exp()
    tot = ops.zeros((n,) + rest, dtype=v.dtype).index_add(0, inv_t, e)
    out = shifted - tot.log()[inv_t] if log else e / tot[inv_t]
    return _sp.from_values(_sp.COO(c.indices, out._data, c.shape, True), out)


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """``torch.sparse.check_sparse_tensor_invariants``: ember always checks a sparse tensor's
    indices against its size when it is made, so this switch only records the setting."""

    _enabled = False

    def __init__(self, enable: bool = True) -> None:
        self.state = enable

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self) -> None:
        self.saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state

    def __exit__(self, *exc: Any) -> None:
        check_sparse_tensor_invariants._enabled = self.saved

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapped


def as_sparse_gradcheck(gradcheck: Any) -> Any:
    """``torch.sparse.as_sparse_gradcheck``: ember's gradcheck is returned unchanged."""
    return gradcheck


class _LegacySparseType(type):
    """``isinstance(s, torch.sparse.FloatTensor)``: a sparse COO tensor of that dtype."""

    _dtype: Any

    def __instancecheck__(cls, obj: object) -> bool:
        return _sp.is_sparse(obj) and obj.layout is _dtype_info.sparse_coo \
            and obj.dtype is cls._dtype


def _legacy_sparse(name: str, dt: Any) -> type:
    def __new__(cls: type, *args: Any, device: Any = None) -> Any:  # noqa: N807
        """``torch.sparse.FloatTensor(indices, values[, size])`` (the values' dtype, as in
        PyTorch) or ``torch.sparse.FloatTensor(*size)`` (empty, of the class's dtype)."""
        warnings.warn(f"torch.sparse.{name}(...) is deprecated. Please use "
                      "torch.sparse_coo_tensor(indices, values, shape, dtype=, device=).",
                      UserWarning, stacklevel=2)
        if len(args) >= 2 and isinstance(args[0], TensorBase):
            return _creation.sparse_coo_tensor(args[0], args[1], *args[2:3], device=device)
        size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        return _creation.sparse_coo_tensor(size=tuple(size) or (0,), dtype=dt, device=device)

    return _LegacySparseType(name, (), {"__new__": __new__, "_dtype": dt,
                                        "__module__": "torch.sparse", "__qualname__": name})


FloatTensor = _legacy_sparse("FloatTensor", _dtype.float32)
DoubleTensor = _legacy_sparse("DoubleTensor", _dtype.float64)
HalfTensor = _legacy_sparse("HalfTensor", _dtype.float16)
BFloat16Tensor = _legacy_sparse("BFloat16Tensor", _dtype.bfloat16)
LongTensor = _legacy_sparse("LongTensor", _dtype.int64)
IntTensor = _legacy_sparse("IntTensor", _dtype.int32)
ShortTensor = _legacy_sparse("ShortTensor", _dtype.int16)
CharTensor = _legacy_sparse("CharTensor", _dtype.int8)
ByteTensor = _legacy_sparse("ByteTensor", _dtype.uint8)
