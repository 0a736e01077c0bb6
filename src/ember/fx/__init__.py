"""``torch.fx``: symbolic tracing of modules into graphs, and modules made from graphs.

``symbolic_trace(module)`` runs ``forward`` on ``Proxy`` values and records every operation as a
``Node`` of a ``Graph``; ``GraphModule`` turns a graph back into a runnable ``nn.Module`` (its
``forward`` is generated Python, ``gm.code``); ``Interpreter`` runs a graph node by node, ``Transformer`` rebuilds one. How namespace
functions are recorded is described in ``_symbolic_trace``. ``subgraph_rewriter`` and the passes
are not implemented yet.
"""

from __future__ import annotations

from . import graph, graph_module, interpreter, node, proxy
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "PH", "PythonCode", "map_arg", "has_side_effect", "graph",
           "graph_module", "interpreter", "node", "proxy"]


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.fx", name)
