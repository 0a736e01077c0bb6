"""``torch._dynamo.explain(fn)(*args)``: what ``torch.compile`` would capture of one call.

The call runs once, eagerly, with the compile tracer's graph-break detectors installed (the
ones ``torch.compile`` uses, ``ember/_compile/trace.py``) and a recorder that counts the ops
(``Function.apply`` calls) between breaks instead of building a program. A graph break is what
ember's compiler breaks on: tensor data turned into a Python value (``.item()``, ``.tolist()``,
``if tensor:``, ``.numpy()``...), an op whose output shape depends on the data (``nonzero``,
``unique``...), and a backward pass. The segments between breaks that ran ops are the graphs;
as in PyTorch, ``graph_break_count`` is one less than ``graph_count`` (a break after which no op
runs is listed in ``break_reasons`` but splits nothing).

PyTorch's counts come from Dynamo's bytecode analysis, so they can differ: its ``op_count``
counts FX ``call_function`` nodes, ember's counts every op; its ``graphs`` are FX GraphModules,
ember's are op lists (``ops_per_graph``), and ``out_guards`` is empty (ember's guards are the
inputs' shapes, dtypes and devices). Breaks Dynamo takes at Python it cannot trace (an unknown C
function, a generator) are not seen: such code runs inside ember's trace.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["ExplainOutput", "GraphCompileReason", "explain"]

# PyTorch's wording for the breaks both compilers take
_REASONS = {
    "Tensor.item()": "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "__bool__ on a tensor": "generic_jump TensorVariable()",
}


@dataclasses.dataclass
class GraphCompileReason:
    """Why a graph ended (``torch._dynamo.output_graph.GraphCompileReason``)."""

    reason: str
    user_stack: list[traceback.FrameSummary]
    graph_break: bool = True


class ExplainOutput:
    """What ``explain`` returns (``torch._dynamo.backends.debugging.ExplainOutput``)."""

    def __init__(self, graphs: list, graph_count: int, graph_break_count: int,
                 break_reasons: list[GraphCompileReason], op_count: int,
                 ops_per_graph: list[list] | None = None, out_guards: list | None = None,
                 compile_times: str | None = None) -> None:
        self.graphs = graphs
        self.graph_count = graph_count
        self.graph_break_count = graph_break_count
        self.break_reasons = break_reasons
        self.op_count = op_count
        self.ops_per_graph = ops_per_graph
        self.out_guards = out_guards
        self.compile_times = compile_times

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, r in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {r.reason}", "    User Stack:"]
            lines += [f"      {frame}" for frame in r.user_stack]
        if self.ops_per_graph is not None:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph, 1):
                lines.append(f"  Ops {i}:")
                lines += [f"    {op}" for op in ops]
        if self.out_guards is not None:
            lines.append("Out Guards:")
            lines += [f"  Guard {i}:\n    {g}" for i, g in enumerate(self.out_guards, 1)]
        if self.compile_times is not None:
            lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines) + "\n"

    __repr__ = object.__repr__


def _user_stack(top: Any) -> list[traceback.FrameSummary]:
    """The program's frames from the explained function's (code ``top``) inward, outermost
    first; ember's own are left out."""
    frames = []
    f: Any = sys._getframe(1)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not (name == "ember" or name.startswith("ember.")):
            frames.append((f, f.f_lineno))
        if f.f_code is top:
            break
        f = f.f_back
    frames.reverse()
    return list(traceback.StackSummary.extract(frames))


class _Recorder:
    """Stands where ``torch.compile``'s ``Tracer`` stands (``ember.autograd.function.tracer``)
    while the call runs: counts ops, and starts a new graph at each break."""

    fullgraph = False
    rebinding = None

    def __init__(self, top: Any) -> None:
        self.top = top
        self.graphs: list[list] = [[]]
        self.reasons: list[GraphCompileReason] = []
        self.allow_bump = 0
        self.pending_bump = 0
        self.made_from_data: dict = {}

    def record(self, cls: Any, ctx: Any, args: tuple, raw: list, outputs: list) -> None:
        self.graphs[-1].append(cls)

    def graph_break(self, what: str) -> None:
        stack = _user_stack(self.top)
        if self.reasons and not self.graphs[-1] and self.reasons[-1].user_stack == stack:
            return  # the same break seen again from inside (``if t:`` calls ``t.item()``)
        self.reasons.append(GraphCompileReason(_REASONS.get(what, f"Unsupported: {what}"),
                                               stack))
        self.graphs.append([])

    def fail(self, reason: str) -> None:
        """What ember's compiler would replay eagerly (an in-place write...) is no break."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("record_"):  # dropout masks, running statistics, writes: not needed
            return _ignore
        raise AttributeError(name)


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


def explain(f: Callable, *extra_args: Any, **extra_kwargs: Any) -> Any:
    """``torch._dynamo.explain(f)(*args, **kwargs)``: run ``f`` once and return an
    :class:`ExplainOutput` with its graphs, graph breaks and ops, as ember's compiler sees them.

    ``explain(f, *args)`` (PyTorch's older form) calls at once, with its ``FutureWarning``.
    """
    def inner(*args: Any, **kwargs: Any) -> ExplainOutput:
        from .._compile.trace import Patches
        from ..autograd import function as _function

        if _function.tracer is not None:  # inside a region being compiled: not nested
            raise RuntimeError("torch._dynamo.explain cannot run inside a compiled region")
        fn = getattr(f, "forward", f)  # a module: its forward's frame is the graph's top
        rec = _Recorder(getattr(inspect.unwrap(getattr(fn, "__func__", fn)), "__code__", None))
        t0 = time.perf_counter()
        _function.tracer = rec
        try:
            with Patches(rec):
                f(*args, **kwargs)
        finally:
            _function.tracer = None
        graphs = [g for g in rec.graphs if g]
        ops = [[getattr(c, "__name__", str(c)) for c in g] for g in graphs]
        return ExplainOutput(
            # PyTorch's count: the graphs less one (-1 when no op ran), not the reasons listed
            graphs=ops, graph_count=len(graphs), graph_break_count=len(graphs) - 1,
            break_reasons=rec.reasons, op_count=sum(len(g) for g in graphs), ops_per_graph=ops,
            out_guards=[], compile_times=f"ember tracing, {time.perf_counter() - t0:.4f} s")

    if extra_args or extra_kwargs:
        import warnings

        warnings.warn("explain(f, *args, **kwargs) is deprecated, use explain(f)(*args, **kwargs) "
                      "instead.  If you don't migrate, we may break your explain call in the "
                      "future if your user defined kwargs conflict with future kwargs added to "
                      "explain(f).", FutureWarning, stacklevel=2)
        return inner(*extra_args, **extra_kwargs)
    return inner
