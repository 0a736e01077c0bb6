"""PyTorch's named result tuples (``torch.return_types.*``): ``max(x, dim)`` returns
``return_types.max(values=..., indices=...)``, ``torch.linalg.slogdet`` a ``(sign, logabsdet)``...

One factory for every op that returns such a tuple (reductions, sorting, linear algebra), so they
print as PyTorch's, unpack as tuples, read by field name and pickle (each class is an attribute of
this module under its own name).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

__all__ = [
    "max", "min", "aminmax", "median", "nanmedian", "mode", "cummax", "cummin", "sort", "topk",
    "kthvalue", "histogram", "frexp", "slogdet", "qr", "svd",
]


def _return_type(name: str, fields: str) -> type:
    """A named tuple class ``name`` with ``fields``, printed as ``torch.return_types.<name>``."""

    def __repr__(self: Any) -> str:
        parts = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{name}(\n{parts})"

    cls = type(name, (namedtuple(name, fields),), {"__slots__": (), "__repr__": __repr__})
    cls.__module__ = __name__
    return cls


max = _return_type("max", "values indices")  # noqa: A001 - PyTorch's name
min = _return_type("min", "values indices")  # noqa: A001 - PyTorch's name
aminmax = _return_type("aminmax", "min max")
median = _return_type("median", "values indices")
nanmedian = _return_type("nanmedian", "values indices")
mode = _return_type("mode", "values indices")
cummax = _return_type("cummax", "values indices")
cummin = _return_type("cummin", "values indices")
sort = _return_type("sort", "values indices")
topk = _return_type("topk", "values indices")
kthvalue = _return_type("kthvalue", "values indices")
histogram = _return_type("histogram", "hist bin_edges")
frexp = _return_type("frexp", "mantissa exponent")
slogdet = _return_type("slogdet", "sign logabsdet")
qr = _return_type("qr", "Q R")
svd = _return_type("svd", "U S V")
