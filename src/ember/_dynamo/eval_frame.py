"""``torch._dynamo.eval_frame``: where libraries look up the compiled-module class.

accelerate, transformers and diffusers test ``isinstance(m, torch._dynamo.eval_frame.OptimizedModule)``
to unwrap a ``torch.compile``'d model (the original is its ``_orig_mod``), and import
``is_dynamo_supported`` from here.
"""

from __future__ import annotations

from .._compile import OptimizedModule

__all__ = ["OptimizedModule", "is_dynamo_supported"]


def is_dynamo_supported() -> bool:
    """True: ``torch.compile`` works in ember."""
    return True
