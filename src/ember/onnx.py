"""``ember.onnx``: the module exists so ``import torch.onnx`` works; exporting is not implemented."""

from __future__ import annotations

from typing import Any

__all__ = ["OnnxExporterError", "export", "is_in_onnx_export"]


class OnnxExporterError(RuntimeError):
    """PyTorch's error type for a failed ONNX export."""


def export(model: Any, args: tuple = (), f: Any = None, *, kwargs: dict | None = None,
           **options: Any) -> Any:
    """Not implemented: raises ``NotImplementedError`` (ember cannot trace a model to ONNX)."""
    raise NotImplementedError(
        "ember does not implement torch.onnx.export: ember has no graph tracer to export from. "
        "Save the weights with torch.save(model.state_dict(), path) and export from PyTorch, "
        "which loads ember's checkpoints."
    )


def is_in_onnx_export() -> bool:
    """False: no ONNX export is ever running."""
    return False


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.onnx", name)
