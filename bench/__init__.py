"""ember's benchmark: the same PyTorch-style workloads under PyTorch and under ``ember run``.

``python -m bench`` (or ``make bench``) runs them side by side; see docs/benchmarks.md.
"""
