"""``assert_close``: PyTorch's comparison of tensors, arrays, numbers and containers of them.

Decisions, default tolerances and messages follow ``torch.testing.assert_close`` (2.13): a value
``a`` is close to ``e`` when ``a == e`` or ``|a - e| <= atol + rtol * |e|`` (NaNs equal only with
``equal_nan=True``); the tolerances default by dtype (``float32``: rtol 1.3e-6, atol 1e-5;
``float64``: 1e-7 and 1e-7; ``float16``: 1e-3 and 1e-5; ``bfloat16``: 1.6e-2 and 1e-5; integers and
bools: exact). Differences are computed in the compared dtype, as PyTorch computes them, so the
numbers in the messages match its messages.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._tensor import Tensor

__all__ = ["assert_close", "assert_allclose"]

# dtype name -> (rtol, atol)
_DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise and its message (before ``msg``)."""

    def __init__(self, kind: type[Exception], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message



def _dtype_name(dt: Any) -> str:
    """'float32' for an ember dtype or a NumPy dtype."""
    name = getattr(dt, "name", None) or str(dt)
    return str(name).removeprefix("torch.")


def _default_tolerances(*dtypes: Any) -> tuple[float, float]:
    rtols, atols = zip(*(_DEFAULT_TOLERANCES.get(_dtype_name(d), (0.0, 0.0)) for d in dtypes))
    return max(rtols), max(atols)


def _fmt_tol(x: Any) -> str:
    return repr(x) if not isinstance(x, np.generic) else repr(x.item())


# --- tensor-likes -------------------------------------------------------------------------------


def _shown_dtype(x: Any) -> str:
    """How PyTorch names the dtype of a tensor or an array in attribute messages."""
    if isinstance(x, Tensor):
        return str(x.dtype)
    try:
        from .. import _dtype

        return str(_dtype.from_numpy(x.dtype))
    except (TypeError, KeyError):
        return f"torch.{x.dtype}"


def _as_numpy(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _compare_tensors(actual: Any, expected: Any, rtol: float | None, atol: float | None,
                     equal_nan: bool, check_device: bool, check_dtype: bool, check_stride: bool) -> None:
    is_tensor = isinstance(actual, Tensor)
    a_shape, e_shape = tuple(actual.shape), tuple(expected.shape)
    if a_shape != e_shape:
        raise _Mismatch(AssertionError,
                        f"The values for attribute 'shape' do not match: torch.Size({list(a_shape)}) "
                        f"!= torch.Size({list(e_shape)}).")
    if is_tensor and check_device and actual.device != expected.device:
        raise _Mismatch(AssertionError, f"The values for attribute 'device' do not match: "
                                        f"{actual.device} != {expected.device}.")
    a_dt, e_dt = _shown_dtype(actual), _shown_dtype(expected)
    if check_dtype and a_dt != e_dt:
        raise _Mismatch(AssertionError,
                        f"The values for attribute 'dtype' do not match: {a_dt} != {e_dt}.")
    if check_stride:
        a_st = actual.stride() if is_tensor else tuple(s // actual.itemsize for s in actual.strides)
        e_st = (expected.stride() if is_tensor
                else tuple(s // expected.itemsize for s in expected.strides))
        if tuple(a_st) != tuple(e_st):
            raise _Mismatch(AssertionError, f"The values for attribute 'stride()' do not match: "
                                            f"{tuple(a_st)} != {tuple(e_st)}.")
    a, e = _as_numpy(actual), _as_numpy(expected)
    if rtol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    if a.dtype != e.dtype:  # check_dtype=False: compare in the promoted dtype
        if is_tensor:
            from .._dtype import promote_types

            common = promote_types(actual.dtype, expected.dtype).np
        else:
            common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    if a.ndim == 0:
        _compare_scalar_tensor(a, e, rtol, atol, equal_nan)
        return
    mismatch = ~_isclose(a, e, rtol, atol, equal_nan)
    if not mismatch.any():
        return
    raise _Mismatch(AssertionError, _tensor_message(a, e, mismatch, rtol, atol))


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        if rtol == 0 and atol == 0:
            return a == e
        a, e = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = a == e
        if equal_nan:
            close |= np.isnan(a) & np.isnan(e)
        finite = np.isfinite(a) & np.isfinite(e)
        diff = np.abs(a - e)
        bound = atol + rtol * np.abs(e)
        close |= finite & (diff <= bound)
    return close


def _diffs(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Absolute and relative differences, in the dtype PyTorch computes them in."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
            ai, ei = a.astype(np.int64), e.astype(np.int64)
            abs_diff = np.abs(ai - ei)
            rel = abs_diff.astype(np.float32) / np.abs(ei).astype(np.float32)
            return abs_diff, rel
        abs_diff = np.abs(a - e)
        rel = abs_diff / np.abs(e)
        return abs_diff, rel


def _tensor_message(a: np.ndarray, e: np.ndarray, mismatch: np.ndarray, rtol: float,
                    atol: float) -> str:
    equal = rtol == 0 and atol == 0
    abs_diff, rel_diff = _diffs(a, e)
    n, total = int(mismatch.sum()), mismatch.size
    lines = [f"Tensor-likes are not {'equal' if equal else 'close'}!", "",
             f"Mismatched elements: {n} / {total} ({n / total:.1%})"]
    for label, diff, tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        masked = np.where(mismatch, diff, np.zeros((), diff.dtype))
        flat = int(np.argmax(masked))  # NaN counts as the greatest, as in PyTorch
        where = tuple(int(i) for i in np.unravel_index(flat, masked.shape))
        value = masked.reshape(-1)[flat].item()
        line = f"Greatest {label} difference: {value} at index {where}"
        if not equal:
            line += f" (up to {_fmt_tol(tol)} allowed)"
        lines.append(line)
    return "\n".join(lines)


def _compare_scalar_tensor(a: np.ndarray, e: np.ndarray, rtol: float, atol: float,
                           equal_nan: bool) -> None:
    if bool(_isclose(a, e, rtol, atol, equal_nan)):
        return
    av, ev = a.item(), e.item()
    raise _Mismatch(AssertionError, _scalar_message(av, ev, rtol, atol))


# --- numbers ------------------------------------------------------------------------------------


def _number_kind(x: Any) -> type | None:
    """bool, int, float or complex for Python and NumPy numbers; None for anything else."""
    if isinstance(x, (bool, np.bool_)):
        return bool
    if isinstance(x, numbers.Integral):
        return int
    if isinstance(x, numbers.Real):
        return float
    if isinstance(x, numbers.Complex):
        return complex
    return None


def _scalar_message(av: Any, ev: Any, rtol: float, atol: float) -> str:
    equal = rtol == 0 and atol == 0
    an = int(av) if isinstance(av, bool) else av
    en = int(ev) if isinstance(ev, bool) else ev
    abs_diff = abs(an - en)
    if abs_diff != abs_diff:
        rel: Any = float("nan")
    elif en == 0:
        rel = float("inf") if abs_diff != 0 else float("nan")
    else:
        rel = abs_diff / abs(en)
    tail_abs = "" if equal else f" (up to {_fmt_tol(atol)} allowed)"
    tail_rel = "" if equal else f" (up to {_fmt_tol(rtol)} allowed)"
    return (f"Scalars are not {'equal' if equal else 'close'}!\n\n"
            f"Expected {ev} but got {av}.\n"
            f"Absolute difference: {abs_diff}{tail_abs}\n"
            f"Relative difference: {rel}{tail_rel}")


def _compare_numbers(actual: Any, expected: Any, kinds: tuple[type, type], rtol: float | None,
                     atol: float | None, equal_nan: bool, check_dtype: bool) -> None:
    ka, ke = kinds
    if ka is bool and ke is bool:
        if bool(actual) != bool(expected):
            raise _Mismatch(AssertionError,
                            f"Booleans mismatch: {bool(actual)} is not {bool(expected)}")
        return
    if check_dtype and ka is not ke:
        raise _Mismatch(AssertionError, f"The (d)types do not match: {ka} != {ke}.")
    av, ev = ka(actual), ke(expected)
    if rtol is None:
        names = {int: "int64", bool: "bool", float: "float64", complex: "complex128"}
        rtol, atol = _default_tolerances(names[ka], names[ke])
    if av == ev:
        return
    both_nan = av != av and ev != ev
    if both_nan and equal_nan:
        return
    if not both_nan and all(np.isfinite(complex(v)) for v in (av, ev)):
        if abs(av - ev) <= atol + rtol * abs(ev):
            return
    raise _Mismatch(AssertionError, _scalar_message(av, ev, rtol, atol))


# --- containers ---------------------------------------------------------------------------------


def _is_tensor_like(x: Any) -> bool:
    return isinstance(x, (Tensor, np.ndarray))


def _compare(actual: Any, expected: Any, path: str, opts: dict) -> None:
    try:
        _compare_one(actual, expected, opts)
    except _Mismatch as m:
        if path:
            m.message += f"\n\nThe failure occurred for item {path}"
        raise m from None
    except _Descend as d:
        for key, a, e in d.items:
            _compare(a, e, f"{path}[{key!r}]", opts)


class _Descend(Exception):  # noqa: N818 - control flow, not an error
    """Raised by ``_compare_one`` for containers: compare these (key, actual, expected) next."""

    def __init__(self, items: list[tuple[Any, Any, Any]]) -> None:
        super().__init__()
        self.items = items


def _no_pair(actual: Any, expected: Any) -> _Mismatch:
    return _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                                f"{type(actual)} and {type(expected)}.")


def _compare_one(actual: Any, expected: Any, opts: dict) -> None:
    if actual is None or expected is None:
        if actual is not expected:
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
        return
    if _is_tensor_like(actual) or _is_tensor_like(expected):
        same = ((isinstance(actual, Tensor) and isinstance(expected, Tensor))
                or (isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)))
        if not same:
            raise _no_pair(actual, expected)
        _compare_tensors(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"],
                         opts["check_device"], opts["check_dtype"], opts["check_stride"])
        return
    ka, ke = _number_kind(actual), _number_kind(expected)
    if ka is not None and ke is not None:
        _compare_numbers(actual, expected, (ka, ke), opts["rtol"], opts["atol"],
                         opts["equal_nan"], opts["check_dtype"])
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        ak, ek = set(actual.keys()), set(expected.keys())
        if ak != ek:
            missing = sorted(ek - ak, key=repr)
            extra = sorted(ak - ek, key=repr)
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {missing}\n"
                                            f"Additional keys in the actual mapping: {extra}")
        keys = list(actual.keys())
        try:
            keys = sorted(keys)
        except TypeError:
            pass
        raise _Descend([(k, actual[k], expected[k]) for k in keys])
    if (isinstance(actual, Sequence) and isinstance(expected, Sequence)
            and not isinstance(actual, (str, bytes)) and not isinstance(expected, (str, bytes))):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}")
        raise _Descend([(i, a, e) for i, (a, e) in enumerate(zip(actual, expected))])
    raise _no_pair(actual, expected)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close.

    Args:
        actual, expected: tensors, NumPy arrays, Python/NumPy numbers, ``None``, or sequences and
            mappings of these (compared element by element; the failing item is named).
        rtol, atol: relative and absolute tolerance; give both or neither (defaults by dtype).
        equal_nan: NaN compares equal to NaN.
        check_device, check_dtype, check_stride: compare these attributes too (with
            ``check_dtype=False`` values are compared in the promoted dtype).
        check_layout, allow_subclasses: accepted (ember tensors are all strided).
        msg: a message that replaces the generated one, or a callable that receives the
            generated message and returns the one to raise.

    Raises:
        AssertionError: values, shapes, dtypes, devices, lengths or keys differ.
        TypeError: the inputs cannot be compared (e.g. a tensor and a NumPy array).
        ValueError: only one of ``rtol``/``atol`` was given.
    """
    __tracebackhide__ = True
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    opts = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_device": check_device,
            "check_dtype": check_dtype, "check_stride": check_stride}
    try:
        _compare(actual, expected, "", opts)
    except _Mismatch as m:
        text = m.message
        if m.kind is AssertionError and msg is not None:
            text = msg(text) if callable(msg) else msg
        raise m.kind(text) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated ``torch.testing.assert_allclose``: ``assert_close`` without dtype checks."""
    import warnings

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead.",
                  FutureWarning, stacklevel=2)
    import ember

    if not isinstance(actual, Tensor):
        actual = ember.as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = ember.as_tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:  # the legacy function's own table (bfloat16 is exact)
        legacy = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [legacy.get(_dtype_name(t.dtype), (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
