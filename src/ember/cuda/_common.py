"""What every ``ember.cuda`` submodule shares: the availability check and its error."""

from __future__ import annotations

from .. import _backend

CudaUnavailableError = _backend.CudaUnavailableError  # (AssertionError and RuntimeError)


def available() -> bool:
    return _backend.cuda_available()


def require(what: str) -> None:
    """Raise PyTorch's no-CUDA error for ``what`` unless a CUDA GPU is usable."""
    if not _backend.cuda_available():
        raise CudaUnavailableError(
            f"Torch not compiled with CUDA enabled: ember has no usable CUDA GPU for "
            f"torch.cuda.{what} (it needs CuPy and an NVIDIA GPU: pip install 'ember[cuda]'). "
            "Check torch.cuda.is_available() first, or run on the CPU.")


def index_of(device: object = None) -> int:
    """The device index that ``device`` (None, int, str or ember.device) names."""
    if device is None:
        return _backend.cuda_current_device()
    if isinstance(device, int):
        return device
    d = _backend.device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return _backend.cuda_current_device() if d.index is None else d.index
