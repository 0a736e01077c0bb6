"""What the namespace says about numbers and tensor types, below the tensor: the constants
``pi``/``e``/``inf``/``nan``/``newaxis``, ``finfo``/``iinfo`` (a dtype's machine limits), and the
memory-format and layout tags (``torch.channels_last``, ``torch.strided``; ember arrays are
always strided, so these are tags only). Backend layer: imports NumPy and ``_dtype`` only; the
dtypes themselves, promotion and the default dtype are in ``_dtype.py``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from . import _dtype
from ._dtype import get_default_dtype

__all__ = [
    "pi", "e", "inf", "nan", "newaxis", "finfo", "iinfo", "memory_format", "contiguous_format",
    "preserve_format", "channels_last", "channels_last_3d", "legacy_contiguous_format", "layout",
    "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged",
]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


# ---------------------------------------------------------------------------------------------
# numeric limits


class finfo:
    """Machine limits of a floating dtype: ``finfo(torch.float32).eps``."""

    def __init__(self, type: Any = None) -> None:  # noqa: A002 - PyTorch's name
        dt = get_default_dtype() if type is None else type
        if isinstance(dt, _dtype.dtype) and dt.is_complex:
            dt = dt.to_real()  # PyTorch's: finfo(complex64) is float32's
        if not isinstance(dt, _dtype.dtype) or not dt.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type, got {dt}; "
                            "use torch.iinfo for integer types")
        if dt.name in _FLOAT8_INFO:  # no NumPy type behind it yet: PyTorch's values
            (self.eps, self.max, self.min, self.tiny) = _FLOAT8_INFO[dt.name]
            self.bits, self.smallest_normal, self.resolution, self.dtype = 8, self.tiny, 1.0, dt.name
            return
        if dt.name == "float4_e2m1fn_x2":
            raise TypeError("torch.finfo() has no limits for torch.float4_e2m1fn_x2 (two values "
                            "packed in a byte), as in PyTorch")
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


# PyTorch's finfo of the float8 formats: eps, max, min, tiny (smallest_normal)
_FLOAT8_INFO = {
    "float8_e4m3fn": (0.125, 448.0, -448.0, 2.0**-6),
    "float8_e5m2": (0.25, 57344.0, -57344.0, 2.0**-14),
    "float8_e4m3fnuz": (0.125, 240.0, -240.0, 2.0**-7),
    "float8_e5m2fnuz": (0.125, 57344.0, -57344.0, 2.0**-15),
    "float8_e8m0fnu": (1.0, 2.0**127, 2.0**-127, 2.0**-127),
}


class iinfo:
    """Machine limits of an integer dtype: ``iinfo(torch.int64).max``."""

    def __init__(self, type: Any) -> None:  # noqa: A002 - PyTorch's name
        if (not isinstance(type, _dtype.dtype) or type.is_floating_point or type.is_complex
                or type.name == "bool"):
            raise TypeError(f"torch.iinfo() requires an integer input type, got {type}; "
                            "use torch.finfo for floating point types")
        info = np.iinfo(type.np)
        self.bits = builtins.int(info.bits)
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, dtype={self.dtype})"


# ---------------------------------------------------------------------------------------------
# memory formats and layouts (ember arrays are always strided; these are tags)


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
