"""``torch.fx.proxy``: the stand-in values a trace runs the program on.

A ``Proxy`` wraps a ``Node``; every operation on it (arithmetic, indexing, attribute access,
method calls, namespace functions) records a new node and returns a new ``Proxy``. What a trace
cannot record is Python control flow that depends on a value: ``bool(proxy)`` raises
``TraceError``.
"""

from __future__ import annotations

import dis
import inspect
import operator
from collections.abc import Iterator
from typing import Any

from .node import Node

__all__ = ["Proxy", "Attribute", "TraceError", "GraphAppendingTracer"]


class TraceError(ValueError):
    """The traced program used a symbolic value where tracing cannot follow (control flow)."""


class GraphAppendingTracer:
    """The minimal tracer a bare ``Proxy(node)`` uses: it appends to ``node.graph``."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.scope = None

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None) -> Proxy:
        from ._symbolic_trace import _create_arg

        node = self.graph.create_node(kind, target, _create_arg(self, args),
                                      _create_arg(self, kwargs), name, type_expr)
        return Proxy(node, self)

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Iterator:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. Unpack "
                         "a fixed number of values (a, b = proxy) or index it instead")

    def keys(self, obj: Proxy) -> Any:
        return Attribute(obj, "keys")()


class Proxy:
    """A value during symbolic tracing: operations on it become nodes of the tracer's graph."""

    def __init__(self, node: Node, tracer: Any = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == caller.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")

    def keys(self) -> Any:
        return self.tracer.keys(self)

    __hash__ = object.__hash__

    @classmethod
    def __torch_function__(cls, orig_method: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Proxy:
        kwargs = kwargs or {}
        tracer = _find_tracer((args, kwargs))
        import ember

        name = getattr(orig_method, "__name__", "")
        if getattr(ember.Tensor, name, None) is orig_method:
            return tracer.create_proxy("call_method", name, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node made when the value is used, or a ``call_method``
    node when it is called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


def _find_tracer(a: Any) -> Any:
    stack = [a]
    while stack:
        x = stack.pop()
        if isinstance(x, Proxy):
            return x.tracer
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return None


_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift",
           "and_", "or_", "xor")
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
_UNARY = ("neg", "pos", "invert", "abs")


def _install_magic_methods() -> None:
    def binary(fn: Any) -> Any:
        def impl(self: Proxy, other: Any) -> Proxy:
            return self.tracer.create_proxy("call_function", fn, (self, other), {})
        return impl

    def reflected(fn: Any) -> Any:
        def impl(self: Proxy, other: Any) -> Proxy:
            return self.tracer.create_proxy("call_function", fn, (other, self), {})
        return impl

    def unary(fn: Any) -> Any:
        def impl(self: Proxy) -> Proxy:
            return self.tracer.create_proxy("call_function", fn, (self,), {})
        return impl

    for name in _BINARY:
        fn = getattr(operator, name)
        dunder = name.rstrip("_")
        setattr(Proxy, f"__{dunder}__", binary(fn))
        setattr(Proxy, f"__r{dunder}__", reflected(fn))
    for name in _COMPARE:
        setattr(Proxy, f"__{name}__", binary(getattr(operator, name)))
    for name in _UNARY:
        setattr(Proxy, f"__{name}__", unary(getattr(operator, name)))
    Proxy.__getitem__ = binary(operator.getitem)  # type: ignore[method-assign]


_install_magic_methods()
