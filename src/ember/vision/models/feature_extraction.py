"""``torchvision.models.feature_extraction``: a model's intermediate outputs, by ``torch.fx``.

``get_graph_node_names(model)`` lists the names of a model's operations in train and eval mode
(``"layer1.0.conv1"``, ``"layer1.0.add"``, ``"layer1.0.relu_1"``...: the module path, then the
operation, ``_1``, ``_2`` for repeats within a module). ``create_feature_extractor(model,
return_nodes)`` traces the model and returns a ``GraphModule`` whose ``forward`` returns a dict of
the requested nodes' values; a name that is a module path (``"layer1"``) selects the last
operation inside that module. Everything after the last requested node is dropped, with the
parameters only it used.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

from ... import fx, nn

__all__ = ["create_feature_extractor", "get_graph_node_names"]


class LeafModuleAwareTracer(fx.Tracer):
    """A ``Tracer`` that also treats instances of ``leaf_modules`` (classes) as leaves."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.leaf_modules: tuple[type, ...] = tuple(kwargs.pop("leaf_modules", ()) or ())
        super().__init__(*args, **kwargs)

    def is_leaf_module(self, m: nn.Module, module_qualname: str) -> bool:
        if isinstance(m, self.leaf_modules):
            return True
        return super().is_leaf_module(m, module_qualname)


class NodePathTracer(LeafModuleAwareTracer):
    """A tracer that names every node by its path: the module it ran in, then the operation
    (``node_to_qualname``, in execution order)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current_module_qualname = ""
        self.node_to_qualname: dict[fx.Node, str] = {}
        self._name_counts: dict[str, int] = {}

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple,
                    kwargs: dict) -> Any:
        outer = self.current_module_qualname
        try:
            self.current_module_qualname = self.path_of_module(m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.current_module_qualname = outer

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     *_: Any, **__: Any) -> fx.Proxy:
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        self.node_to_qualname[proxy.node] = self._get_node_qualname(
            self.current_module_qualname, proxy.node)
        return proxy

    def _get_node_qualname(self, module_qualname: str, node: fx.Node) -> str:
        qualname = module_qualname
        if node.op != "call_module":
            qualname = f"{qualname}.{node.name}" if qualname else node.name
        # fx numbers repeated names across the whole graph; number them per module instead
        qualname = re.sub(r"_[0-9]+$", "", qualname) if re.match(r".+_[0-9]+$", qualname) \
            else qualname
        seen = self._name_counts.get(qualname)
        self._name_counts[qualname] = 0 if seen is None else seen + 1
        return qualname if seen is None else f"{qualname}_{seen + 1}"


def _leaf_modules_of_ops() -> list[type]:
    from .. import ops

    return [v for v in vars(ops).values() if isinstance(v, type) and issubclass(v, nn.Module)]


def _default_tracer_kwargs(tracer_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    from .. import ops

    out = dict(tracer_kwargs or {})
    modules = (math, ops)
    out["autowrap_modules"] = tuple(set(out.get("autowrap_modules", ()) + modules))
    out["leaf_modules"] = list(set(list(out.get("leaf_modules", [])) + _leaf_modules_of_ops()))
    return out


def _trace(model: nn.Module, train: bool, tracer_kwargs: dict[str, Any],
           concrete_args: dict[str, Any] | None) -> tuple[NodePathTracer, fx.Graph]:
    was_training = model.training
    model.train(train)
    try:
        tracer = NodePathTracer(**tracer_kwargs)
        graph = tracer.trace(model, concrete_args)
    finally:
        model.train(was_training)
    return tracer, graph


def _warn_differences(train_names: list[str], eval_names: list[str]) -> None:
    if train_names == eval_names:
        return
    warnings.warn("NOTE: The nodes obtained by tracing the model in eval mode differ from those "
                  "obtained in train mode. When choosing nodes for feature extraction, you may "
                  "need to specify output nodes for train and eval mode separately "
                  "(`train_return_nodes`, `eval_return_nodes`).", stacklevel=3)


def get_graph_node_names(model: nn.Module, tracer_kwargs: dict[str, Any] | None = None,
                         suppress_diff_warning: bool = False,
                         concrete_args: dict[str, Any] | None = None
                         ) -> tuple[list[str], list[str]]:
    """The node names of ``model`` traced in train mode and in eval mode, in execution order.

    Args:
        model: the model.
        tracer_kwargs: keyword arguments for the tracer (``leaf_modules``, ``autowrap_modules``,
            ``autowrap_functions``).
        suppress_diff_warning: don't warn when the two lists differ.
        concrete_args: passed to ``Tracer.trace``.
    """
    kw = _default_tracer_kwargs(tracer_kwargs)
    train_tracer, _ = _trace(model, True, kw, concrete_args)
    eval_tracer, _ = _trace(model, False, kw, concrete_args)
    train_names = list(train_tracer.node_to_qualname.values())
    eval_names = list(eval_tracer.node_to_qualname.values())
    if not suppress_diff_warning:
        _warn_differences(train_names, eval_names)
    return train_names, eval_names


class DualGraphModule(fx.GraphModule):
    """A ``GraphModule`` with one graph for train mode and one for eval mode: ``train()`` and
    ``eval()`` switch between them."""

    def __init__(self, root: nn.Module, train_graph: fx.Graph, eval_graph: fx.Graph,
                 class_name: str = "GraphModule") -> None:
        nn.Module.__init__(self)
        self.__class__.__name__ = class_name
        self.training = root.training
        from ...fx.graph_module import _copy_attr

        for g in (train_graph, eval_graph):
            for node in g.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        self.train_graph = train_graph
        self.eval_graph = eval_graph
        self.meta = {}
        self.graph = train_graph if self.training else eval_graph

    def train(self, mode: bool = True) -> DualGraphModule:
        if mode and not self.training:
            self.graph = self.train_graph
        elif not mode and self.training:
            self.graph = self.eval_graph
        return super().train(mode)


def _as_dict(nodes: list[str] | dict[str, str]) -> dict[str, str]:
    if isinstance(nodes, dict):
        return {str(k): str(v) for k, v in nodes.items()}
    return {str(n): str(n) for n in nodes}


def create_feature_extractor(
    model: nn.Module,
    return_nodes: list[str] | dict[str, str] | None = None,
    train_return_nodes: list[str] | dict[str, str] | None = None,
    eval_return_nodes: list[str] | dict[str, str] | None = None,
    tracer_kwargs: dict[str, Any] | None = None,
    suppress_diff_warning: bool = False,
    concrete_args: dict[str, Any] | None = None,
) -> fx.GraphModule:
    """A ``GraphModule`` that returns ``{new_name: value}`` for the requested nodes of ``model``.

    Args:
        model: the model (it is not modified; the result shares its parameters).
        return_nodes: node names (see ``get_graph_node_names``; a module path selects that
            module's output), as a list or as ``{node_name: output_key}``.
        train_return_nodes, eval_return_nodes: separate choices per mode, instead of
            ``return_nodes``.
        tracer_kwargs, suppress_diff_warning, concrete_args: as for ``get_graph_node_names``.

    Raises:
        ValueError: the return nodes are given inconsistently, or name a node the model does
            not have.
    """
    if return_nodes is None and train_return_nodes is None and eval_return_nodes is None:
        raise ValueError("Either `return_nodes` or `train_return_nodes` and "
                         "`eval_return_nodes` together, should be specified")
    if (train_return_nodes is None) ^ (eval_return_nodes is None):
        raise ValueError("If any of `train_return_nodes` and `eval_return_nodes` are specified, "
                         "then both should be specified")
    if not ((return_nodes is None) ^ (train_return_nodes is None)):
        raise ValueError("If `train_return_nodes` and `eval_return_nodes` are specified, then "
                         "both should be specified")
    if return_nodes is not None:
        wanted = {"train": _as_dict(return_nodes), "eval": _as_dict(return_nodes)}
    else:
        wanted = {"train": _as_dict(train_return_nodes),  # type: ignore[arg-type]
                  "eval": _as_dict(eval_return_nodes)}  # type: ignore[arg-type]
    kw = _default_tracer_kwargs(tracer_kwargs)
    graphs: dict[str, fx.Graph] = {}
    names: dict[str, list[str]] = {}
    for mode in ("train", "eval"):
        tracer, graph = _trace(model, mode == "train", kw, concrete_args)
        qualnames = tracer.node_to_qualname
        names[mode] = list(qualnames.values())
        for query in wanted[mode]:
            pattern = re.compile(rf"^{re.escape(query)}(\.|$)")
            if not any(pattern.match(n) for n in names[mode]):
                raise ValueError(
                    f"node: '{query}' is not present in model. Hint: use "
                    "`get_graph_node_names` to make sure the `return_nodes` you specified are "
                    "present. It may even be that you need to specify `train_return_nodes` and "
                    "`eval_return_nodes` separately.")
        outputs = [n for n in graph.nodes if n.op == "output"]
        if not outputs:
            raise ValueError("No output nodes found in graph_module.graph.nodes")
        for n in outputs:
            graph.erase_node(n)
        # each query's node: the last one whose name is the query or lies under it
        chosen: dict[str, fx.Node] = {}
        pending = dict(wanted[mode])
        for n in reversed(graph.nodes):
            qn = qualnames.get(n)
            if qn is None:
                continue
            for query in list(pending):
                depth = query.count(".")
                if ".".join(qn.split(".")[:depth + 1]) == query:
                    chosen[pending.pop(query)] = n
                    break
            if not pending:
                break
        ordered = dict(reversed(list(chosen.items())))
        graph.output(ordered)
        graph.eliminate_dead_code()
        graph.lint()
        graphs[mode] = graph
    if not suppress_diff_warning:
        _warn_differences(names["train"], names["eval"])
    return DualGraphModule(model, graphs["train"], graphs["eval"],
                           class_name=type(model).__name__)
