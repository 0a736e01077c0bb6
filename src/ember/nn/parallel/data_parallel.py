"""``DataParallel`` on one device: forward passes straight through to the wrapped module."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _cuda_count() -> int:
    from ... import cuda

    return cuda.device_count() if cuda.is_available() else 0


def _index(d: Any) -> int:
    if isinstance(d, int):
        return d
    from ..._backend import device

    idx = device(d).index
    return 0 if idx is None else idx


def _to(obj: Any, dev: str) -> Any:
    from ..._tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to(o, dev) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, dev) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, dev) for k, v in obj.items()}
    return obj


class DataParallel(Module):
    """PyTorch's ``nn.DataParallel``. Without CUDA (PyTorch's CPU behaviour) it holds the module
    as ``.module`` with ``device_ids == []`` and ``forward`` calls it unchanged. With CUDA it runs
    the module on ``device_ids[0]`` (inputs moved there); ember does not replicate a module across
    several GPUs, so extra device ids are used as the first one, with a warning.

    ``state_dict`` keys carry the ``module.`` prefix, exactly as PyTorch's, so checkpoints load
    into either one.
    """

    def __init__(self, module: Module, device_ids: Sequence[int | Any] | None = None,
                 output_device: int | Any | None = None, dim: int = 0) -> None:
        super().__init__()
        n = _cuda_count()
        self.module = module
        if n == 0:
            self.device_ids: list[int] = []
            return
        ids = list(range(n)) if device_ids is None else [_index(d) for d in device_ids]
        if len(ids) > 1:
            warnings.warn(
                f"ember's DataParallel runs the module on one GPU (cuda:{ids[0]}); it does not "
                f"replicate it over device_ids={ids}. Use a larger batch on one device instead.",
                stacklevel=2,
            )
        self.dim = dim
        self.device_ids = ids
        self.output_device = _index(output_device) if output_device is not None else ids[0]
        from ..._backend import device

        self.src_device_obj = device(f"cuda:{ids[0]}")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        dev = self.src_device_obj
        return self.module(*_to(inputs, dev), **_to(kwargs, dev))


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[int | Any] | None = None,
                  output_device: int | Any | None = None, dim: int = 0,
                  module_kwargs: Any = None) -> Any:
    """The functional form of ``DataParallel``: ``module(*inputs)`` on ``device_ids[0]``.
    Like PyTorch's, it needs a GPU (on CPU: "device type could not be determined")."""
    if _cuda_count() == 0:
        raise RuntimeError("device type could not be determined")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dev = f"cuda:{_index(device_ids[0]) if device_ids else 0}"
    out = module(*_to(inputs, dev), **_to(module_kwargs or {}, dev))
    if output_device is not None:
        out = _to(out, f"cuda:{_index(output_device)}")
    return out
