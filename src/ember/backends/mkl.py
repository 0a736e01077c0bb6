"""``ember.backends.mkl``: ember does not call MKL itself (NumPy may)."""

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember has no MKL backend of its own."""
    return False
