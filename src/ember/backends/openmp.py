"""``ember.backends.openmp``."""

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember does not use OpenMP itself."""
    return False
