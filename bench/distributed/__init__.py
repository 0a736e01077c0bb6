"""Data-parallel benchmark: see __main__.py."""
