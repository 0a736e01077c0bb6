"""``ember.backends``: the switches PyTorch scripts set and probe.

``torch.backends.cudnn.benchmark = True``, ``torch.backends.cuda.matmul.allow_tf32 = True``,
``torch.backends.mps.is_available()``... Each submodule stores what a script sets and reports
honestly what ember has: no cuDNN, MPS, MKL-DNN or OpenMP backend (NumPy/CuPy do the math), so
those ``is_available()`` are False. The flags change nothing in ember's numerics.
"""

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.backends", name)
