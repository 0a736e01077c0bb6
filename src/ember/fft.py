"""``ember.fft`` (``torch.fft``): discrete Fourier transforms on NumPy's pocketfft, with
PyTorch's arguments (``n``/``s``, ``dim``, ``norm``), dtypes (float32/complex64 in, complex64
out) and gradients (each transform's gradient is its adjoint transform). The ops live in
``ember/ops/spectral.py``, which states each gradient next to its op.
"""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor
from .ops.spectral import (
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2",
    "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift", "Tensor",
]


def __getattr__(name: str) -> Any:
    from ._missing import attribute_error

    raise attribute_error("torch.fft", name)


# NumPy's names (x= for input, axis= for dim...), as PyTorch's builtins take: ops/_aliases.py
from .ops._aliases import numpy_names as _numpy_names  # noqa: E402

for _name in __all__:
    if _name != "Tensor":
        globals()[_name] = _numpy_names(globals()[_name], "fft_" + _name)
del _name

# PyTorch's torch.fft functions are builtins, which do not bind as methods: ember's neither
from . import _as_builtins  # noqa: E402

_as_builtins(globals(), __name__)
