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
    "kthvalue", "histogram", "frexp", "slogdet", "qr", "svd", "linalg_qr", "linalg_svd",
    "linalg_eigh", "linalg_eig", "linalg_slogdet", "linalg_inv_ex", "linalg_cholesky_ex",
    "linalg_solve_ex",
    "linalg_lstsq", "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "lu_unpack",
    "triangular_solve", "_lu_with_info", "linalg_ldl_factor", "linalg_ldl_factor_ex",
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
linalg_qr = _return_type("linalg_qr", "Q R")
linalg_svd = _return_type("linalg_svd", "U S Vh")
linalg_eigh = _return_type("linalg_eigh", "eigenvalues eigenvectors")
linalg_eig = _return_type("linalg_eig", "eigenvalues eigenvectors")
linalg_slogdet = _return_type("linalg_slogdet", "sign logabsdet")
linalg_inv_ex = _return_type("linalg_inv_ex", "inverse info")
linalg_cholesky_ex = _return_type("linalg_cholesky_ex", "L info")
linalg_solve_ex = _return_type("linalg_solve_ex", "result info")
linalg_lstsq = _return_type("linalg_lstsq", "solution residuals rank singular_values")
linalg_lu_factor = _return_type("linalg_lu_factor", "LU pivots")
linalg_lu_factor_ex = _return_type("linalg_lu_factor_ex", "LU pivots info")
linalg_lu = _return_type("linalg_lu", "P L U")
lu_unpack = _return_type("lu_unpack", "P L U")
triangular_solve = _return_type("triangular_solve", "solution cloned_coefficient")
_lu_with_info = _return_type("_lu_with_info", "LU pivots info")
linalg_ldl_factor = _return_type("linalg_ldl_factor", "LD pivots")
linalg_ldl_factor_ex = _return_type("linalg_ldl_factor_ex", "LD pivots info")
