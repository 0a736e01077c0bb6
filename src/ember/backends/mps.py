"""``ember.backends.mps``: Apple GPUs. ember has no MPS backend."""

__all__ = ["is_available", "is_built", "is_macos13_or_newer"]


def is_available() -> bool:
    """False: ember has no Apple-GPU backend."""
    return False


def is_built() -> bool:
    """False: ember has no Apple-GPU backend."""
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    """False: only meaningful with an MPS backend."""
    return False
