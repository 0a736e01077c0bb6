"""``torch.fx.graph_module``: ``GraphModule``, an ``nn.Module`` whose ``forward`` is the Python
code generated from a ``Graph``.

It holds the submodules, parameters and buffers the graph reaches (``call_module`` and
``get_attr`` targets), shared with the module it was made from, so outputs, gradients and
``state_dict`` keys are that module's. Each instance has its own class (so that ``forward`` can be
regenerated per instance) named after the traced module.
"""

from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from ..nn import Module
from .graph import Graph, PythonCode

__all__ = ["GraphModule"]

_counter = itertools.count()


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # the whole submodule is already there
        if t is None:
            t = Module()
            to_module.add_module(item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    _set_attr(to_module, field, orig, from_module)


def _set_attr(to_module: Module, field: str, value: Any, owner: Any = None) -> None:
    import ember
    import ember.nn as nn

    if isinstance(value, ember.Tensor) and not isinstance(value, nn.Parameter):
        persistent = owner is None or field not in getattr(
            owner, "_non_persistent_buffers_set", ())
        to_module.register_buffer(field, value, persistent=persistent)
    else:
        setattr(to_module, field, value)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            to_module.add_module(item, t)
        to_module = t
    _set_attr(to_module, field, from_obj)


class GraphModule(Module):
    """An ``nn.Module`` made from a ``Graph``: ``forward`` is ``graph``'s generated code.

    Args:
        root: the module whose submodules/parameters the graph's targets name, or a dict from
            target to object.
        graph: the graph.
        class_name: the name ``type(gm).__name__`` reports.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta: dict[str, Any] = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph; assigning one regenerates ``forward``."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"Expected a Graph instance, but got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``, as generated from the graph."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to ember")
        return self.__dict__["_code"]

    def recompile(self) -> PythonCode:
        """Regenerate ``forward`` from ``self.graph`` (call after editing the graph)."""
        python_code = self.graph.python_code(root_module="self")
        src = python_code.src
        self.__dict__["_code"] = src
        key = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[key] = (len(src), None, src.splitlines(True), key)
        ns = dict(python_code.globals)
        exec(compile(src, key, "exec"), ns)
        type(self).forward = ns["forward"]
        return python_code

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at dotted path ``target``, making empty parents as needed; False when
        a step of the path is an attribute that is not a module."""
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False when there is none."""
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no call_module or get_attr node reaches."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op not in ("call_module", "get_attr"):
                continue
            atoms = node.target.split(".")
            used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
            if node.op == "call_module":
                sub = self.get_submodule(node.target)
                used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name in [n for n, _ in self.named_modules() if n and n not in used]:
            self.delete_submodule(name)

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class definition (its forward's code, then those of GraphModule
        submodules); printed unless ``print_output`` is False."""
        parts = [self._readable(type(self).__name__, self.code)]
        for name, mod in self.named_children():
            if isinstance(mod, GraphModule):
                parts.append(self._readable(name, mod.code))
        out = "\n".join(parts)
        if print_output:
            print(out)
        return out

    @staticmethod
    def _readable(name: str, code: str) -> str:
        body = "\n".join(("    " + ln) if ln.strip() else "" for ln in code.strip("\n").split("\n"))
        return f"class {name}(torch.nn.Module):\n{body.rstrip()}\n"

    def __str__(self) -> str:
        return super().__str__() + "\n\n\n" + self.code

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = copy.copy(self.meta)
        return res

    def __deepcopy__(self, memo: dict) -> GraphModule:
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = Module()
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        fake.__dict__ = copy.deepcopy(state, memo)
        GraphModule.__init__(res, fake, copy.deepcopy(self.graph, memo), type(self).__name__)
        for k, v in fake.__dict__.items():
            if k not in res.__dict__:
                res.__dict__[k] = v
        return res

    def __reduce__(self) -> tuple:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild, (state, self.graph, type(self).__name__))


def _rebuild(state: dict, graph: Graph, class_name: str) -> GraphModule:
    fake = Module()
    fake.__dict__.update(state)
    gm = GraphModule(fake, graph, class_name)
    for k, v in state.items():
        gm.__dict__.setdefault(k, v)
    return gm
