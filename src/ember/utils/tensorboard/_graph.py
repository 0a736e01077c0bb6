"""``SummaryWriter.add_graph``: a model's graph as TensorBoard's ``GraphDef``.

The model runs once on the example input (in eval mode, without gradients, as PyTorch's
``add_graph`` traces it) while ember's op recorder (``autograd.function.tracer``, the hook
``torch.compile`` traces through) sees every op: its node class (``AddmmBackward0`` is
``aten::addmm``), its tensor arguments and its outputs. Forward hooks on every submodule give
each op its module scope, named as PyTorch names them (``Net/Sequential[features]/Conv2d[0]``),
so TensorBoard draws one box per module. Parameters and buffers become ``prim::GetAttr`` nodes
in their module's scope, the inputs and outputs ``IO Node``s under ``input/`` and ``output/``;
every node carries its output shapes (``_output_shapes``) and device.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from ...autograd import function as _function
from ...autograd.grad_mode import no_grad

__all__ = ["GraphNode", "trace_graph", "graph_def"]


@dataclass
class GraphNode:
    """One node of the drawn graph."""

    name: str  # "Net/Linear[fc1]/addmm": the scope, then the op (TensorBoard nests on "/")
    op: str  # "aten::addmm", "prim::GetAttr", "prim::Constant", "IO Node"
    inputs: list[str] = field(default_factory=list)  # producers ("name" or "name:k")
    shapes: list[tuple] = field(default_factory=list)  # one per output
    dtypes: list[str] = field(default_factory=list)
    device: str = ""
    attr: str = ""  # the op's other (non-tensor) arguments, as text


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z0-9])(?=[A-Z][a-z])")
_BACKWARD = re.compile(r"Backward\d*$")


def _op_name(cls: Any) -> str:
    """``aten::addmm`` for ember's Addmm (its node is PyTorch's ``AddmmBackward0``)."""
    if getattr(cls, "_tensor_io", False):  # a user's autograd.Function
        return "prim::PythonOp"
    node = getattr(getattr(cls, "_node_cls", None), "__name__", "") or cls.__name__
    return "aten::" + _CAMEL.sub("_", _BACKWARD.sub("", node)).lower()


def _device(t: Any) -> str:
    d = t.device
    return f"/device:{d.type.upper()}:{d.index or 0}"


def _version(t: Any) -> int:
    v = t._version
    return v[0] if v is not None else 0


def _short(a: Any) -> str:
    text = repr(a)
    return text if len(text) <= 60 else text[:57] + "..."


class _Recorder:
    """Turns the ops the model runs into ``GraphNode``s (``autograd.function.tracer``)."""

    def __init__(self, model: Any, tensor_type: type) -> None:
        self.tensor_type = tensor_type
        self.nodes: list[GraphNode] = []
        self.names: set[str] = set()
        self.keep: list[Any] = []  # every tensor seen stays alive, so ids are not reused
        self.made: dict[int, tuple[str, int]] = {}  # id(tensor) -> (producer, its version then)
        self.wrote: dict[int, tuple[str, int]] = {}  # id(tensor) -> (last op reading it first, v)
        root = type(model).__name__
        self.scope_of: dict[int, str] = {}
        for qualname, m in model.named_modules():
            if not qualname:
                self.scope_of[id(m)] = root
                continue
            parts = qualname.split(".")
            parent = model.get_submodule(".".join(parts[:-1])) if len(parts) > 1 else model
            self.scope_of[id(m)] = (self.scope_of[id(parent)]
                                    + f"/{type(m).__name__}[{parts[-1]}]")
        self.stack: list[str] = [root]
        # id(param or buffer), and id of its array -> (scope, attr name)
        self.attrs: dict[int, tuple[str, str]] = {}
        for named in (model.named_parameters(), model.named_buffers()):
            for qualname, t in named:
                owner, _, attr = qualname.rpartition(".")
                mod = model.get_submodule(owner) if owner else model
                self.attrs.setdefault(id(t), (self.scope_of[id(mod)], attr))
                self.attrs.setdefault(id(t._data), (self.scope_of[id(mod)], attr))
                self.keep.append(t._data)

    # --- naming ----------------------------------------------------------------------------

    def _unique(self, name: str) -> str:
        out, k = name, 0
        while out in self.names:
            k += 1
            out = f"{name}_{k}"
        self.names.add(out)
        return out

    def _add(self, name: str, op: str, tensors: list, inputs: list | None = None,
             attr: str = "") -> GraphNode:
        live = [t for t in tensors if t is not None]
        node = GraphNode(self._unique(name), op, inputs or [],
                         [tuple(t._data.shape) for t in live],
                         [str(t.dtype) for t in live], _device(live[0]) if live else "", attr)
        self.nodes.append(node)
        return node

    # --- what feeds an op ------------------------------------------------------------------

    def source(self, t: Any) -> str:
        """The node (``name`` or ``name:k``) whose output ``t`` is, adding one if needed."""
        key = id(t)
        wrote = self.wrote.get(key)
        if wrote is not None and _version(t) > wrote[1]:  # an in-place op wrote t since
            self.made[key] = (wrote[0], _version(t))
            del self.wrote[key]
        made = self.made.get(key)
        if made is not None:
            return made[0]
        self.keep.append(t)
        attr = self.attrs.get(key) or self.attrs.get(id(t._data))  # (or a tensor on its array)
        if attr is not None:
            node = self._add(f"{attr[0]}/{attr[1]}", "prim::GetAttr", [t])
        else:
            node = self._add(f"{self.stack[-1]}/constant", "prim::Constant", [t])
        self.made[key] = (node.name, _version(t))
        return node.name

    def add_input(self, name: str, t: Any) -> None:
        self.keep.append(t)
        node = self._add(f"input/{name}", "IO Node", [t])
        self.made[id(t)] = (node.name, _version(t))

    def add_output(self, i: int, t: Any) -> None:
        self._add(f"output/output.{i}", "IO Node", [t], [self.source(t)])

    # --- the recorder protocol ---------------------------------------------------------------

    def record(self, cls: Any, ctx: Any, args: tuple, raw: list, outputs: list) -> None:
        tensors = [a for a in args if isinstance(a, self.tensor_type)]
        others = [_short(a) for a in args
                  if not isinstance(a, self.tensor_type) and not hasattr(a, "shape")]
        op = _op_name(cls)
        inputs = [self.source(a) for a in tensors]
        node = self._add(f"{self.stack[-1]}/{op.split('::')[-1]}", op, list(outputs), inputs,
                         ", ".join(others))
        self.keep.extend(tensors)
        self.keep.extend(o for o in outputs if o is not None)
        k = 0
        for o in outputs:
            if o is not None:
                self.made[id(o)] = (node.name if k == 0 else f"{node.name}:{k}", _version(o))
                k += 1
        if tensors:  # an in-place op runs out of place, then writes into its first argument
            self.wrote[id(tensors[0])] = (node.name, _version(tensors[0]))

    # --- module scopes -----------------------------------------------------------------------

    def enter(self, module: Any, args: Any) -> None:
        self.stack.append(self.scope_of.get(id(module), self.stack[-1]))

    def leave(self, module: Any, args: Any, output: Any) -> None:
        if len(self.stack) > 1:
            self.stack.pop()


def _flat_tensors(obj: Any, tensor_type: type, out: list) -> list:
    """The tensors in ``obj`` (nested tuples, lists, dicts), in order."""
    todo = [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, tensor_type):
            out.append(x)
        elif isinstance(x, (tuple, list)):
            todo.extend(reversed(x))
        elif isinstance(x, dict):
            todo.extend(reversed(list(x.values())))
    return out


def trace_graph(model: Any, example_inputs: Any) -> list[GraphNode]:
    """Run ``model`` once on ``example_inputs`` (a tensor, or a tuple or list of arguments)
    and return the graph of the ops it ran."""
    import ember

    tensor_type = ember.Tensor
    if example_inputs is None:
        raise TypeError("add_graph needs an example input to run the model on: "
                        "writer.add_graph(model, torch.randn(1, 3, 32, 32)) (a tensor, or a "
                        "tuple of the forward's arguments)")
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (
        example_inputs,)
    rec = _Recorder(model, tensor_type)
    try:
        names = [p for p in inspect.signature(model.forward).parameters
                 if p not in ("args", "kwargs")]
    except (TypeError, ValueError):
        names = []
    for i, a in enumerate(args):
        for j, t in enumerate(_flat_tensors(a, tensor_type, [])):
            base = names[i] if i < len(names) else f"input.{i}"
            rec.add_input(base if j == 0 else f"{base}.{j}", t)
    modules = list(model.modules())
    modes = [m.training for m in modules]
    handles = []
    before = _function.tracer
    try:
        for m in modules:
            handles.append(m.register_forward_pre_hook(rec.enter))
            handles.append(m.register_forward_hook(rec.leave, always_call=True))
        model.eval()  # as PyTorch's add_graph: dropout off, batch norm on running statistics
        _function.tracer = rec
        with no_grad():
            out = model(*args)
    finally:
        _function.tracer = before
        for h in handles:
            h.remove()
        for m, mode in zip(modules, modes):
            m.training = mode
    for i, t in enumerate(_flat_tensors(out, tensor_type, [])):
        rec.add_output(i, t)
    return rec.nodes


def graph_def(nodes: list[GraphNode]) -> Any:
    """The nodes as TensorBoard's ``GraphDef`` (tensorboardX's protobuf types)."""
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.node_def_pb2 import NodeDef
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboardX.proto.versions_pb2 import VersionDef

    out = []
    for n in nodes:
        shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in s])
                  for s in n.shapes]
        attr = {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=shapes)),
                "dtype": AttrValue(s=", ".join(n.dtypes).encode())}
        if n.attr:
            attr["attr"] = AttrValue(s=n.attr.encode())
        out.append(NodeDef(name=n.name, op=n.op, input=n.inputs, device=n.device, attr=attr))
    return GraphDef(node=out, versions=VersionDef(producer=22))


def describe(nodes: list[GraphNode]) -> str:
    """The graph as text, one node a line (``add_graph(..., verbose=True)`` prints it)."""
    lines = []
    for n in nodes:
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in n.shapes)
        src = f" <- {', '.join(n.inputs)}" if n.inputs else ""
        lines.append(f"{n.name} = {n.op} [{shapes}]{src}")
    return "\n".join(lines)
