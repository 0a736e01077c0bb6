"""Other operations, as PyTorch's docs group them: composites of ops in other rooms, so autograd
records the ops they are made of and they need no backward of their own (``cdist`` runs one of
the two distance kernels of ``nn/distance.py``). Grids and combinations
(meshgrid, cartesian_prod, combinations, block_diag, vander), distances and differences (cdist,
dist, diff, trapezoid), statistics (cov, corrcoef, histogram, bucketize, renorm), and, until
they move to their rooms, a few names of other families: predicates on tensors (is_complex,
is_nonzero...), quantile/nanquantile, isin, gcd/lcm, ldexp/frexp/nextafter,
the bit shifts, rsub, logcumsumexp, frombuffer and the window functions (hann_window...).

Neighbours: ``other_matrix.py`` (einsum, triangles, diagonals, cross), ``other_variants.py``
(the *_copy, *_scatter and unsafe_* forms of other rooms' ops, torch.<name>_ functions).
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from . import _out, return_types
from . import comparison as _cmp
from . import pointwise as _pw
from . import pointwise_complex as _pc
from . import pointwise_piecewise as _pp
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import _refuse_complex
from .casting import fill  # torch.fill: the kernel behind Tensor.fill_ (out of place)
from .creation import tensor
from .indexing_scatter import gather
from .joining import cat, stack
from .nn import distance as _distance
from .sorting import searchsorted, sort

__all__ = [
    "is_complex", "is_nonzero", "is_same_size", "is_signed", "is_storage",
    "is_inference", "typename", "detach", "get_device", "meshgrid", "cartesian_prod", "combinations", "block_diag",
    "vander", "cdist", "dist", "diff", "trapezoid", "trapz", "cumulative_trapezoid", "quantile",
    "nanquantile", "bucketize", "unravel_index", "isin", "gcd", "lcm", "cov", "corrcoef",
    "logcumsumexp", "rsub", "fill", "hann_window", "hamming_window", "blackman_window",
    "bartlett_window", "kaiser_window", "histogram", "frombuffer", "renorm", "ldexp", "frexp",
    "nextafter", "bitwise_left_shift", "bitwise_right_shift",
]


# ---------------------------------------------------------------------------------------------
# predicates and identities


def is_complex(input: Any) -> bool:
    """True if ``input``'s dtype is complex (complex64, complex128)."""
    return input.is_complex()


def is_nonzero(input: Any) -> bool:
    """True if the single element of a one-element tensor is nonzero."""
    return input.is_nonzero()


def is_same_size(input: Any, other: Any) -> bool:
    """True if ``input`` and ``other`` have the same shape."""
    return input.is_same_size(other)


def is_signed(input: Any) -> bool:
    """True if ``input``'s dtype is signed (every dtype but uint8 and bool)."""
    return input.is_signed()


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage (``x.storage()``, ``x.untyped_storage()``)."""
    return getattr(type(obj), "_ember_storage", False) is True


def is_inference(input: Any) -> bool:
    """True if ``input`` was made under ``torch.inference_mode``."""
    return input.is_inference()


def typename(obj: Any) -> str:
    """``'torch.FloatTensor'`` for a float32 tensor, else the object's qualified type name."""
    if isinstance(obj, TensorBase):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def detach(input: Any) -> Any:
    """``input.detach()``: the same values, cut from the graph."""
    return input.detach()


def get_device(input: Any) -> int:
    """The CUDA device index of ``input``, -1 on the CPU."""
    return input.get_device()


# ---------------------------------------------------------------------------------------------
# grids and combinations


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
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Any:
    """``itertools.combinations`` of a 1-D tensor's elements, as rows of an ``(n, r)`` tensor."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    n = input.shape[0]
    fn = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(fn(range(n), r)), dtype=np.int64).reshape(-1, r)
    if r == 0 or idx.size == 0:
        return input.new_empty((0,) if r == 0 else (0, r))
    return stack([input[tensor(idx[:, j], device=input.device)] for j in range(r)], dim=1)


def block_diag(*tensors: Any) -> Any:
    """A block-diagonal matrix from 0-, 1- or 2-D tensors."""
    mats = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    for t in mats:
        if t.dim() != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input has {t.dim()} dimensions")
    if not mats:
        return tensor(np.zeros((1, 0), np.float32))
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
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    xx = x if x.is_floating_point() or x.is_complex() else x.to(_dtype.int64)
    powers = [xx ** p if p else xx.new_ones(xx.shape) for p in range(n)]
    if not increasing:
        powers = powers[::-1]
    if not powers:
        return xx.new_empty((x.shape[0], 0))
    return stack(powers, dim=1)


# ---------------------------------------------------------------------------------------------
# distances and differences


def cdist(x1: Any, x2: Any, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Any:
    """p-norm distances between each row of ``x1`` (..., P, M) and each row of ``x2`` (..., R, M)."""
    if _amp.active:
        x1, x2 = _amp_cast("cdist", x1, x2)
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, "
                           f"X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{t.dtype} (convert first, e.g. x.float())")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode (choose from "
                         f"{', '.join(repr(m) for m in _CDIST_MODES)})")
    # PyTorch's rule: the matrix-product form for p=2 when asked, or by default when either
    # side has more than 25 rows; otherwise the distances of each pair, block by block
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
            compute_mode == "use_mm_for_euclid_dist_if_necessary"
            and (x1.shape[-2] > 25 or x2.shape[-2] > 25))):
        return _distance.EuclideanDist.apply(x1, x2)
    return _distance.Cdist.apply(x1, x2, builtins.float(p))


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def dist(input: Any, other: Any, p: float = 2) -> Any:
    """The p-norm of ``input - other`` (broadcast), a 0-d tensor."""
    if _amp.active:
        input, other = _amp_cast("dist", input, other)
    d = (input - other).reshape(-1)
    return _pnorm_last(d, builtins.float(p))


def diff(input: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None,
         *, out: Any = None) -> Any:
    """n-th forward difference along ``dim``; ``prepend``/``append`` are joined first."""
    if out is not None:
        return _out.write(out, diff(input, n=n, dim=dim, prepend=prepend, append=append), "diff")
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


def trapezoid(y: Any, x: Any = None, *, dx: float = 1, dim: int = -1) -> Any:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule (spacing ``x`` or ``dx``)."""
    _check_dx("trapezoid", x, dx)
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim) * 0
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if x is None:
        return mid.sum(dim) * dx
    x = _as(x)
    if x.dim() == 1:
        dxs = diff(x)
        shape = [1] * y.dim()
        shape[dim] = n - 1
        return (mid * dxs.reshape(shape)).sum(dim)
    return (mid * diff(x, dim=dim)).sum(dim)


def trapz(y: Any, x: Any = None, *, dx: float = 1, dim: int = -1) -> Any:
    """``trapezoid`` under its older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: float = 1, dim: int = -1) -> Any:
    """Running trapezoidal integral of ``y`` along ``dim`` (one element shorter)."""
    _check_dx("cumulative_trapezoid", x, dx)
    n = y.shape[dim]
    mid = (y.narrow(dim, 1, builtins.max(n - 1, 0)) + y.narrow(dim, 0, builtins.max(n - 1, 0))) / 2
    if x is None:
        return (mid * dx).cumsum(dim)
    x = _as(x)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim] = n - 1
        return (mid * diff(x).reshape(shape)).cumsum(dim)
    return (mid * diff(x, dim=dim)).cumsum(dim)


def _pnorm_last(d: Any, p: float) -> Any:
    """The p-norm over the last dim, with gradient 0 where the norm is 0 (PyTorch's choice)."""
    a = d.abs()
    if p == 0:
        return (a != 0).to(d.dtype).sum(-1) + (d * 0).sum(-1)
    if p == math.inf:
        return a.amax(-1)
    if p == 1:
        return a.sum(-1)
    s = (a ** p).sum(-1)
    safe = _pp.where(s > 0, s, s.new_ones(()))
    return _pp.where(s > 0, safe ** (1.0 / p), s * 0)


# ---------------------------------------------------------------------------------------------
# order statistics


def quantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Any = None) -> Any:
    """The ``q``-quantiles of ``input`` (over all elements, or along ``dim``); ``q`` is a float or
    a 1-D tensor, whose values come first in the result's shape. A NaN in a slice gives NaN."""
    if out is not None:
        res = quantile(input, q=q, dim=dim, keepdim=keepdim, interpolation=interpolation)
        return _out.write(out, res, "quantile")
    if _amp.active:
        (input,) = _amp_cast("quantile", input)
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False, name="quantile")


def nanquantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Any = None) -> Any:
    """``quantile`` that ignores NaNs (an all-NaN slice gives NaN)."""
    if out is not None:
        res = nanquantile(input, q=q, dim=dim, keepdim=keepdim, interpolation=interpolation)
        return _out.write(out, res, "nanquantile")
    if _amp.active:
        (input,) = _amp_cast("nanquantile", input)
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True, name="nanquantile")


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False,
              out: Any = None) -> Any:
    """The index of the bucket each value falls in, given sorted 1-D ``boundaries``."""
    if out is not None:
        res = bucketize(input, boundaries=boundaries, out_int32=out_int32, right=right)
        return _out.write(out, res, "bucketize")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    scalar = not isinstance(input, TensorBase)
    x = tensor(input) if scalar else input
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
    return tuple(tensor(c.astype(np.int64), device=idx.device) for c in coords)


def isin(elements: Any = None, test_elements: Any = None, *, assume_unique: bool = False,
         invert: bool = False, out: Any = None, element: Any = None,
         test_element: Any = None) -> Any:
    """Whether each element of ``elements`` is in ``test_elements`` (a bool tensor).

    PyTorch's overloads name a number ``element`` or ``test_element`` (``isin(element=2,
    test_elements=t)``, ``isin(t, test_element=2)``); two numbers are refused, as in PyTorch."""
    if element is not None or test_element is not None:
        elements, test_elements = _isin_args(elements, test_elements, element, test_element)
    elif elements is None or test_elements is None:
        raise TypeError("isin() missing required argument: "
                        f"'{'elements' if elements is None else 'test_elements'}'")
    if out is not None:
        res = isin(elements, test_elements=test_elements, assume_unique=assume_unique, invert=invert)
        return _out.write(out, res, "isin")
    a = _as(elements)
    b = _as(test_elements)
    for t in (a, b):
        if t.is_complex():
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{_dtype.legacy_name(t.dtype)} (complex numbers are not supported)")
    xp = np
    res = xp.isin(a.detach().cpu().numpy(), b.detach().cpu().numpy(), invert=invert)
    return tensor(res, device=a.device)


def gcd(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise greatest common divisor of integer tensors."""
    if out is not None:
        return _out.write(out, gcd(input, other=other), "gcd")
    return _int_binary("gcd", np.gcd, input, other)


def lcm(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise least common multiple of integer tensors."""
    if out is not None:
        return _out.write(out, lcm(input, other=other), "lcm")
    return _int_binary("lcm", np.lcm, input, other)


def _quantile(input: Any, q: Any, dim: Any, keepdim: bool, interpolation: str,
              ignore_nan: bool, name: str) -> Any:
    if not input.is_floating_point():
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype, got "
                           f"{input.dtype}; convert it first, e.g. x.float()")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, TensorBase)
    qt = tensor(q, dtype=input.dtype) if scalar_q else q
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
    nan_count = _cmp.isnan(x).sum(-1, keepdim=True)
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
            lo = hi = _pp.round(rank)
        lo_v = gather(srt, -1, lo.to(_dtype.int64))
        hi_v = gather(srt, -1, hi.to(_dtype.int64))
        if interpolation == "midpoint":
            val = lo_v + (hi_v - lo_v) * 0.5
        elif interpolation == "linear":
            val = lo_v + (hi_v - lo_v) * (rank - lo)
        else:
            val = lo_v
        bad = (valid == 0) if ignore_nan else (nan_count > 0)
        val = _pp.where(bad, val.new_full((), math.nan), val)
        outs.append(val)
    res = stack(outs, 0)  # (Q, ..., 1)
    if dim is None:
        res = res.reshape(res.shape[0], *([1] * input.dim())) if keepdim else res.reshape(-1)
    else:
        res = res.movedim(-1, dim + 1 if dim >= 0 else dim)
        if not keepdim:
            res = res.squeeze(dim + 1 if dim >= 0 else dim)
    return res[0] if scalar_q else res


def _int_binary(name: str, fn: Any, a: Any, b: Any) -> Any:
    a, b = _as(a), _as(b)
    dt = _dtype.result_type(a, b)
    if dt.is_floating_point or dt.name == "bool":
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{dt.name.capitalize()}': "
                           f"{name} needs integer tensors")
    res = fn(a.detach().cpu().numpy(), b.detach().cpu().numpy()).astype(dt.np)
    return tensor(res, device=a.device)


# ---------------------------------------------------------------------------------------------
# statistics


def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
    """Covariance of the rows of ``input`` (variables) over its columns (observations); complex
    rows: sum (x - mean)(x - mean)^H / norm. Integer ``fweights`` and floating ``aweights`` (1-D,
    one per observation, non-negative) keep their dtypes, as PyTorch's: the result is promoted
    with them (float32 data, float64 aweights: float64) and the norm is computed in theirs."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(_dtype.get_default_dtype())
    n = x.shape[1]
    fw = _cov_weights(fweights, "fweights", n)
    aw = _cov_weights(aweights, "aweights", n)
    w = fw if aw is None else aw if fw is None else fw * aw
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = n - correction
        bad = norm <= 0
    else:
        wsum = w.sum()
        if not bool(wsum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized (all fweights "
                               "or aweights are 0)")
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aw is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aw).sum() / wsum
        bad = not bool(norm > 0)
    if bad:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the number of observations (correction={correction}).",
                      UserWarning, stacklevel=3)  # (past the NumPy-names wrapper)
        norm = norm * 0
    xc = x - avg
    c = (xc if w is None else xc * w) @ (xc.mH if x.is_complex() else xc.t())
    return (c / norm).squeeze()


def corrcoef(input: Any) -> Any:
    """Pearson correlation coefficients of the rows of ``input`` (clipped to [-1, 1])."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    sd = d.sqrt()
    c = c / sd.unsqueeze(1) / sd.unsqueeze(0)
    if c.is_complex():  # each part clipped, as PyTorch
        return _pc.complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


def logcumsumexp(input: Any, dim: int, *, out: Any = None) -> Any:
    """``log(cumsum(exp(input)))`` along ``dim``, computed stably (shift by the running max)."""
    if out is not None:
        return _out.write(out, logcumsumexp(input, dim=dim), "logcumsumexp")
    if input.dim() == 0:
        return input * 1
    if input.is_complex():
        return _logcumsumexp_complex(input, dim)
    m = input.detach().amax(dim, keepdim=True)
    m = _pp.where(_cmp.isfinite(m), m, m.new_zeros(()))
    return (input - m).exp().cumsum(dim).log() + m


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``other - alpha * input``."""
    return _pw._rsub(input, other, alpha)


def _check_dx(name: str, x: Any, dx: Any) -> None:
    if x is not None and dx != 1:
        raise TypeError(f"{name}(): pass the sample points x or the spacing dx=, not both")
    if x is None and not isinstance(dx, (int, float)):
        raise TypeError(f"{name}(): argument 'dx' must be a number, not {type(dx).__name__}")


def _isin_args(elements: Any, test_elements: Any, element: Any, test_element: Any) -> tuple:
    """``isin``'s overloads: (elements, test_element) or (element, test_elements)."""
    if element is not None and elements is not None:
        raise TypeError("isin() got both elements and element=")
    if test_element is not None and test_elements is not None:
        raise TypeError("isin() got both test_elements and test_element=")
    for name, v in (("element", element), ("test_element", test_element)):
        if isinstance(v, TensorBase) and v.numel() != 1:
            raise TypeError(f"isin(): argument '{name}' must be a number, not a tensor of shape "
                            f"{list(v.shape)}; pass a tensor as '{name}s'")
    elements = element if element is not None else elements
    test_elements = test_element if test_element is not None else test_elements
    if elements is None or test_elements is None:
        raise TypeError("isin() needs the elements and the test elements")
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        raise TypeError("isin(): element and test_element cannot both be numbers (PyTorch has "
                        "no such overload); pass one of them as a tensor")
    return elements, test_elements


def _logcumsumexp_complex(x: Any, dim: int) -> Any:
    """logcumsumexp of complex numbers as PyTorch accumulates it: each step adds the next element
    as ``hi + log1p(exp(lo - hi))``, hi the one with the larger real part, so the imaginary parts
    carry on unwrapped (not the principal log of the sum). A loop over ``dim``: complex
    logcumsumexp is rare."""
    parts = x.unbind(dim)
    acc = parts[0].clone()
    outs = [acc]
    for b in parts[1:]:
        a_hi = acc.real.detach() >= b.real.detach()
        hi, lo = _pp.where(a_hi, acc, b), _pp.where(a_hi, b, acc)
        acc = hi + (lo - hi).exp().log1p()
        outs.append(acc)
    return stack(outs, dim)


def _cov_weights(w: Any, name: str, n: int) -> Any:
    """cov's ``fweights``/``aweights`` checked as PyTorch checks them (at most 1-D, integral /
    floating, one per observation, non-negative), or None."""
    if w is None:
        return None
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.dim()} dimensions")
    integral = name == "fweights"
    if (w._data.dtype.kind in "iu") if integral else w.is_floating_point():
        pass
    else:
        raise RuntimeError(
            f"cov(): expected {name} to have {'integral' if integral else 'floating point'} "
            f"dtype but got {name} with {_dtype.legacy_name(w.dtype)} dtype (convert it, e.g. "
            f"{name}.{'long' if integral else 'float'}())")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if w.numel() and bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


# ---------------------------------------------------------------------------------------------
# window functions


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, pin_memory: bool = False,
                requires_grad: bool = False) -> Any:
    """Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))``."""
    return _window("hann_window", window_length, periodic, _cosine_sum((0.5, 0.5)), dtype,
                   device=device, requires_grad=requires_grad, pin_memory=pin_memory)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Any:
    """Hamming window ``alpha - beta cos(2 pi k / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, _cosine_sum((alpha, beta)), dtype,
                   device=device, requires_grad=requires_grad, pin_memory=pin_memory)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Any:
    """Blackman window ``0.42 - 0.5 cos(2 pi k/(N-1)) + 0.08 cos(4 pi k/(N-1))``."""
    return _window("blackman_window", window_length, periodic, _cosine_sum((0.42, 0.5, 0.08)),
                   dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Any:
    """Bartlett (triangular) window ``1 - |2k/(N-1) - 1|``."""
    def fn(m: int) -> Any:
        k = np.arange(m, dtype=np.float64)
        return 1 - np.abs(2 * k / (m - 1) - 1)
    return _window("bartlett_window", window_length, periodic, fn, dtype, device=device,
                   requires_grad=requires_grad, pin_memory=pin_memory)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """Kaiser window ``I0(beta sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)``."""
    def fn(m: int) -> Any:
        k = np.arange(m, dtype=np.float64)
        return np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, fn, dtype, device=device,
                   requires_grad=requires_grad, pin_memory=pin_memory)


def _window(name: str, n: int, periodic: bool, fn: Any, dtype: Any, **kw: Any) -> Any:
    dt = _dtype.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n == 0:
        return tensor(np.zeros(0, np.float64), dtype=dt, **kw)
    if n == 1:
        return tensor(np.ones(1, np.float64), dtype=dt, **kw)
    m = n + 1 if periodic else n
    w = fn(m)[:n]
    return tensor(w, dtype=dt, **kw)


def _cosine_sum(coeffs: tuple) -> Any:
    def fn(m: int) -> Any:
        k = np.arange(m, dtype=np.float64)
        return builtins.sum(((-1) ** i) * c * np.cos(2 * np.pi * i * k / (m - 1))
                            for i, c in enumerate(coeffs))
    return fn


# ---------------------------------------------------------------------------------------------
# histograms, buffers, elementwise extras


def histogram(input: Any, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
              density: bool = False, out: Any = None) -> Any:
    """``(hist, bin_edges)`` of a float tensor; ``bins`` is a count or a 1-D tensor of edges."""
    if out is not None:
        res = histogram(input, bins=bins, range=range, weight=weight, density=density)
        return _out.write(out, res, "histogram")
    _refuse_complex("histogram", input)  # (NotImplementedError, as PyTorch's)
    if not input.is_floating_point():
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same "
                           f"floating dtype, got {input.dtype}; convert it first, e.g. x.float()")
    x = input.detach().cpu().numpy().reshape(-1)
    w = None if weight is None else weight.detach().cpu().numpy().reshape(-1)
    b = bins.detach().cpu().numpy() if isinstance(bins, TensorBase) else builtins.int(bins)
    rng = None
    if range is not None:
        rng = (builtins.float(range[0]), builtins.float(range[1]))
    elif not isinstance(b, np.ndarray) and x.size == 0:
        rng = (0.0, 0.0)
    hist, edges = np.histogram(x, bins=b, range=rng, weights=w, density=density)
    np_dt = input._data.dtype
    return return_types.histogram(tensor(hist.astype(np_dt), device=input.device),
              tensor(edges.astype(np_dt), device=input.device))


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Any:
    """A 1-D tensor sharing memory with a Python buffer object (``bytearray``, ``array``...)."""
    arr = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    if not arr.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors.", UserWarning, stacklevel=2)
    t = TensorBase._make(arr)
    return t.requires_grad_(requires_grad) if requires_grad else t


def renorm(input: Any, p: float, dim: int, maxnorm: float, *, out: Any = None) -> Any:
    """Rescale each slice along ``dim`` whose p-norm exceeds ``maxnorm`` down to ``maxnorm``."""
    if out is not None:
        return _out.write(out, renorm(input, p=p, dim=dim, maxnorm=maxnorm), "renorm")
    if _amp.active:
        (input,) = _amp_cast("renorm", input)
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = dim % input.dim()
    others = [i for i in builtins.range(input.dim()) if i != d]
    norms = input.norm(p, dim=others, keepdim=True)
    factor = _pp.where(norms > maxnorm, maxnorm / (norms + 1e-7), norms.new_ones(()))
    return input * factor


def ldexp(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input * 2 ** other``."""
    if out is not None:
        return _out.write(out, ldexp(input, other=other), "ldexp")
    x = _as(input)
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(_dtype.get_default_dtype())
    return x * (2.0 ** _as(other).to(x.real.dtype if x.is_complex() else x.dtype))


def frexp(input: Any, *, out: Any = None) -> Any:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, |mantissa| in [0.5, 1)."""
    if out is not None:
        return _out.write(out, frexp(input), "frexp")
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, ex = np.frexp(_backend.to_numpy(input._data))
    return return_types.frexp(tensor(m.astype(input._data.dtype), device=input.device),
              tensor(ex.astype(np.int32), device=input.device))


def nextafter(input: Any, other: Any, *, out: Any = None) -> Any:
    """The next float after ``input`` towards ``other``."""
    if out is not None:
        return _out.write(out, nextafter(input, other=other), "nextafter")
    a, b = _as(input), _as(other)
    _refuse_complex("nextafter", a, b)
    dt = _dtype.result_type(a, b)
    res = np.nextafter(a.detach().cpu().numpy().astype(dt.np),
                       b.detach().cpu().numpy().astype(dt.np))
    return tensor(res, device=a.device)


def bitwise_left_shift(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input << other`` elementwise, for integer tensors."""
    if out is not None:
        return _out.write(out, bitwise_left_shift(input, other=other), "bitwise_left_shift")
    return _shift("lshift", np.left_shift, input, other)


def bitwise_right_shift(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input >> other`` elementwise (arithmetic shift), for integer tensors."""
    if out is not None:
        return _out.write(out, bitwise_right_shift(input, other=other), "bitwise_right_shift")
    return _shift("rshift", np.right_shift, input, other)


def _shift(name: str, fn: Any, a: Any, b: Any) -> Any:
    a, b = _as(a), _as(b)
    dt = _dtype.result_type(a, b)
    if dt.is_floating_point or dt.name == "bool":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                  f"'{_dtype.legacy_name(dt)}': shifts need integer tensors")
    x = a.detach().cpu().numpy().astype(dt.np)
    y = b.detach().cpu().numpy().astype(dt.np)
    return tensor(fn(x, y).astype(dt.np), device=a.device)


def _as(x: Any) -> Any:
    return x if isinstance(x, TensorBase) else tensor(x)
