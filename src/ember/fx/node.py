"""``torch.fx.node``: one operation of a ``Graph``.

A ``Node`` has an ``op`` (``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
``call_module``, ``output``), a ``target`` (a callable for ``call_function``, a string otherwise),
``args`` and ``kwargs`` that may hold other nodes, and ``users``: the nodes that read it. Nodes of
a graph form a doubly linked list in execution order.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Argument = Any
Target = Any

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

# functions whose nodes dead-code elimination must keep even without users
_side_effect_functions: set[Callable] = {builtins.print, operator.setitem}


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as having side effects: its call_function nodes survive dead-code
    elimination. Returns ``fn``."""
    _side_effect_functions.add(fn)
    return fn


def map_aggregate(a: Argument, fn: Callable[[Any], Any]) -> Argument:
    """Apply ``fn`` to every leaf of ``a`` (tuples, namedtuples, lists, dicts and slices descend)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every ``Node`` inside ``a``, keeping the structure around them."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """One operation of a ``Graph`` (see the module docstring for its fields)."""

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: tuple,
                 kwargs: dict, return_type: Any = None) -> None:
        if op not in _OPS:
            raise ValueError(f"Node op must be one of {_OPS[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a call_function target must be callable")
        if op in ("placeholder", "get_attr", "call_method", "call_module", "output") \
                and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a {op} target must be a string")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self.stack_trace: str | None = None
        self._update_args_kwargs(args, kwargs)

    # --- position in the graph's list ---------------------------------------------------------

    @property
    def next(self) -> Node:
        """The node after this one (the graph's root sentinel after the last node)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` to just before this node."""
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move ``x`` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # --- arguments ------------------------------------------------------------------------------

    @property
    def args(self) -> tuple:
        """The positional arguments (nodes stand for the values they compute)."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this node reads, in first-use order."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(map_arg(tuple(new_args), self._note_input))
        self._kwargs = dict(map_arg(dict(new_kwargs), self._note_input))

    def _note_input(self, n: Node) -> Node:
        self._input_nodes.setdefault(n)
        n.users.setdefault(self)
        return n

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Replace positional argument ``idx``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Replace (or add) keyword argument ``key``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read ``new_input`` wherever this node read ``old_input``."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; returns those users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    # --- queries --------------------------------------------------------------------------------

    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node even when nothing reads it."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effect_functions or \
                getattr(self.target, "__name__", "") == "_assert"
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                return False
            try:
                mod = owner.get_submodule(self.target)
            except AttributeError:
                return False
            return bool(getattr(mod, "_is_impure", False))
        return False

    def format_node(self) -> str:
        """One line as ``print(graph)`` shows it."""
        typ = f"{_type_str(self.type)} " if self.type is not None else ""
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typ}[num_users={len(self.users)}] = " \
                   f"placeholder[target={self.target}]{default}"
        if self.op == "output":
            return f"return {self.args[0]}"
        head = f"%{self.name} : {typ}[num_users={len(self.users)}] = " \
               f"{self.op}[target={_target_str(self)}]"
        if self.op == "get_attr":
            return head
        return f"{head}(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    def __repr__(self) -> str:
        return self.name


def _type_str(t: Any) -> str:
    import ember

    if t is ember.Tensor:
        return "torch.Tensor"
    return getattr(t, "__qualname__", None) or repr(t)


def _target_str(node: Node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    from .graph import _qualified_name

    return _qualified_name(t)


def _format_arg(a: Any) -> str:
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, tuple):
        inner = ", ".join(_format_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return str(a)
