"""Small top-level names PyTorch programs use: constants, ``finfo``/``iinfo``, memory formats,
global switches, and functions built from existing ops (``meshgrid``, ``cdist``, ``quantile``...).

Every function here is a composite of ops in ``ember/ops/``, so autograd records the ops it is
made of and gradients need no rule of their own. Names were chosen by how often public PyTorch
programs use them (docs/api-coverage.md, "most used names ember lacked").
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor_base import TensorBase

__all__ = [
    "pi", "e", "inf", "nan", "newaxis", "finfo", "iinfo", "memory_format", "contiguous_format",
    "preserve_format", "channels_last", "channels_last_3d", "legacy_contiguous_format", "layout",
    "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged",
    "OutOfMemoryError", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled",
    "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
    "get_default_device", "get_device_module", "set_default_tensor_type", "is_complex", "is_nonzero",
    "is_same_size", "is_signed", "is_storage", "is_conj", "is_neg", "is_inference", "typename",
    "conj", "conj_physical", "resolve_conj", "resolve_neg", "real", "angle", "detach",
    "get_device", "meshgrid", "cartesian_prod", "combinations", "block_diag", "vander", "cdist",
    "dist", "diff", "trapezoid", "trapz", "cumulative_trapezoid", "quantile", "nanquantile",
    "bucketize", "unravel_index", "isin", "gcd", "lcm", "cov", "corrcoef", "logcumsumexp", "rsub",
    "fill", "split_with_sizes", "hann_window", "hamming_window", "blackman_window",
    "bartlett_window", "kaiser_window", "histogram", "frombuffer", "renorm", "ldexp", "frexp",
    "nextafter", "bitwise_left_shift", "bitwise_right_shift", "select_scatter", "slice_scatter", "diagonal_scatter",
    "expand_copy", "permute_copy", "t_copy", "transpose_copy", "unsqueeze_copy", "squeeze_copy",
    "view_copy", "diagonal_copy", "select_copy", "detach_copy", "alias_copy", "narrow_copy",
    "unfold_copy", "as_strided_copy", "unbind_copy", "split_copy", "split_with_sizes_copy",
    "slice_copy", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "sum_to_size",
]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


def _t() -> Any:
    return TensorBase


def _tensor(x: Any, **kw: Any) -> Any:
    from .creation import tensor

    return tensor(x, **kw)


def _as(x: Any) -> Any:
    return x if isinstance(x, _t()) else _tensor(x)


# -- numeric limits -------------------------------------------------------------------------

class finfo:
    """Machine limits of a floating dtype: ``finfo(torch.float32).eps``."""

    def __init__(self, type: Any = None) -> None:  # noqa: A002 - PyTorch's name
        from .._dtype import get_default_dtype

        dt = get_default_dtype() if type is None else type
        if not isinstance(dt, _dtype.dtype) or not dt.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type, got {dt}; "
                            "use torch.iinfo for integer types")
        try:
            info = np.finfo(dt.np)
        except ValueError:  # bfloat16 from ml_dtypes
            import ml_dtypes

            info = ml_dtypes.finfo(dt.np)
        self.bits = builtins.int(info.bits)
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.smallest_normal)
        self.resolution = 10.0 ** -builtins.int(info.precision)
        self.dtype = dt.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype: ``iinfo(torch.int64).max``."""

    def __init__(self, type: Any) -> None:  # noqa: A002 - PyTorch's name
        if not isinstance(type, _dtype.dtype) or type.is_floating_point or type.name == "bool":
            raise TypeError(f"torch.iinfo() requires an integer input type, got {type}; "
                            "use torch.finfo for floating point types")
        info = np.iinfo(type.np)
        self.bits = builtins.int(info.bits)
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, dtype={self.dtype})"


# -- memory formats and layouts (ember arrays are always strided; these are tags) ------------

class memory_format:
    """A memory-format tag (``torch.channels_last``); ember keeps NumPy's layout whatever the tag."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
legacy_contiguous_format = contiguous_format


class layout:
    """A tensor layout tag; every ember tensor is ``torch.strided``."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")


class OutOfMemoryError(RuntimeError):
    """Raised when a device runs out of memory (``torch.OutOfMemoryError``)."""


# -- global switches ----------------------------------------------------------------------

_state: dict[str, Any] = {
    "deterministic": False, "warn_only": False, "matmul_precision": "highest",
    "warn_always": False, "interop_threads": 1,
}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the switch; ember's NumPy/CuPy kernels are deterministic already."""
    _state["deterministic"] = builtins.bool(mode)
    _state["warn_only"] = builtins.bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``"default"``/0, ``"warn"``/1 or ``"error"``/2, as ``use_deterministic_algorithms``."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"``; ember's float32 matmuls are always full
    precision (there is no TF32 on NumPy), so only the setting is kept."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: use 'highest', 'high' or 'medium'")
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


def set_warn_always(b: bool) -> None:
    _state["warn_always"] = builtins.bool(b)


def is_warn_always_enabled() -> bool:
    return _state["warn_always"]


def get_num_interop_threads() -> int:
    return _state["interop_threads"]


def set_num_interop_threads(n: int) -> None:
    if builtins.int(n) < 1:
        raise RuntimeError(f"Expected positive number of threads, got {n}")
    _state["interop_threads"] = builtins.int(n)


def init_num_threads() -> None:
    """Nothing to initialise: NumPy's thread pool starts on first use."""


def get_default_device() -> Any:
    from .._backend import device

    return device("cpu")


def get_device_module(device: Any = None) -> Any:
    """The module for a device type: ``torch.cuda`` for 'cuda', ``torch.cpu`` for 'cpu'
    (no argument: the default device's)."""
    import importlib

    from .._backend import device as _device

    kind = "cpu" if device is None else (device if isinstance(device, str) else str(device))
    kind = _device(kind).type if kind not in ("xpu", "mps") else kind
    return importlib.import_module(f"ember.{kind}")


def set_default_tensor_type(t: Any) -> None:
    """Deprecated in PyTorch: sets the default dtype from ``torch.DoubleTensor`` or its name."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    from .._dtype import set_default_dtype

    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    name = name.rsplit(".", 1)[-1]
    table = {"FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64,
             "HalfTensor": _dtype.float16}
    if name not in table:
        raise TypeError(f"invalid type {t!r}: use torch.FloatTensor or torch.DoubleTensor "
                        "(or torch.set_default_dtype)")
    set_default_dtype(table[name])


def _deprecated(msg: str) -> None:
    warnings.warn(msg, DeprecationWarning, stacklevel=3)


# -- predicates and identities on real tensors -----------------------------------------------

def is_complex(input: Any) -> bool:
    """False: ember has no complex dtypes yet."""
    return input.is_complex()


def is_nonzero(input: Any) -> bool:
    return input.is_nonzero()


def is_same_size(input: Any, other: Any) -> bool:
    return input.is_same_size(other)


def is_signed(input: Any) -> bool:
    return input.is_signed()


def is_storage(obj: Any) -> bool:
    """False: ember exposes no storage objects."""
    return False


def is_conj(input: Any) -> bool:
    return False


def is_neg(input: Any) -> bool:
    return False


def is_inference(input: Any) -> bool:
    return input.is_inference()


def typename(obj: Any) -> str:
    """``'torch.FloatTensor'`` for a float32 tensor, else the object's qualified type name."""
    if isinstance(obj, _t()):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def conj(input: Any) -> Any:
    """The tensor itself: a real tensor is its own conjugate."""
    return input


conj_physical = resolve_conj = resolve_neg = conj


def real(input: Any) -> Any:
    """The tensor itself for a real tensor (as PyTorch returns ``self``)."""
    return input


def angle(input: Any) -> Any:
    """``pi`` where ``input < 0``, else 0 (NaN stays NaN); integer inputs give the default
    float dtype. Its gradient is zero, as PyTorch's is for real inputs."""
    from . import elementwise as ew

    x = _as(input)
    if not x.is_floating_point():
        x = x.to(_dtype.get_default_dtype())
    return ew.where(ew.isnan(x), x, (x < 0).to(x.dtype) * pi) + x * 0


def detach(input: Any) -> Any:
    return input.detach()


def get_device(input: Any) -> int:
    return input.get_device()


# -- grids and combinations --------------------------------------------------------------

def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple:
    """Coordinate grids: ``meshgrid(x, y, indexing="ij")``; the default is ``"ij"`` with
    PyTorch's warning that the argument will become required."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {tuple(t.shape)}; flatten it first")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(t.reshape(view).expand(shape))
    if swap:  # "xy": the ij grids of (y, x, ...), with the first two swapped back
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Any) -> Any:
    """All combinations of one element from each 1-D tensor, as rows."""
    from .joining import stack

    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Any:
    """``itertools.combinations`` of a 1-D tensor's elements, as rows of an ``(n, r)`` tensor."""
    from .joining import stack

    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    n = input.shape[0]
    fn = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(fn(range(n), r)), dtype=np.int64).reshape(-1, r)
    if r == 0 or idx.size == 0:
        return input.new_empty((0,) if r == 0 else (0, r))
    return stack([input[_tensor(idx[:, j], device=input.device)] for j in range(r)], dim=1)


def block_diag(*tensors: Any) -> Any:
    """A block-diagonal matrix from 0-, 1- or 2-D tensors."""
    from .elementwise import _promote  # noqa: F401 - keeps dtype rules in one place
    from .joining import cat

    mats = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    for t in mats:
        if t.dim() != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input has {t.dim()} dimensions")
    if not mats:
        return _tensor(np.zeros((1, 0), np.float32))
    dt = _dtype.result_type(*mats)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, c0 = [], 0
    for m in mats:
        left = m.new_zeros((m.shape[0], c0), dtype=dt)
        right = m.new_zeros((m.shape[0], cols - c0 - m.shape[1]), dtype=dt)
        rows.append(cat([left, m.to(dt), right], dim=1))
        c0 += m.shape[1]
    return cat(rows, dim=0)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """Vandermonde matrix: columns ``x ** (N-1) ... x ** 0`` (reversed if ``increasing``)."""
    from .joining import stack

    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    xx = x if x.is_floating_point() else x.to(_dtype.int64)
    powers = [xx ** p if p else xx.new_ones(xx.shape) for p in range(n)]
    if not increasing:
        powers = powers[::-1]
    if not powers:
        return xx.new_empty((x.shape[0], 0))
    return stack(powers, dim=1)


# -- distances and differences -------------------------------------------------------------

def cdist(x1: Any, x2: Any, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Any:
    """p-norm distances between each row of ``x1`` (..., P, M) and each row of ``x2`` (..., R, M)."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, "
                           f"X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    diff_ = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return _pnorm_last(diff_, p)


def _pnorm_last(d: Any, p: float) -> Any:
    """The p-norm over the last dim, with gradient 0 where the norm is 0 (PyTorch's choice)."""
    from . import elementwise as ew

    a = d.abs()
    if p == 0:
        return (a != 0).to(d.dtype).sum(-1) + (d * 0).sum(-1)
    if p == math.inf:
        return a.amax(-1)
    if p == 1:
        return a.sum(-1)
    s = (a ** p).sum(-1)
    safe = ew.where(s > 0, s, s.new_ones(()))
    return ew.where(s > 0, safe ** (1.0 / p), s * 0)


def dist(input: Any, other: Any, p: float = 2) -> Any:
    """The p-norm of ``input - other`` (broadcast), a 0-d tensor."""
    d = (input - other).reshape(-1)
    return _pnorm_last(d, builtins.float(p))


def diff(input: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """n-th forward difference along ``dim``; ``prepend``/``append`` are joined first."""
    from .joining import cat

    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    x = input
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, x, append) if t is not None]
        x = cat([_as(t) for t in parts], dim=dim)
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        hi, lo = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = hi ^ lo if x.dtype == _dtype.bool_ else hi - lo
    return x


def trapezoid(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Any:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule (spacing ``x`` or ``dx``)."""
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim) * 0
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if x is None:
        return mid.sum(dim) * (1.0 if dx is None else dx)
    x = _as(x)
    if x.dim() == 1:
        dxs = diff(x)
        shape = [1] * y.dim()
        shape[dim] = n - 1
        return (mid * dxs.reshape(shape)).sum(dim)
    return (mid * diff(x, dim=dim)).sum(dim)


def trapz(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Any:
    """``trapezoid`` under its older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Any:
    """Running trapezoidal integral of ``y`` along ``dim`` (one element shorter)."""
    n = y.shape[dim]
    mid = (y.narrow(dim, 1, builtins.max(n - 1, 0)) + y.narrow(dim, 0, builtins.max(n - 1, 0))) / 2
    if x is None:
        return (mid * (1.0 if dx is None else dx)).cumsum(dim)
    x = _as(x)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim] = n - 1
        return (mid * diff(x).reshape(shape)).cumsum(dim)
    return (mid * diff(x, dim=dim)).cumsum(dim)


# -- order statistics ----------------------------------------------------------------------

def quantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Any = None) -> Any:
    """The ``q``-quantiles of ``input`` (over all elements, or along ``dim``); ``q`` is a float or
    a 1-D tensor, whose values come first in the result's shape. A NaN in a slice gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False, name="quantile")


def nanquantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Any = None) -> Any:
    """``quantile`` that ignores NaNs (an all-NaN slice gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True, name="nanquantile")


def _quantile(input: Any, q: Any, dim: Any, keepdim: bool, interpolation: str,
              ignore_nan: bool, name: str) -> Any:
    from . import elementwise as ew
    from .indexing_scatter import gather
    from .sorting import sort

    if not input.is_floating_point():
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype, got "
                           f"{input.dtype}; convert it first, e.g. x.float()")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, _t())
    qt = _tensor(q, dtype=input.dtype) if scalar_q else q
    if qt.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor, got {qt.dim()}D")
    if qt.dtype != input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    qv = np.asarray(qt.detach().cpu().numpy(), np.float64).reshape(-1)
    if qv.size and ((qv < 0).any() or (qv > 1).any()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input.movedim(dim, -1)
    if x.dim() == 0:
        x = x.reshape(1)
    n = x.shape[-1]
    if n == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    srt = sort(x, dim=-1)[0]  # NaNs sort last
    nan_count = ew.isnan(x).sum(-1, keepdim=True)
    valid = (n - nan_count) if ignore_nan else nan_count * 0 + n
    last = (valid - 1).clamp(min=0).to(input.dtype)
    outs = []
    for qq in qv:
        rank = last * builtins.float(qq)
        lo = rank.floor()
        hi = rank.ceil()
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = ew.round(rank)
        lo_v = gather(srt, -1, lo.to(_dtype.int64))
        hi_v = gather(srt, -1, hi.to(_dtype.int64))
        if interpolation == "midpoint":
            val = lo_v + (hi_v - lo_v) * 0.5
        elif interpolation == "linear":
            val = lo_v + (hi_v - lo_v) * (rank - lo)
        else:
            val = lo_v
        bad = (valid == 0) if ignore_nan else (nan_count > 0)
        val = ew.where(bad, val.new_full((), math.nan), val)
        outs.append(val)
    from .joining import stack

    res = stack(outs, 0)  # (Q, ..., 1)
    if dim is None:
        res = res.reshape(res.shape[0], *([1] * input.dim())) if keepdim else res.reshape(-1)
    else:
        res = res.movedim(-1, dim + 1 if dim >= 0 else dim)
        if not keepdim:
            res = res.squeeze(dim + 1 if dim >= 0 else dim)
    return res[0] if scalar_q else res


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False,
              out: Any = None) -> Any:
    """The index of the bucket each value falls in, given sorted 1-D ``boundaries``."""
    from .sorting import searchsorted

    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    scalar = not isinstance(input, _t())
    x = _tensor(input) if scalar else input
    res = searchsorted(boundaries, x, out_int32=out_int32, right=right)
    return res.reshape(()) if scalar else res


def unravel_index(indices: Any, shape: Any) -> tuple:
    """Flat indices to a tuple of coordinate tensors for ``shape``."""
    idx = _as(indices)
    if idx.is_floating_point() or idx.dtype == _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {idx.dtype}")
    shape = (shape,) if isinstance(shape, builtins.int) else tuple(builtins.int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    total = math.prod(shape)
    data = idx.detach().cpu().numpy().astype(np.int64)
    if ((data < -total) | (data >= total)).any():
        raise ValueError(f"'indices' must be in range [-{total}, {total}-1]")
    coords = np.unravel_index(np.where(data < 0, data + total, data), shape)
    return tuple(_tensor(c.astype(np.int64), device=idx.device) for c in coords)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Any:
    """Whether each element of ``elements`` is in ``test_elements`` (a bool tensor)."""
    a = _as(elements)
    b = _as(test_elements)
    xp = np
    res = xp.isin(a.detach().cpu().numpy(), b.detach().cpu().numpy(), invert=invert)
    return _tensor(res, device=a.device)


def _int_binary(name: str, fn: Any, a: Any, b: Any) -> Any:
    a, b = _as(a), _as(b)
    dt = _dtype.result_type(a, b)
    if dt.is_floating_point or dt.name == "bool":
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{dt.name.capitalize()}': "
                           f"{name} needs integer tensors")
    res = fn(a.detach().cpu().numpy(), b.detach().cpu().numpy()).astype(dt.np)
    return _tensor(res, device=a.device)


def gcd(input: Any, other: Any) -> Any:
    """Elementwise greatest common divisor of integer tensors."""
    return _int_binary("gcd", np.gcd, input, other)


def lcm(input: Any, other: Any) -> Any:
    """Elementwise least common multiple of integer tensors."""
    return _int_binary("lcm", np.lcm, input, other)


# -- statistics ---------------------------------------------------------------------------

def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
    """Covariance of the rows of ``input`` (variables) over its columns (observations)."""
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    if not x.is_floating_point():
        x = x.to(_dtype.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        avg = x.mean(1, keepdim=True)
        wsum = x.new_full((), builtins.float(n))
        norm = wsum - correction
        xc = x - avg
        c = xc @ xc.t()
    else:
        wsum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / wsum
        if aweights is None or correction == 0:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(x.dtype)).sum() / wsum
        xc = x - avg
        c = (xc * w) @ xc.t()
    from . import elementwise as ew

    norm = ew.clamp(norm, min=0)
    c = c / norm
    return c.reshape(()) if input.dim() < 2 else c


def corrcoef(input: Any) -> Any:
    """Pearson correlation coefficients of the rows of ``input`` (clipped to [-1, 1])."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    sd = d.sqrt()
    c = c / sd.unsqueeze(1) / sd.unsqueeze(0)
    return c.clamp(-1, 1)


def logcumsumexp(input: Any, dim: int) -> Any:
    """``log(cumsum(exp(input)))`` along ``dim``, computed stably (shift by the running max)."""
    from . import elementwise as ew

    if input.dim() == 0:
        return input * 1
    m = input.detach().amax(dim, keepdim=True)
    m = ew.where(ew.isfinite(m), m, m.new_zeros(()))
    return (input - m).exp().cumsum(dim).log() + m


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``other - alpha * input``."""
    from . import elementwise as ew

    return ew._rsub(input, other, alpha)


def fill(input: Any, value: Any) -> Any:
    """A new tensor like ``input`` filled with ``value`` (out of place)."""
    return input.clone().fill_(value) if not isinstance(value, _t()) else \
        input * 0 + value.to(input.dtype)


def split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple:
    """``split`` with a list of sizes that must add up to the dimension's length."""
    sizes = [builtins.int(s) for s in split_sizes]
    if builtins.sum(sizes) != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[dim]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={sizes}")
    return tuple(input.split(sizes, dim))


# -- window functions ---------------------------------------------------------------------

def _window(name: str, n: int, periodic: bool, fn: Any, dtype: Any, **kw: Any) -> Any:
    dt = _dtype.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n == 0:
        return _tensor(np.zeros(0, np.float64), dtype=dt, **kw)
    if n == 1:
        return _tensor(np.ones(1, np.float64), dtype=dt, **kw)
    m = n + 1 if periodic else n
    w = fn(m)[:n]
    return _tensor(w, dtype=dt, **kw)


def _cosine_sum(coeffs: tuple) -> Any:
    def fn(m: int) -> Any:
        k = np.arange(m, dtype=np.float64)
        return builtins.sum(((-1) ** i) * c * np.cos(2 * np.pi * i * k / (m - 1))
                            for i, c in enumerate(coeffs))
    return fn


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))``."""
    return _window("hann_window", window_length, periodic, _cosine_sum((0.5, 0.5)), dtype,
                   device=device, requires_grad=requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Any:
    """Hamming window ``alpha - beta cos(2 pi k / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, _cosine_sum((alpha, beta)), dtype,
                   device=device, requires_grad=requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Blackman window ``0.42 - 0.5 cos(2 pi k/(N-1)) + 0.08 cos(4 pi k/(N-1))``."""
    return _window("blackman_window", window_length, periodic, _cosine_sum((0.42, 0.5, 0.08)),
                   dtype, device=device, requires_grad=requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Bartlett (triangular) window ``1 - |2k/(N-1) - 1|``."""
    def fn(m: int) -> Any:
        k = np.arange(m, dtype=np.float64)
        return 1 - np.abs(2 * k / (m - 1) - 1)
    return _window("bartlett_window", window_length, periodic, fn, dtype, device=device,
                   requires_grad=requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Any:
    """Kaiser window ``I0(beta sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)``."""
    def fn(m: int) -> Any:
        k = np.arange(m, dtype=np.float64)
        return np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, fn, dtype, device=device,
                   requires_grad=requires_grad)


# -- histograms, buffers, elementwise extras ------------------------------------------------

def histogram(input: Any, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
              density: bool = False, out: Any = None) -> Any:
    """``(hist, bin_edges)`` of a float tensor; ``bins`` is a count or a 1-D tensor of edges."""
    from collections import namedtuple

    if not input.is_floating_point():
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same "
                           f"floating dtype, got {input.dtype}; convert it first, e.g. x.float()")
    x = input.detach().cpu().numpy().reshape(-1)
    w = None if weight is None else weight.detach().cpu().numpy().reshape(-1)
    b = bins.detach().cpu().numpy() if isinstance(bins, _t()) else builtins.int(bins)
    rng = None
    if range is not None:
        rng = (builtins.float(range[0]), builtins.float(range[1]))
    elif not isinstance(b, np.ndarray) and x.size == 0:
        rng = (0.0, 0.0)
    hist, edges = np.histogram(x, bins=b, range=rng, weights=w, density=density)
    np_dt = input._data.dtype
    nt = namedtuple("histogram", ["hist", "bin_edges"])
    return nt(_tensor(hist.astype(np_dt), device=input.device),
              _tensor(edges.astype(np_dt), device=input.device))


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Any:
    """A 1-D tensor sharing memory with a Python buffer object (``bytearray``, ``array``...)."""
    arr = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    if not arr.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors.", UserWarning, stacklevel=2)
    t = TensorBase._make(arr)
    return t.requires_grad_(requires_grad) if requires_grad else t


def renorm(input: Any, p: float, dim: int, maxnorm: float) -> Any:
    """Rescale each slice along ``dim`` whose p-norm exceeds ``maxnorm`` down to ``maxnorm``."""
    from . import elementwise as ew

    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = dim % input.dim()
    others = [i for i in builtins.range(input.dim()) if i != d]
    norms = input.norm(p, dim=others, keepdim=True)
    factor = ew.where(norms > maxnorm, maxnorm / (norms + 1e-7), norms.new_ones(()))
    return input * factor


def ldexp(input: Any, other: Any) -> Any:
    """``input * 2 ** other``."""
    x = _as(input)
    if not x.is_floating_point():
        x = x.to(_dtype.get_default_dtype())
    return x * (2.0 ** _as(other).to(x.dtype))


def frexp(input: Any) -> Any:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, |mantissa| in [0.5, 1)."""
    from collections import namedtuple

    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, ex = np.frexp(input.detach().numpy() if input.device.type == "cpu"
                     else input.detach().cpu().numpy())
    nt = namedtuple("frexp", ["mantissa", "exponent"])
    return nt(_tensor(m.astype(input._data.dtype), device=input.device),
              _tensor(ex.astype(np.int32), device=input.device))


def nextafter(input: Any, other: Any) -> Any:
    """The next float after ``input`` towards ``other``."""
    a, b = _as(input), _as(other)
    dt = _dtype.result_type(a, b)
    res = np.nextafter(a.detach().cpu().numpy().astype(dt.np),
                       b.detach().cpu().numpy().astype(dt.np))
    return _tensor(res, device=a.device)


def _shift(name: str, fn: Any, a: Any, b: Any) -> Any:
    a, b = _as(a), _as(b)
    dt = _dtype.result_type(a, b)
    if dt.is_floating_point or dt.name == "bool":
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{dt.name.capitalize()}': "
                           "shifts need integer tensors")
    x = a.detach().cpu().numpy().astype(dt.np)
    y = b.detach().cpu().numpy().astype(dt.np)
    return _tensor(fn(x, y).astype(dt.np), device=a.device)


def bitwise_left_shift(input: Any, other: Any) -> Any:
    """``input << other`` elementwise, for integer tensors."""
    return _shift("lshift", np.left_shift, input, other)


def bitwise_right_shift(input: Any, other: Any) -> Any:
    """``input >> other`` elementwise (arithmetic shift), for integer tensors."""
    return _shift("rshift", np.right_shift, input, other)


# -- scatter views into a copy, and the ``*_copy`` forms of views ----------------------------

def _scatter_into(input: Any, src: Any, view: Any) -> Any:
    """A copy of ``input`` whose window ``view(copy)`` holds ``src`` (differentiable in both)."""
    out = input.clone()
    window = view(out)
    if tuple(window.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(window.shape)}")
    window.copy_(src)
    return out


def select_scatter(input: Any, src: Any, dim: int, index: int) -> Any:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input: Any, src: Any, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Any:
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
    def view(t: Any) -> Any:
        idx = [slice(None)] * t.dim()
        idx[dim] = slice(start, end, step)
        return t[tuple(idx)]
    return _scatter_into(input, src, view)


def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def _copy_of(view_name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, view_name)(*args, **kwargs).clone()
    fn.__name__ = f"{view_name}_copy"
    fn.__doc__ = f"``input.{view_name}(...)`` as a new tensor (not a view)."
    return fn


expand_copy = _copy_of("expand")
permute_copy = _copy_of("permute")
t_copy = _copy_of("t")
transpose_copy = _copy_of("transpose")
unsqueeze_copy = _copy_of("unsqueeze")
squeeze_copy = _copy_of("squeeze")
view_copy = _copy_of("view")
diagonal_copy = _copy_of("diagonal")
select_copy = _copy_of("select")
detach_copy = _copy_of("detach")
narrow_copy = _copy_of("narrow")
unfold_copy = _copy_of("unfold")
as_strided_copy = _copy_of("as_strided")


def alias_copy(input: Any) -> Any:
    """A copy of ``input``."""
    return input.clone()


def slice_copy(input: Any, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1) -> Any:
    """``input[..., start:end:step, ...]`` along ``dim``, as a new tensor."""
    idx = [slice(None)] * input.dim()
    idx[dim] = slice(start, end, step)
    return input[tuple(idx)].clone()


def unbind_copy(input: Any, dim: int = 0) -> tuple:
    return tuple(t.clone() for t in input.unbind(dim))


def split_copy(input: Any, split_size: Any, dim: int = 0) -> tuple:
    return tuple(t.clone() for t in input.split(split_size, dim))


def split_with_sizes_copy(input: Any, split_sizes: Any, dim: int = 0) -> tuple:
    return tuple(t.clone() for t in split_with_sizes(input, split_sizes, dim))


def unsafe_chunk(input: Any, chunks: int, dim: int = 0) -> tuple:
    return tuple(input.chunk(chunks, dim))


def unsafe_split(input: Any, split_size: Any, dim: int = 0) -> tuple:
    return tuple(input.split(split_size, dim))


def unsafe_split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple:
    return split_with_sizes(input, split_sizes, dim)


def sum_to_size(input: Any, *size: Any) -> Any:
    """Sum ``input`` down to ``size`` (the shape it was broadcast from)."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    size = tuple(builtins.int(s) for s in size)
    shape = tuple(input.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, d) for s, d in zip(size, shape[lead:], strict=True)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    out = input
    if lead:
        out = out.sum(tuple(builtins.range(lead)))
    dims = tuple(i for i, (s, d) in enumerate(zip(size, out.shape, strict=True)) if s == 1 and d != 1)
    if dims:
        out = out.sum(dims, keepdim=True)
    return out


def _torch_inplace(name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)`` is ``input.{name}(...)``."
    return fn


# ``torch.exp_(x)`` and friends: the in-place Tensor methods as functions
_TORCH_INPLACE = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ "
    "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ "
    "exp_ expm1_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ "
    "nan_to_num_ "
    "neg_ negative_ rad2deg_ reciprocal_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ "
    "tan_ tanh_ trunc_ xlogy_ zero_ fill_ detach_ index_put_"
).split()
for _n in _TORCH_INPLACE:
    globals()[_n] = _torch_inplace(_n)
__all__ += _TORCH_INPLACE
del _n
