"""``ember.backends.cpu``."""

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """The CPU's vector instruction set as PyTorch names it; ember's CPU math is NumPy's, so
    ``"DEFAULT"``."""
    return "DEFAULT"
