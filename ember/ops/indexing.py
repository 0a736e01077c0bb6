"""Indexing: __getitem__/__setitem__, gather/scatter, index_select, masked ops, sort/topk."""

from __future__ import annotations
