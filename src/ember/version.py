"""``torch.version``: the PyTorch API version ember implements and the build facts (no CUDA
build: ``cuda`` and ``hip`` are None). See ``ember/_version.py``."""

from ._version import (  # noqa: F401 - re-exported as torch.version.*
    __ember_version__,
    __version__,
    cuda,
    debug,
    git_version,
    hip,
    rocm,
    xpu,
)

__all__ = ["__version__", "cuda", "hip", "rocm", "xpu", "debug", "git_version"]
