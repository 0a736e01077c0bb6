"""``torch.library``: define new operators from Python (``custom_op``, ``Library``), give them a
fake (meta) implementation and an autograd formula, and call them as ``torch.ops.<ns>.<name>``.

A custom op is opaque to autograd, as in PyTorch: its function runs without recording a graph,
and gradients flow through it only by the formula given to ``register_autograd`` (backward
without one raises PyTorch's error). ``register_fake`` supplies the result's shape and dtype from
the inputs' metadata: ember runs it when the op is called on ``meta`` tensors.
``register_kernel(op, "cpu", fn)`` replaces the implementation for that device. Ops defined
through ``Library(ns, "DEF").define(schema)`` get their function from ``impl`` (a
``CompositeImplicitAutograd`` function is differentiated through its own ops).
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import ember as torch

from .autograd.function import Function

__all__ = ["Library", "custom_op", "register_fake", "register_autograd", "register_kernel",
           "define", "impl", "CustomOpDef", "infer_schema"]

_OPS: dict[str, CustomOpDef] = {}  # "ns::name" -> its definition


def _split(qualname: str) -> tuple[str, str]:
    if "::" not in qualname:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator "
                         f"name should look something like ns::foo")
    ns, name = qualname.split("::", 1)
    if "." in name:
        raise ValueError(f"The torch.custom_ops APIs do not handle overloads, i.e. operator "
                         f"names with '.' in them. Please name your operator something like "
                         f"{ns}::{name.replace('.', '_')}")
    return ns, name


_TYPE_NAMES = {"Tensor": "Tensor", "int": "SymInt", "float": "float", "bool": "bool",
               "str": "str"}


def infer_schema(prototype_function: Callable, /, *, mutates_args: Any,
                 op_name: str | None = None) -> str:
    """The operator schema PyTorch infers from a function's type annotations, e.g.
    ``(Tensor x, float k) -> Tensor``; every parameter must be annotated."""
    sig = inspect.signature(prototype_function)
    params = []
    for p in sig.parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type "
                             f"annotation. Got func with signature {sig})")
        ann = p.annotation if isinstance(p.annotation, str) else getattr(
            p.annotation, "__name__", str(p.annotation))
        params.append(f"{_TYPE_NAMES.get(ann.rsplit('.', 1)[-1], ann)} {p.name}")
    ret = sig.return_annotation
    ret_name = "()" if ret in (None, "None") else (
        ret if isinstance(ret, str) else getattr(ret, "__name__", str(ret)))
    ret_name = _TYPE_NAMES.get(str(ret_name).rsplit(".", 1)[-1], ret_name)
    return f"({', '.join(params)}) -> {ret_name}"


class _OpPacket:
    """``torch.ops.<ns>.<name>``: calls the op; ``.default`` is its one overload."""

    def __init__(self, op: CustomOpDef, overload: str = "") -> None:
        self._op = op
        self._overload = overload
        self.__name__ = op._name
        if not overload:
            self.default = _OpPacket(op, "default")

    def overloads(self) -> list[str]:
        return ["default"]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._op(*args, **kwargs)

    def __repr__(self) -> str:
        if self._overload:
            return f"{self}"
        return f"<OpOverloadPacket(op='{self}')>"

    def __str__(self) -> str:
        tail = f".{self._overload}" if self._overload else ""
        return f"{self._op._namespace}.{self._op._name}{tail}"


class _Namespace:
    """``torch.ops.<ns>``: the operators defined under that namespace."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._ops: dict[str, _OpPacket] = {}

    def __getattr__(self, name: str) -> Any:
        ops = self.__dict__.get("_ops", {})
        if name in ops:
            return ops[name]
        raise AttributeError(f"'_OpNamespace' '{self.__dict__.get('name')}' object has no "
                             f"attribute '{name}'")


def _namespace(ns: str) -> _Namespace:
    ops_module = sys.modules.get("ember.ops") or __import__("ember.ops").ops
    found = ops_module.__dict__.get(ns)
    if found is None:
        found = _Namespace(ns)
        setattr(ops_module, ns, found)  # torch.ops.<ns>
    elif not isinstance(found, _Namespace):
        raise RuntimeError(f"torch.library: the namespace {ns!r} is taken by ember's own "
                           f"torch.ops.{ns}; define the operator under another namespace")
    return found


class _NoFormula(Function):
    """The node of a custom op without an autograd formula: backward raises."""

    @staticmethod
    def forward(ctx: Any, name: str, out: Any, *inputs: Any) -> Any:
        ctx.name = name
        return out.clone()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(f"Trying to backward through {ctx.name}.default but no autograd "
                           f"formula was registered. Please use register_autograd to add one.")


class CustomOpDef:
    """A custom operator: call it like its function; ``register_fake``, ``register_autograd``
    and ``register_kernel`` add its other parts (also reachable as ``torch.library.*``)."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable | None,
                 mutates_args: Any, composite: bool = False) -> None:
        self._namespace, self._name, self._schema = namespace, name, schema
        self._init_fn = fn
        self._kernels: dict[str, Callable] = {}
        self._fake: Callable | None = None
        self._backward: Callable | None = None
        self._setup_context: Callable | None = None
        self._composite = composite
        self._mutates_args = mutates_args
        self._signature = inspect.signature(fn) if fn is not None else None

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def register_fake(self, fn: Callable, /) -> Callable:
        self._fake = fn
        return fn

    def register_kernel(self, device_types: str | Sequence[str] | None,
                        fn: Callable | None = None, /) -> Any:
        def add(f: Callable) -> Callable:
            types = [device_types] if isinstance(device_types, str) or device_types is None \
                else list(device_types)
            for t in types:
                self._kernels[str(t or "default").split(":")[0]] = f
            return f

        return add if fn is None else add(fn)

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        self._backward, self._setup_context = backward, setup_context

    def _impl_for(self, args: tuple) -> Callable:
        device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        fn = self._kernels.get(device) or self._kernels.get("default") or self._init_fn
        if fn is None:
            raise NotImplementedError(f"{self._qualname}: no implementation for device "
                                      f"{device!r} (Library.impl or register_kernel adds one)")
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._signature is not None and kwargs:
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = tuple(bound.args), dict(bound.kwargs)
        tensors = [a for a in _leaves(args) if isinstance(a, torch.Tensor)]
        if tensors and all(t.device.type == "meta" for t in tensors):
            if self._fake is None:
                raise RuntimeError(f"There was no fake impl registered for {self!r}. This is "
                                   f"necessary for torch.compile/export/fx tracing to work. "
                                   f"Please use `{self._name}.register_fake` to add an fake impl.")
            return self._fake(*args, **kwargs)
        fn = self._impl_for(args)
        if self._composite:  # differentiated through the ops it runs
            return fn(*args, **kwargs)
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
        if needs_grad and self._backward is not None:
            return _Formula.apply(self, fn, kwargs, *args)
        with torch.no_grad():
            out = fn(*args, **kwargs)
        if not needs_grad:
            return out
        if isinstance(out, torch.Tensor) and out.is_floating_point():
            return _NoFormula.apply(f"{self._namespace}.{self._name}", out, *tensors)
        return out


class _Formula(Function):
    """A custom op with a registered autograd formula: forward runs the op without a graph and
    ``setup_context``; backward is the user's."""

    @staticmethod
    def forward(ctx: Any, op: CustomOpDef, fn: Callable, kwargs: dict, *args: Any) -> Any:
        with torch.no_grad():
            out = fn(*args, **kwargs)
        if op._setup_context is not None:
            op._setup_context(ctx=ctx, inputs=args, output=out)
        ctx._op = op
        ctx._n_args = len(args)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        result = ctx._op._backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != ctx._n_args:
            raise RuntimeError(f"{ctx._op._qualname}: the backward formula returned "
                               f"{len(result)} gradients, but the op has {ctx._n_args} inputs "
                               "(return None for the inputs that have none)")
        return (None, None, None, *result)


def _leaves(args: Iterable) -> list:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out


def _register(op: CustomOpDef) -> CustomOpDef:
    _OPS[op._qualname] = op
    _namespace(op._namespace)._ops[op._name] = _OpPacket(op)
    return op


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: Any,
              device_types: str | Sequence[str] | None = None,
              schema: str | None = None, tags: Any = None) -> Any:
    """Make ``fn`` the operator ``torch.ops.<ns>.<name>`` (``name`` is ``"ns::name"``); used as
    a decorator when ``fn`` is left out. Every parameter needs a type annotation (unless
    ``schema`` is given); ``mutates_args`` names the arguments it writes to (``()``: none)."""

    def inner(f: Callable) -> CustomOpDef:
        op_schema = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        ns, opname = _split(name)
        if ns == "aten":
            raise RuntimeError("custom_op: the aten namespace is PyTorch's own")
        op = CustomOpDef(ns, opname, op_schema, f, mutates_args)
        if device_types is not None:
            op._init_fn = None
            op.register_kernel(device_types, f)
        return _register(op)

    return inner if fn is None else inner(fn)


def _lookup(op: Any) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, _OpPacket):
        return op._op
    key = str(op)
    if "::" not in key and "." in key:
        key = key.replace(".", "::", 1)
    found = _OPS.get(key)
    if found is None:
        raise ValueError(f"torch.library: no operator {op!r} was defined (custom_op or "
                         f"Library.define define one)")
    return found


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1, allow_override: bool = False) -> Any:
    """The function that gives an op's outputs' shapes and dtypes from its inputs' metadata
    (run on ``meta`` tensors); usable as a decorator."""
    def add(f: Callable) -> Callable:
        return _lookup(op).register_fake(f)

    return add if func is None else add(func)


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Any = None) -> None:
    """``backward(ctx, *grads)`` returns one gradient per input; ``setup_context(ctx, inputs,
    output)`` saves what it needs (``ctx.save_for_backward``)."""
    _lookup(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op: Any, device_types: str | Sequence[str] | None,
                    func: Callable | None = None, /, *, lib: Any = None) -> Any:
    return _lookup(op).register_kernel(device_types, func)


_SCHEMA_NAME = re.compile(r"^\s*([A-Za-z_][\w]*)(?:\.[\w]+)?\s*\(")


class Library:
    """``Library(ns, "DEF" | "IMPL" | "FRAGMENT")``: define operators under ``ns`` from schema
    strings (``lib.define("foo(Tensor x) -> Tensor")``) and give them functions
    (``lib.impl("foo", fn, "CompositeExplicitAutograd")``)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs: set[str] = set()

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        m = _SCHEMA_NAME.match(schema)
        if m is None:
            raise RuntimeError(f"Library.define: cannot read an operator name from {schema!r}")
        name = m.group(1)
        qualname = f"{self.ns}::{name}"
        if qualname not in _OPS:
            _register(CustomOpDef(self.ns, name, schema[m.end() - 1:], None, ()))
        self._op_defs.add(qualname)
        return name

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", *,
             with_keyset: bool = False, allow_override: bool = False) -> None:
        name = op_name if isinstance(op_name, str) else str(op_name).split(".")[-1]
        name = name.split("::")[-1].split(".")[0]
        op = _lookup(f"{self.ns}::{name}")
        key = dispatch_key or self.dispatch_key
        if key in ("CompositeImplicitAutograd", "Autograd"):
            op._composite = True
        if key == "Meta":
            op._fake = fn
            return
        op._init_fn = fn
        op._signature = inspect.signature(fn)

    def _register_fake(self, op_name: str, fn: Callable, _stacklevel: int = 1, *,
                       allow_override: bool = False) -> None:
        _lookup(f"{self.ns}::{op_name.split('::')[-1]}").register_fake(fn)


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Any = ()) -> None:
    """Define the operator ``qualname`` (``"ns::name"``) with ``schema`` (``"(Tensor x) ->
    Tensor"``); its function comes from ``impl``."""
    ns, name = _split(qualname)
    (lib or Library(ns, "FRAGMENT")).define(name + schema, tags=tags)


def impl(qualname: str, types: str | Sequence[str], func: Callable | None = None, *,
         lib: Library | None = None) -> Any:
    """Give the operator ``qualname`` its function for ``types`` (a device type such as
    ``"cpu"``, or a dispatch key); usable as a decorator."""
    def add(f: Callable) -> Callable:
        ns, name = _split(qualname)
        keys = [types] if isinstance(types, str) else list(types)
        (lib or Library(ns, "FRAGMENT")).impl(name, f, keys[0] if keys else "")
        return f

    return add if func is None else add(func)
