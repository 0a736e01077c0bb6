"""dtype objects and type promotion (PyTorch's ``torch.result_type`` rules).

A ``dtype`` wraps a NumPy dtype. Promotion works by category (bool < integer < floating <
complex): a higher category always wins, Python scalars never upcast a tensor of their own
category, and within a category NumPy's rules apply (uint8 + int8 -> int16, float16 + bfloat16 ->
float32); a complex operand of a higher-priority group keeps a floating tensor's precision
(``float32_tensor * 1j`` is complex64, ``float64_tensor * 1j`` complex128).

``complex64``/``complex128`` (``cfloat``/``cdouble``) are NumPy's complex64/complex128.
``complex32`` (``chalf``) and the float8/float4 formats exist as objects only: libraries name them
in dtype tables at import, so they print, compare, pickle and promote as PyTorch's (float8
promotion is refused as in PyTorch), but NumPy has no such types and no tensor can hold them:
reading their NumPy type (which every path that makes a tensor does) raises ``TypeError`` naming
the dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOAT8 = 5  # dtype._category of the float8/float4 formats
_COMPLEX = 6  # and of the complex dtypes


def _load_bfloat16() -> Any:
    """NumPy's bfloat16 from ml_dtypes (the ``bf16`` extra: the core install is NumPy alone).
    Loaded on first use, not at ``import ember``: importing ml_dtypes takes a noticeable part
    of a second. Never substituted: without ml_dtypes, using bfloat16 raises rather than quietly
    giving another dtype."""
    try:
        import ml_dtypes
    except ImportError as e:
        raise RuntimeError(
            "torch.bfloat16 tensors need the package ml_dtypes (NumPy has no bfloat16), which is "
            "not installed: pip install 'ember[bf16]' (or pip install ml_dtypes)") from e
    return np.dtype(ml_dtypes.bfloat16)


class dtype:
    """A tensor element type, e.g. ``ember.float32``. Compare with ``==`` or ``is``."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_category",
                 "is_complex")

    def __init__(self, name: str, np_dtype: Any, category: int, itemsize: int = 2) -> None:
        self.name = name
        if np_dtype is not None:  # bfloat16's stays unset until first read (``__getattr__``)
            self.np = np_dtype
        # 0 bool, 1 integer, 2 floating; 5 float8/float4 (without tensors), 6 complex (the
        # numbers let promote_types and can_cast spot them with one test off the common path)
        self._category = category
        self.is_floating_point = category == 2 or category == _FLOAT8
        self.is_complex = category == _COMPLEX
        self.itemsize = np_dtype.itemsize if np_dtype is not None else itemsize
        self.is_signed = not name.startswith("uint") and name not in ("bool", "float8_e8m0fnu")

    def __getattr__(self, name: str) -> Any:
        # only reached while a slot is unset: bfloat16's NumPy dtype, loaded once, on first use;
        # the dtypes without tensors (complex32, float8, float4) refuse here, at any tensor's making
        if name == "np":
            if self.name == "bfloat16":
                self.np = _load_bfloat16()
                _FROM_NP[self.np] = self
                return self.np
            if self._category > 2:
                raise TypeError(_no_tensors(self))
        raise AttributeError(name)

    def __repr__(self) -> str:
        # PyTorch's spelling, so scripts that print or parse dtypes behave the same under ember.
        return f"torch.{self.name}"

    def __reduce__(self) -> tuple:
        return (_named if self in WITHOUT_TENSORS else to_dtype, (self.name,))

    def to_real(self) -> dtype:
        """The real dtype of a complex one (``complex64`` -> ``float32``); others unchanged."""
        return _REAL_OF.get(self.name, self)

    def to_complex(self) -> dtype:
        """The complex dtype of a floating one (``float32`` -> ``complex64``), as PyTorch's."""
        if self.is_complex:
            return self
        c = _COMPLEX_OF.get(self.name)
        if c is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {legacy_name(self)}")
        return c

    @property
    def is_bfloat16_available(self) -> bool:
        try:
            return bfloat16.np is not None
        except RuntimeError:
            return False


bool_ = dtype("bool", np.dtype(np.bool_), 0)
uint8 = dtype("uint8", np.dtype(np.uint8), 1)
int8 = dtype("int8", np.dtype(np.int8), 1)
int16 = dtype("int16", np.dtype(np.int16), 1)
int32 = dtype("int32", np.dtype(np.int32), 1)
int64 = dtype("int64", np.dtype(np.int64), 1)
float16 = dtype("float16", np.dtype(np.float16), 2)
bfloat16 = dtype("bfloat16", None, 2)
float32 = dtype("float32", np.dtype(np.float32), 2)
float64 = dtype("float64", np.dtype(np.float64), 2)
# PyTorch's "limited support" unsigned types: they hold values, cast, compare, index and
# concatenate; promotion with any other integer type is refused, as PyTorch refuses it.
uint16 = dtype("uint16", np.dtype(np.uint16), 1)
uint32 = dtype("uint32", np.dtype(np.uint32), 1)
uint64 = dtype("uint64", np.dtype(np.uint64), 1)
_WIDE_UNSIGNED = (uint16, uint32, uint64)

complex64 = dtype("complex64", np.dtype(np.complex64), _COMPLEX)
complex128 = dtype("complex128", np.dtype(np.complex128), _COMPLEX)
# Named, without tensors (the module docstring): libraries build dtype tables with them.
complex32 = dtype("complex32", None, _COMPLEX, 4)
float8_e4m3fn = dtype("float8_e4m3fn", None, _FLOAT8, 1)
float8_e5m2 = dtype("float8_e5m2", None, _FLOAT8, 1)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", None, _FLOAT8, 1)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", None, _FLOAT8, 1)
float8_e8m0fnu = dtype("float8_e8m0fnu", None, _FLOAT8, 1)
float4_e2m1fn_x2 = dtype("float4_e2m1fn_x2", None, _FLOAT8, 1)
WITHOUT_TENSORS = (complex32, float8_e4m3fn, float8_e5m2,
                   float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu,
                   float4_e2m1fn_x2)
_REAL_OF = {"complex32": float16, "complex64": float32, "complex128": float64}
_COMPLEX_OF = {"float16": complex32, "bfloat16": complex64, "float32": complex64,
               "float64": complex128}


def _named(name: str) -> dtype:
    """A dtype without tensors by name (what such a dtype pickles as)."""
    return next(d for d in WITHOUT_TENSORS if d.name == name)


def _no_tensors(d: dtype) -> str:
    if d.is_complex:
        return (f"{d!r}: ember has no complex32 tensors (NumPy has no half-precision complex "
                "type); the dtype exists so that code naming it runs. Use torch.complex64")
    return (f"{d!r}: ember has no tensors of this dtype yet; the dtype exists so that code naming "
            "it runs. Store the values as torch.float16, torch.bfloat16 or torch.float32")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
       uint16, uint32, uint64, complex64, complex128)

# PyTorch's aliases
ALIASES = {
    "float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
    "short": int16, "bool": bool_, "float32": float32, "float64": float64, "float16": float16,
    "bfloat16": bfloat16, "int64": int64, "int32": int32, "int16": int16, "int8": int8,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "cfloat": complex64, "cdouble": complex128, "chalf": complex32, "complex64": complex64,
    "complex128": complex128,
    **{d.name: d for d in WITHOUT_TENSORS},
}

_FROM_NP: dict[Any, dtype] = {d.np: d for d in ALL if d is not bfloat16}
_default_float = float32


def from_numpy(np_dtype: Any) -> dtype:
    """The ember dtype of a NumPy dtype; a clear error for types ember has no tensor for."""
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        pass
    np_dtype = np.dtype(np_dtype)
    if np_dtype.name == "bfloat16" and bfloat16.np == np_dtype:  # first bfloat16 array seen
        return bfloat16
    if np_dtype in _FROM_NP:
        return _FROM_NP[np_dtype]
    if np_dtype.kind == "c":
        raise TypeError(f"NumPy's {np_dtype}: ember has no tensors of this complex type; "
                        "convert the array to complex64 or complex128 first")
    raise TypeError(f"ember has no dtype for NumPy's {np_dtype}")


def to_dtype(d: Any) -> dtype:
    """Accepts an ember dtype, a NumPy dtype/type, a PyTorch-like name or Python's float/int/bool."""
    if type(d) is dtype:
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str):
        name = d.removeprefix("torch.").removeprefix("ember.")
        if name in ALIASES:
            return _require(ALIASES[name])
        raise TypeError(f"unknown dtype {d!r}")
    if hasattr(d, "name") and type(d).__name__ == "dtype" and type(d).__module__.startswith("torch"):
        return to_dtype(str(d))  # a real torch.dtype (interop)
    return _require(from_numpy(d))


def _require(d: dtype) -> dtype:
    d.np  # noqa: B018 - bfloat16's NumPy type loads here, or raises saying what is missing
    return d


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: Any) -> None:
    global _default_float
    d = to_dtype(d)
    if d._category != 2:  # float8/float4 too: PyTorch has no default tensor type of them
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """``torch.promote_types``: the smallest dtype both can be cast to, category first."""
    a, b = type1, type2
    if a is b:
        return a
    ca, cb = a._category, b._category
    if ca + cb > 4:  # a complex or float8/float4 dtype (categories 5, 6)
        return _promote_without_tensors(a, b)
    if ca != cb and (ca == 2 or cb == 2):
        return a if ca > cb else b
    if ca != cb and a not in _WIDE_UNSIGNED and b not in _WIDE_UNSIGNED:
        return a if ca > cb else b
    if ca == 2:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if a.itemsize >= b.itemsize else b
    if a in _WIDE_UNSIGNED or b in _WIDE_UNSIGNED:
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{legacy_name(a)} and {legacy_name(b)}. Cast one operand first, e.g. "
            "x.to(torch.int64).")
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _promote_without_tensors(a: dtype, b: dtype) -> dtype:
    """promote_types where one side is complex, float8 or float4: PyTorch's answers."""
    if a._category == _FLOAT8 or b._category == _FLOAT8:
        kind = "Float4" if "float4" in a.name + b.name else "Float8"
        raise RuntimeError(f"Promotion for {kind} Types is not supported, attempted to promote "
                           f"{legacy_name(a)} and {legacy_name(b)}")
    if a in _WIDE_UNSIGNED or b in _WIDE_UNSIGNED:
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{legacy_name(a)} and {legacy_name(b)}")
    if a.is_complex and b.is_complex:
        return a if a.itemsize >= b.itemsize else b
    c, other = (a, b) if a.is_complex else (b, a)
    if other._category == 2:  # complex of the promoted real parts: float64 + complex64 -> complex128
        return promote_types(c.to_real(), other).to_complex()
    return c


def scalar_dtype(x: Any) -> dtype:
    """The dtype a Python scalar takes when it becomes a tensor (float -> default float)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return _default_float
    if isinstance(x, complex):
        return _COMPLEX_OF[_default_float.name]  # complex64 (complex128 under float64 default)
    if isinstance(x, np.generic):
        return from_numpy(x.dtype)
    raise TypeError(f"expected a number, got {type(x).__name__}")


def result_type(*operands: Any) -> dtype:
    """``torch.result_type`` for tensors (dim > 0), 0-dim tensors and Python scalars.

    Each group is promoted on its own; a lower-priority group only counts when it is of a
    higher category (so ``float16_tensor * 2.5`` stays float16, ``int_tensor * 2.5`` is float32).
    """
    dim_r = zero_r = wrapped_r = None
    for x in operands:
        d = getattr(x, "_data", None)
        if d is not None:
            t = _FROM_NP.get(d.dtype) or from_numpy(d.dtype)
            if d.ndim:
                dim_r = t if dim_r is None else promote_types(dim_r, t)
            else:
                zero_r = t if zero_r is None else promote_types(zero_r, t)
        else:
            t = scalar_dtype(x)
            wrapped_r = t if wrapped_r is None else promote_types(wrapped_r, t)
    return _combine(dim_r, _combine(zero_r, wrapped_r))


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None or lower._category <= higher._category:
        return higher
    # the lower-priority group has a higher category: it decides the category
    if lower._category == 2 and higher._category < 2:
        return lower
    if lower._category == _COMPLEX:  # a floating tensor keeps its precision: f64 * 1j -> c128
        return higher.to_complex() if higher._category == 2 else lower
    return promote_types(higher, lower)


def can_cast(from_: dtype, to: dtype) -> bool:
    """``torch.can_cast``: casting that does not lower the category."""
    return from_._category <= to._category or (from_._category == _FLOAT8 and to._category == 2)


_LEGACY_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "complex32": "ComplexHalf",
    "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
    "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
    "float8_e8m0fnu": "Float8_e8m0fnu", "float4_e2m1fn_x2": "Float4_e2m1fn_x2",
}


def legacy_name(d: dtype) -> str:
    """PyTorch's legacy scalar-type name of ``d`` ("Float", "Long"...), as its errors spell it."""
    return _LEGACY_NAMES.get(d.name, d.name)


def from_legacy_type(name: str) -> dtype:
    """The dtype of a legacy tensor type name ("FloatTensor", "torch.cuda.LongTensor")."""
    short = name.split(".")[-1].removesuffix("Tensor")
    for key, legacy in _LEGACY_NAMES.items():
        if legacy == short:
            return to_dtype(key)
    raise ValueError(f"invalid type: {name!r}")
