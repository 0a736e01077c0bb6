"""``torch._subclasses.fake_tensor``: PyTorch's fake tensors carry shapes and dtypes without data,
for tracing and compilation. ember has no fake tensors (``FakeTensor``, ``FakeTensorMode`` are
absent); ``is_fake`` answers for ember's tensors, none of which is fake.
"""

from __future__ import annotations

from typing import TypeGuard

from .._tensor import Tensor

__all__ = ["is_fake"]


def is_fake(x: object) -> TypeGuard[Tensor]:
    """Whether ``x`` is a fake tensor (or wraps one): always False in ember, which has none.

    Libraries call it to skip work that needs real data while a model is being traced
    (kornia's distance transform, for one); on ember every tensor holds real data.
    """
    return False


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch._subclasses.fake_tensor", name)
