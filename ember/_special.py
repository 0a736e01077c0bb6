"""Special functions NumPy lacks (erf, erfinv), vectorised over arrays of any backend.

Placeholder accuracy: to be replaced by rational approximations accurate to float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: Any) -> Any:
    return _erf_vec(x).astype(x.dtype)


def erfinv(x: Any) -> Any:
    raise NotImplementedError


def lgamma(x: Any) -> Any:
    return np.vectorize(math.lgamma, otypes=[np.float64])(x).astype(x.dtype)


def digamma(x: Any) -> Any:
    raise NotImplementedError
