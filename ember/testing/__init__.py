"""``ember.testing``: ``assert_close`` and ``make_tensor``, as in ``torch.testing``."""

from __future__ import annotations

from ._comparison import assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]


def assert_allclose(actual: object, expected: object, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated ``torch.testing.assert_allclose``: ``assert_close`` without dtype checks."""
    import warnings

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead.",
                  FutureWarning, stacklevel=2)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
