"""``torch.fx.graph``: a ``Graph`` is the list of ``Node`` s a trace recorded, and the Python
source (``python_code``) that a ``GraphModule`` runs as its ``forward``.

The generated code reads as PyTorch's: one line per node, namespace functions spelled
``torch.flatten`` / ``torch.nn.functional.relu`` (``torch`` is ember in its globals), operators as
``a + b``, and ``x = None`` after a value's last use so that intermediates are freed early.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import math
import operator
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .node import Argument, Node, Target, map_arg

__all__ = ["Graph", "PythonCode"]

_ROOT_NAMESPACES = (("torch", "ember"), ("torch.nn.functional", "ember.nn.functional"),
                    ("torch.linalg", "ember.linalg"), ("torch.special", "ember.special"))

# names a node may not take: Python's keywords and builtins, and the generated code's globals
_RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {
    "self", "torch", "ember", "operator", "math", "inf", "nan", "device", "fx_pytree", "pytree"}

_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}

_names_cache: dict[int, str] = {}


def _public_names() -> dict[int, str]:
    """id(function) -> its public spelling ("torch.add", "torch.nn.functional.relu")."""
    if not _names_cache:
        for public, mod_name in reversed(_ROOT_NAMESPACES):  # torch.* wins over the others
            mod = sys.modules.get(mod_name)
            if mod is None:
                continue
            for k, v in vars(mod).items():
                if not k.startswith("__") and callable(v) and not isinstance(v, type):
                    _names_cache[id(v)] = f"{public}.{k}"
    return _names_cache


def _qualified_name(fn: Any) -> str:
    """How ``print(graph)`` and the generated code name a call_function target."""
    if getattr(fn, "__module__", None) in ("_operator", "operator"):
        return f"operator.{fn.__name__}"
    if getattr(fn, "__module__", None) == "builtins" or fn is getattr:
        return f"builtins.{fn.__name__}"
    if getattr(fn, "__module__", None) == "math":
        return f"math.{fn.__name__}"
    short = getattr(fn, "__name__", None)
    if isinstance(short, str):
        for public, mod_name in _ROOT_NAMESPACES:
            mod = sys.modules.get(mod_name)
            if mod is not None and vars(mod).get(short) is fn:
                return f"{public}.{short}"
    name = _public_names().get(id(fn))
    if name is not None:
        return name
    _names_cache.clear()  # a namespace that loaded after the cache was built
    name = _public_names().get(id(fn))
    if name is not None:
        return name
    module = getattr(fn, "__module__", None) or "_unknown"
    return f"{module}.{getattr(fn, '__qualname__', getattr(fn, '__name__', 'fn'))}"


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return s.lower()


class _Namespace:
    """Unique Python identifiers for a graph's nodes (and a code object's globals)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._counts: dict[str, int] = {}
        self._obj_to_name: dict[int, str] = {}

    def create_name(self, candidate: str, obj: Any = None) -> str:
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (m.group(1), int(m.group(2))) if m else (candidate, None)
        name = candidate
        if name in self._used or name in _RESERVED:
            num = self._counts.get(base, 0) if num is None else num
            while True:
                num += 1
                name = f"{base}_{num}"
                if name not in self._used and name not in _RESERVED:
                    break
            self._counts[base] = num
        self._used.add(name)
        if obj is not None:
            self._obj_to_name[id(obj)] = name
        return name

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[id(obj)] = name

    def release(self, name: str) -> None:
        self._used.discard(name)


@dataclass
class PythonCode:
    """What ``Graph.python_code`` returns: the source of ``forward`` and the globals it needs."""

    src: str
    globals: dict[str, Any]


class _NodeList:
    """``graph.nodes``: the graph's nodes in order (a live view: len, iteration, reversed)."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)  # read first: the loop body may erase cur
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> _NodeList:
        return _NodeList(self._graph, not self._reverse)

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig_insert


class Graph:
    """The nodes of a traced program, in execution order, and the code generated from them."""

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None,
                 tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._insert: Callable[[Node], None] = self._root.prepend

    @property
    def owning_module(self) -> Any:
        """The ``GraphModule`` this graph belongs to, if any."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Any) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in execution order."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target = None, sort: bool = True) -> list[Node]:
        """The nodes with this ``op`` (and ``target``, when given), in graph order."""
        return [n for n in self.nodes
                if n.op == op and (target is None or n.target == target)]

    # --- building -------------------------------------------------------------------------------

    def create_node(self, op: str, target: Target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Add a node at the insertion point (the end of the graph by default) and return it."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise TypeError("create_node: args must be a tuple and kwargs a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph (an argument of the generated ``forward``)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Fetch a parameter, buffer or submodule of the owning module by dotted path."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call the submodule at ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call method ``method_name`` of ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call a free function."""
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The graph's return value."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing reads any more.

        Raises:
            RuntimeError: the node still has users, or belongs to another graph.
        """
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        # unlink it from its neighbours but keep its own links, so that a loop over the nodes
        # that erases the node it is about to visit still finds its way on
        p, n = to_erase._prev, to_erase._next
        p._next, n._prev = n, p
        to_erase._erased = True
        self._len -= 1
        self._graph_namespace.release(to_erase.name)
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_before(n):`` new nodes go just before ``n`` (default: first)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_after(n):`` new nodes go just after ``n`` (in order)."""
        if n is None:
            return self.inserting_before(self._root)
        point = [n]

        def insert(new: Node) -> None:
            point[0].append(new)
            point[0] = new
        return _InsertPoint(self, insert)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
                  ) -> Node:
        """Copy ``node`` (from any graph) into this one, mapping its input nodes through
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict[Node, Node],
                   return_output_node: bool = False) -> Any:
        """Copy every node of ``g`` but its output into this graph; returns what the output
        returned (mapped), ``val_map`` filled with old node -> new node."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        g = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        rv = g.graph_copy(self, {}, return_output_node=True)
        if rv is not None:
            out_val, old_out = rv
            g.output(out_val, type_expr=old_out.type)
        return g

    def __getstate__(self) -> dict:
        index = {n: i for i, n in enumerate(self.nodes)}
        rows = [(n.name, n.op, n.target, map_arg(n.args, lambda x: _Ref(index[x])),
                 map_arg(n.kwargs, lambda x: _Ref(index[x])), n.type,
                 bool(n.meta.get("is_wrapped"))) for n in self.nodes]
        return {"rows": rows, "tracer_cls": self._tracer_cls}

    def __setstate__(self, state: dict) -> None:
        self.__init__(tracer_cls=state["tracer_cls"])  # type: ignore[misc]
        made: list[Node] = []
        from .node import map_aggregate

        for name, op, target, args, kwargs, type_expr, is_wrapped in state["rows"]:
            def get(x: Any) -> Any:
                return made[x.i] if isinstance(x, _Ref) else x

            made.append(self.create_node(op, target, map_aggregate(args, get),
                                         map_aggregate(kwargs, get), name, type_expr))
            if is_wrapped:
                made[-1].meta["is_wrapped"] = True

    # --- passes ---------------------------------------------------------------------------------

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase the nodes nothing reads (keeping impure ones); returns whether any were."""
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants: well-formed nodes, unique names, every argument
        defined before use, targets that exist in the owning module.

        Raises:
            RuntimeError: the first broken invariant, naming the node.
        """
        seen_names: set[str] = set()
        seen: set[Node] = set()
        prev = self._root
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node._prev is not prev:
                raise RuntimeError(f"Node '{node}' has a broken prev link")
            prev = node
            if node.op not in ("placeholder", "get_attr", "call_function", "call_method",
                               "call_module", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph, but was used as an argument! If you are "
                                       "copying nodes from another graph, make sure to use "
                                       "``arg_transform`` on node_copy() to remap values")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the graph "
                                       "are topologically ordered")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' is missing from the users of '{arg}'")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen.add(node)
            mod = self._owning_module
            if mod is not None and node.op in ("get_attr", "call_module"):
                obj = mod
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        where = ".".join(node.target.split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {where or 'root'}")
                    obj = getattr(obj, atom)
        if prev._next is not self._root:
            raise RuntimeError("Graph's last node does not link back to the root")

    # --- printing and code ----------------------------------------------------------------------

    def __str__(self) -> str:
        lines = ["graph():"] + [f"    {n.format_node()}" for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs."""
        rows = [[n.op, n.name, n.target if isinstance(n.target, str) else
                 _qualified_name(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                  for i, h in enumerate(headers)]
        out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
               "  ".join("-" * w for w in widths)]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        print("\n".join(out))

    def _target_to_str(self, target: Target) -> str:
        if callable(target) and not isinstance(target, str):
            op = getattr(target, "__name__", type(target).__name__)
        else:
            op = str(target).replace(".", "_")
        return _snake(op)

    def python_code(self, root_module: str = "self") -> PythonCode:
        """The source of ``def forward(...)`` and the globals it runs with."""
        return _CodeGen(self, root_module).generate()


class _Ref:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __reduce__(self) -> tuple:
        return (_Ref, (self.i,))


def _is_identifier(s: str) -> bool:
    return s.isidentifier() and not keyword.iskeyword(s)


class _CodeGen:
    def __init__(self, graph: Graph, root_module: str) -> None:
        self.graph = graph
        self.root = root_module
        self.globals: dict[str, Any] = {"inf": math.inf, "nan": math.nan,
                                        "NoneType": type(None)}
        self.namespace = _Namespace()
        for n in graph.nodes:
            self.namespace.create_name(n.name, n)
        self.wrapped: list[str] = []

    def add_global(self, hint: str, obj: Any) -> str:
        if hint in self.globals and self.globals[hint] is obj:
            return hint
        name = self.namespace.create_name(hint, obj)
        self.globals[name] = obj
        return name

    def fn_name(self, fn: Any, wrapped: bool = False) -> str:
        q = _qualified_name(fn)
        if wrapped:  # a leaf by fx.wrap or autowrap: a global of its own, wrapped again
            name = self.add_global(q, fn)
            if name not in self.wrapped:
                self.wrapped.append(name)
            return name
        root = q.split(".", 1)[0]
        if root == "torch":
            import ember

            self.globals["torch"] = ember
            return q
        if root in ("operator", "math") or q.startswith("builtins."):
            if root in ("operator", "math"):
                self.globals[root] = operator if root == "operator" else math
                return q
            return fn.__name__
        return self.add_global(q, fn)

    def fmt(self, a: Any) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            inner = ", ".join(self.fmt(x) for x in a)
            if hasattr(a, "_fields"):
                return f"{self.add_global(type(a).__name__, type(a))}({inner})"
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.fmt(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.fmt(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.fmt(a.start)}, {self.fmt(a.stop)}, {self.fmt(a.step)})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str, bytes)):
            return repr(a)
        if isinstance(a, float):
            if math.isinf(a):
                return "inf" if a > 0 else "-inf"
            return "nan" if math.isnan(a) else repr(a)
        import ember

        if isinstance(a, ember.dtype):
            self.globals["torch"] = ember
            return f"torch.{str(a).rsplit('.', 1)[-1]}"
        if isinstance(a, ember.device):
            self.globals["device"] = ember.device
            return f"device({str(a)!r})"
        if isinstance(a, (types.FunctionType, types.BuiltinFunctionType, staticmethod)):
            return self.fn_name(a)
        return self.add_global(_snake(type(a).__name__), a)

    def module_path(self, target: str) -> str:
        expr = self.root
        for atom in target.split("."):
            expr = f"{expr}.{atom}" if _is_identifier(atom) else f'getattr({expr}, "{atom}")'
        return expr

    def type_str(self, t: Any) -> str:
        if t is None:
            return ""
        import ember

        if t is ember.Tensor:
            self.globals["torch"] = ember
            return "torch.Tensor"
        if isinstance(t, type):
            if t.__module__ == "builtins":
                return t.__name__
            return self.add_global(t.__name__, t)
        return ""

    def generate(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        # after which node each value is last read: free it there (x = None)
        last_use: dict[Node, Node] = {}
        to_free: dict[Node, list[Node]] = {}
        for user in reversed(nodes):
            for inp in user._input_nodes:
                if inp not in last_use:
                    last_use[inp] = user
                    to_free.setdefault(user, []).append(inp)
        params: list[str] = []
        body: list[str] = []
        for n in nodes:
            if n.op == "placeholder":
                ann = self.type_str(n.type)
                p = n.target if n.target.startswith("*") else n.name
                p += f" : {ann}" if ann else ""
                if n.args:
                    p += f" = {self.fmt(n.args[0])}"
                params.append(p)
                continue
            line = self.emit(n)
            if line is None:
                continue
            frees = [x.name for x in to_free.get(n, []) if x.op != "output"]
            if n.op != "output" and not n.users:
                frees.append(n.name)
            if frees and n.op != "output":
                line += ";  " + " = ".join(frees) + " = None"
            body.append(line)
        if not body:
            body = ["pass"]
        head = ""
        if self.wrapped:  # keep them leaves when the generated code is traced again
            import ember

            head = "\n".join(f'torch.fx._symbolic_trace.wrap("{w}")' for w in self.wrapped)
            self.globals["torch"] = ember
        sig = ", ".join([self.root, *params])
        out = next((n for n in reversed(nodes) if n.op == "output"), None)
        ret = self.type_str(out.type) if out is not None else ""
        sig += f") -> {ret}" if ret else ")"
        src = f"\n{head}\n\ndef forward({sig}:\n" + "".join(f"    {b}\n" for b in body) + "    "
        return PythonCode(src, self.globals)

    def emit(self, n: Node) -> str | None:
        args, kwargs = n.args, n.kwargs
        if n.op == "output":
            return f"return {self.fmt(args[0])}"
        if n.op == "get_attr":
            return f"{n.name} = {self.module_path(n.target)}"
        if n.op == "call_module":
            return f"{n.name} = {self.module_path(n.target)}({self.call_args(args, kwargs)})"
        if n.op == "call_method":
            rest = self.call_args(args[1:], kwargs)
            return f"{n.name} = {self.fmt(args[0])}.{n.target}({rest})"
        t = n.target
        if not kwargs:
            if t in _BINARY and len(args) == 2:
                return f"{n.name} = {self.fmt(args[0])} {_BINARY[t]} {self.fmt(args[1])}"
            if t in _UNARY and len(args) == 1:
                return f"{n.name} = {_UNARY[t]}{self.fmt(args[0])}"
            if t is operator.getitem and len(args) == 2:
                return f"{n.name} = {self.fmt(args[0])}[{self.fmt(args[1])}]"
            if t is getattr and len(args) == 2 and isinstance(args[1], str) \
                    and _is_identifier(args[1]):
                return f"{n.name} = {self.fmt(args[0])}.{args[1]}"
        name = self.fn_name(t, bool(n.meta.get("is_wrapped")))
        return f"{n.name} = {name}({self.call_args(args, kwargs)})"

    def call_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.fmt(a) for a in args] + [f"{k} = {self.fmt(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)
