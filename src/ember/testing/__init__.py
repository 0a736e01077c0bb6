"""``ember.testing``: ``assert_close`` and ``make_tensor``, as in ``torch.testing``; and
``fake_cuda()``, ember's own: a ``cuda`` device backed by NumPy arrays, to check GPU code
without a GPU."""

from __future__ import annotations

from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor
from ._fake_cuda import fake_cuda

__all__ = ["assert_close", "make_tensor", "assert_allclose", "fake_cuda"]

