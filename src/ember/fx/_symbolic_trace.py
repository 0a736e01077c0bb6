"""``torch.fx._symbolic_trace``: ``Tracer``, ``symbolic_trace`` and ``wrap``.

How calls are recorded. Operators, indexing, attribute access and method calls on a ``Proxy``
are its own methods. Calls of ember's namespace functions (``torch.add``, ``F.relu``,
``torch.flatten``...) are recorded by patching: for the duration of a trace, the functions of
``ember``, ``ember.nn.functional``, ``ember.linalg``, ``ember.special`` and ``ember.ops`` (what
ember's own modules call) are replaced by thin
wrappers that record a ``call_function`` node when an argument is a ``Proxy`` and call through
otherwise; so are the names bound to them (``from torch import flatten``), to ``math``'s
functions, to ``autowrap_functions`` and to ``fx.wrap``-registered functions in the globals of
every ``forward`` the tracer runs. Everything is restored when the trace ends. ember's functions
do not dispatch ``__torch_function__`` on other classes, and adding that check to every call
would slow the normal path; the patching costs nothing outside a trace. (Other threads running
ember during a trace go through the wrappers, which only call through.)
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from .graph import Graph
from .node import Argument, Node
from .proxy import Attribute, Proxy, TraceError

__all__ = ["wrap", "is_fx_tracing", "Tracer", "symbolic_trace", "PH"]

_F = TypeVar("_F", bound=Callable[..., Any])

# (id of the calling module's globals, function name) -> those globals: the functions a tracer
# records as call_function nodes instead of tracing through them
_wrapped_fns_to_patch: dict[tuple[int, str], dict[str, Any]] = {}
_is_tracing = [0]

# namespace functions that ask about their argument's type rather than compute with it
_NOT_RECORDED = frozenset({"is_tensor", "is_storage", "typename", "is_grad_enabled",
                           "set_grad_enabled", "get_default_dtype", "_assert"})


class _PH:
    """``concrete_args`` value: a placeholder that stays symbolic (``fx.PH``)."""

    def __repr__(self) -> str:
        return "PH"


PH = _PH()


def wrap(fn_or_name: _F | str) -> _F | str:
    """Mark a module-level function (or the name of one) as a leaf for symbolic tracing.

    Call it at the top level of a module, as a decorator (``@torch.fx.wrap``) or as
    ``torch.fx.wrap("len")``. Returns its argument unchanged; while a trace runs, calls of that
    name from that module with a ``Proxy`` argument become ``call_function`` nodes.

    Raises:
        RuntimeError: ``fn_or_name`` is neither callable nor a string.
        NotImplementedError: called from inside a function rather than at module level.
    """
    if not (callable(fn_or_name) or isinstance(fn_or_name, str)):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           f"string name, got {type(fn_or_name).__name__}")
    if callable(fn_or_name):
        code = getattr(fn_or_name, "__code__", None)
        name = code.co_name if code is not None else fn_or_name.__name__  # type: ignore[union-attr]
    else:
        name = fn_or_name
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def _assert(condition: Any, message: str = "") -> None:
    """``torch._assert``: raise AssertionError(message) unless ``condition`` holds."""
    if not condition:
        raise AssertionError(message)


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running now."""
    return _is_tracing[0] > 0


def _create_arg(tracer: Any, a: Any) -> Argument:
    """``a`` with every Proxy replaced by its node (and tensors by get_attr nodes)."""
    if isinstance(a, Proxy):
        return a.node
    if isinstance(a, Node):
        return a
    if isinstance(a, tuple):
        t = tuple(_create_arg(tracer, x) for x in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [_create_arg(tracer, x) for x in a]
    if isinstance(a, dict):
        out = {}
        for k, v in a.items():
            if not isinstance(k, str):
                raise NotImplementedError(f"Keys of a dict argument must be strings, got "
                                          f"{type(k).__name__}: {k!r}")
            out[k] = _create_arg(tracer, v)
        return out
    if isinstance(a, slice):
        return slice(_create_arg(tracer, a.start), _create_arg(tracer, a.stop),
                     _create_arg(tracer, a.step))
    if isinstance(a, range):
        return range(_create_arg(tracer, a.start), _create_arg(tracer, a.stop),
                     _create_arg(tracer, a.step))
    import ember

    if isinstance(a, ember.Tensor):
        make = getattr(tracer, "_tensor_arg", None)
        if make is not None:
            return make(a)
        raise NotImplementedError("a tensor constant needs a Tracer with a root module")
    if a is None or a is Ellipsis or isinstance(
            a, (bool, int, float, complex, str, bytes, ember.dtype, ember.device, type,
                types.FunctionType, types.BuiltinFunctionType, staticmethod)):
        return a
    import enum

    if isinstance(a, enum.Enum):
        return a
    raise NotImplementedError(f"argument of type: {type(a)}")


def _find_proxy(args: tuple, kwargs: dict) -> Proxy | None:
    stack: list[Any] = [args, kwargs]
    while stack:
        x = stack.pop()
        if isinstance(x, Proxy):
            return x
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, slice):
            stack.extend((x.start, x.stop, x.step))
    return None


def _recording(fn: Any, wrapped: bool = False) -> Callable[..., Any]:
    """A stand-in for ``fn`` during a trace: records a call_function node on a Proxy argument.

    ``wrapped``: ``fn`` is a leaf by ``fx.wrap`` or autowrap; its nodes are marked
    (``meta["is_wrapped"]``) so the generated code wraps it again, as PyTorch's does.
    """
    call = fn.__func__ if isinstance(fn, staticmethod) else fn

    @functools.wraps(call)
    def patched(*args: Any, **kwargs: Any) -> Any:
        p = _find_proxy(args, kwargs)
        if p is None:
            return call(*args, **kwargs)
        proxy = p.tracer.create_proxy("call_function", fn, args, kwargs)
        if wrapped:
            proxy.node.meta["is_wrapped"] = True
        return proxy
    patched.__fx_original__ = fn  # type: ignore[attr-defined]
    return patched


class _Patcher:
    """Sets attributes and dict entries for the trace and puts them back afterwards."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._visited: set[int] = set()

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        had = name in vars(obj)
        old = vars(obj).get(name)
        setattr(obj, name, value)
        self._undo.append(lambda: setattr(obj, name, old) if had else delattr(obj, name))

    def setitem(self, d: dict, name: str, value: Any) -> None:
        had = name in d
        old = d.get(name)
        d[name] = value

        def undo() -> None:
            if had:
                d[name] = old
            else:
                d.pop(name, None)
        self._undo.append(undo)

    def visit_once(self, d: dict) -> bool:
        if id(d) in self._visited:
            return False
        self._visited.add(id(d))
        return True

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._undo:
            self._undo.pop()()


def _namespaces() -> list[types.ModuleType]:
    import ember
    import ember.nn.functional as F
    import ember.ops as ops
    import ember.ops.nn as ops_nn

    # ember.ops / ember.ops.nn: what ember's own modules call (a module subclass that keeps
    # Linear's or Conv2d's forward is traced through it, as in PyTorch)
    mods = [ember, F, ops, ops_nn]
    for name in ("ember.linalg", "ember.special"):
        try:
            __import__(name)
        except ImportError:
            continue
        mods.append(sys.modules[name])
    return mods


class Tracer:
    """Records a module's ``forward`` (or a function) as a ``Graph`` by running it on Proxies.

    Args:
        autowrap_modules: modules whose functions, when a traced ``forward``'s globals name
            them, are recorded as call_function nodes (default: ``math``).
        autowrap_functions: more functions recorded that way.
        param_shapes_constant: accepted for PyTorch's signature (ember reads parameter shapes
            through get_attr nodes either way).
    """

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap_function_ids: set[int] = {
            id(v) for m in autowrap_modules for k, v in vars(m).items()
            if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search: list[types.ModuleType] = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.proxy_buffer_attributes = True
        self.submodule_paths: dict[int, str] | None = None
        self.root: Any = None
        self.graph: Graph = Graph()
        self.tensor_attrs: dict[int, str] = {}
        self.scope = None

    # --- the hooks subclasses override ----------------------------------------------------------

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """Whether ``m`` becomes one call_module node (True) or is traced through (False):
        ember's own ``nn`` modules are leaves, ``nn.Sequential`` is traced through."""
        import ember.nn as nn

        mod = type(m).__module__
        return (mod.startswith("ember.nn") or mod.startswith("torch.nn")) \
            and not isinstance(m, nn.Sequential)

    def path_of_module(self, mod: Any) -> str:
        """The qualified name of ``mod`` inside the root module.

        Raises:
            NameError: ``mod`` is not a submodule of the root.
        """
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for name, m in self.root.named_modules():
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Any, forward: Callable[..., Any], args: tuple,
                    kwargs: dict) -> Any:
        """A leaf module becomes a call_module node; any other is traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            self._autowrap_globals(getattr(getattr(m, "forward", m), "__globals__", {}))
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """What ``module.attr`` gives during the trace: a get_attr proxy for a parameter (and
        a buffer), the value itself otherwise."""
        import ember
        import ember.nn as nn

        def lookup(named: Any) -> Any:
            for n, p in named:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, nn.Parameter):
            found = lookup(self.root.named_parameters())
            if found is not None:
                return found
        elif self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            found = lookup(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    def create_arg(self, a: Any) -> Argument:
        """``a`` as a node argument: proxies become nodes, tensors get_attr nodes."""
        return _create_arg(self, a)

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Record a node (arguments through ``create_arg``) and return its proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)``: control flow on a traced value cannot be recorded.

        Raises:
            TraceError: always.
        """
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Any:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. Unpack "
                         "a fixed number of values (a, b = proxy) or index it instead")

    def keys(self, obj: Proxy) -> Any:
        return Attribute(obj, "keys")()

    # --- tensors that are not inputs -------------------------------------------------------------

    def _tensor_arg(self, t: Any) -> Node:
        import ember.nn as nn

        path = self.tensor_attrs.get(id(t))
        if path is not None:
            return self.create_node("get_attr", path, (), {})
        if isinstance(t, nn.Parameter):
            raise NameError("parameter is not a member of this module")
        i = 0
        while hasattr(self.root, f"_tensor_constant{i}"):
            i += 1
        qualname = f"_tensor_constant{i}"
        object.__setattr__(self.root, qualname, t)
        self.tensor_attrs[id(t)] = qualname
        return self.create_node("get_attr", qualname, (), {})

    # --- the trace ------------------------------------------------------------------------------

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Run ``root`` (an ``nn.Module`` or a function) on Proxies and return its Graph.

        Args:
            root: what to trace.
            concrete_args: values for some arguments, fixed in the trace (a control-flow
                flag, say); ``fx.PH`` keeps an entry symbolic.

        Raises:
            TraceError: the program branched or looped on a traced value.
        """
        import ember.nn as nn

        if isinstance(root, nn.Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = nn.Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}
        seen_mods: set[int] = set()
        for mod_name, mod in self.root.named_modules():
            if id(mod) in seen_mods:
                continue
            seen_mods.add(id(mod))
            prefix = f"{mod_name}." if mod_name else ""
            import ember

            for k, v in vars(mod).items():
                if isinstance(v, ember.Tensor):
                    self.tensor_attrs.setdefault(id(v), prefix + k)
            for k, v in list(mod._parameters.items()) + list(mod._buffers.items()):
                if v is not None:
                    self.tensor_attrs.setdefault(id(v), prefix + k)
        self.submodule_paths = {}
        for name, m in self.root.named_modules():
            self.submodule_paths.setdefault(id(m), name)

        fn_globals = getattr(fn, "__globals__", {})
        fn_for_analysis = inspect.unwrap(fn)
        _is_tracing[0] += 1
        try:
            with _Patcher() as patcher:
                self._patcher = patcher
                self._patch_namespaces()
                self._patch_module_calls(nn)
                self._patch_wrapped()
                self._autowrap_globals(fn_globals)
                for m in self._autowrap_search:
                    self._autowrap_globals(vars(m))
                args = self._create_args_for_root(fn_for_analysis, isinstance(root, nn.Module),
                                                  concrete_args)
                result = fn(*args)
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=self._return_type(fn_for_analysis))
        finally:
            _is_tracing[0] -= 1
            self._patcher = None  # type: ignore[assignment]
            self.submodule_paths = None
        return self.graph

    @staticmethod
    def _return_type(fn: Callable) -> Any:
        try:
            ret = typing.get_type_hints(fn).get("return")
        except Exception:  # noqa: BLE001 - an unresolvable annotation is simply not recorded
            return None
        return ret if isinstance(ret, type) else None

    def _create_args_for_root(self, fn: Callable, is_module: bool,
                              concrete_args: dict[str, Any] | None) -> list[Any]:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        args: list[Any] = []
        if is_module:
            params = params[1:]
            args.append(self.root)
        concrete_args = dict(concrete_args or {})
        try:  # annotations written as strings (``from __future__ import annotations``)
            hints = typing.get_type_hints(fn)
        except Exception:  # noqa: BLE001 - an unresolvable annotation is simply not recorded
            hints = {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError(
                    f"symbolic_trace: forward's *{p.name}/**{p.name} parameters are not "
                    "supported by ember's tracer; give forward named parameters")
            ann = hints.get(p.name)
            if not isinstance(ann, type):
                ann = None
            if p.name in concrete_args and concrete_args[p.name] is not PH:
                value = concrete_args[p.name]
                ph = self.create_proxy("placeholder", f"{p.name}_1", () if p.default is p.empty
                                       else (p.default,), {})
                if value is not None and isinstance(value, (bool, int, float, str)):
                    eq = ph == value
                    self.create_proxy("call_function", _assert, (
                        eq, f"{p.name} has been specialized to have value {value} but got "
                        "another value"), {})
                args.append(value)
                continue
            default = () if p.default is p.empty else (p.default,)
            args.append(self.create_proxy("placeholder", p.name, default, {}, type_expr=ann))
        return args

    def _patch_namespaces(self) -> None:
        patcher = self._patcher
        self._recorders: dict[int, Callable] = {}
        for mod in _namespaces():
            for k, v in list(vars(mod).items()):
                if k.startswith("__") or k in _NOT_RECORDED or isinstance(v, type) \
                        or not isinstance(v, (types.FunctionType, types.BuiltinFunctionType,
                                              staticmethod)):
                    continue
                rec = self._recorders.get(id(v))
                if rec is None:
                    rec = self._recorders[id(v)] = _recording(v)
                patcher.setattr(mod, k, rec)

    def _patch_module_calls(self, nn: Any) -> None:
        tracer = self
        orig_call = nn.Module.__call__
        orig_getattr = nn.Module.__getattr__
        cache: dict[str, Proxy] = {}

        def module_call(mod: Any, *args: Any, **kwargs: Any) -> Any:
            def forward(*a: Any, **k: Any) -> Any:
                return orig_call(mod, *a, **k)
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr(mod: Any, attr: str) -> Any:
            val = orig_getattr(mod, attr)
            return tracer.getattr(attr, val, cache)

        self._patcher.setattr(nn.Module, "__call__", module_call)
        self._patcher.setattr(nn.Module, "__getattr__", module_getattr)

    def _patch_wrapped(self) -> None:
        for (_, name), g in list(_wrapped_fns_to_patch.items()):
            orig = g.get(name, getattr(builtins, name, None))
            if orig is None:
                continue
            self._patcher.setitem(g, name, _recording(orig, wrapped=True))

    def _autowrap_globals(self, g: dict) -> None:
        """Patch the names in a traced forward's globals bound to recorded functions."""
        if not g or not self._patcher.visit_once(g):
            return
        for name, v in list(g.items()):
            if name.startswith("__"):
                continue
            if id(v) in self._autowrap_function_ids:
                self._patcher.setitem(g, name, _recording(v, wrapped=True))
            elif id(v) in self._recorders:
                self._patcher.setitem(g, name, self._recorders[id(v)])


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
    """Trace ``root`` (an ``nn.Module`` or a function) into a ``GraphModule``.

    Raises:
        TraceError: the program's control flow depends on a traced value; pass the deciding
            arguments in ``concrete_args`` or make the branching code a leaf (``fx.wrap``).
    """
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if not isinstance(root, types.FunctionType) \
        else root.__name__
    return GraphModule(tracer.root, graph, name)
