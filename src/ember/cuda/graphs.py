"""``ember.cuda.graphs``: CUDA graph capture names (ember runs eagerly; see ``ember.cuda``)."""

from . import (
           CUDAGraph,
           graph,
           graph_pool_handle,
           is_current_stream_capturing,
           make_graphed_callables,
)

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables"]
