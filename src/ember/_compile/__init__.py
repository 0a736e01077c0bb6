"""``ember.compile`` (``torch.compile``): trace a model's step once, then replay it without
ember's per-op Python dispatch.

``compile(model)`` returns a wrapper like PyTorch's: a module comes back as an
``OptimizedModule`` (the original under ``_orig_mod``, so ``state_dict`` keys carry PyTorch's
``_orig_mod.`` prefix and checkpoints interchange), a function as a function.

What a call does (``_CompiledFn.__call__``):

1. *Guards.* The key is: every tensor argument's array type (device), shape, dtype and
   ``requires_grad``; the other arguments by value; grad mode; every submodule's ``training``
   flag and the identity of every parameter and buffer (of the compiled module, or of modules
   and tensors the compiled function reaches through its closure and globals). Within an entry,
   each outside tensor's shape/dtype/``requires_grad`` is checked again.
2. *Trace.* A new key runs the region eagerly with a recorder installed (``trace.py``): every
   ``Function.apply`` is recorded. The second call with that key is traced again, and only if
   both traces agree (same ops, same wiring, same constants) is the program trusted: a
   constant that changed came from tensor data or an unrecorded random draw, and that key then
   stays eager. Graph breaks (``item()``, ``bool()``, ``tolist()``, ``numpy()``,
   ``__index__``, ``nonzero``...) make the key eager too, or raise ``Unsupported`` under
   ``fullgraph=True``.
3. *Replay* (``replay.py``), from the third call: the recorded ops' ``forward`` rules run on
   arrays, and the region is one ``CompiledFunctionBackward`` node in the autograd graph, whose
   backward runs the recorded ``backward`` rules in reverse.

Python state other than the guarded values (globals, attributes read in ``forward``, Python
numbers computed inside) is baked into the trace, as in PyTorch without its extra guards.
"""

from __future__ import annotations

import functools
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd import grad_mode
from ..nn.modules.module import Module
from . import codegen, guards
from .replay import ShapeChanged, make_outputs, run_forward
from .trace import GraphBreak, Patches, Program, Tracer, same

__all__ = ["compile", "OptimizedModule", "stats", "reset"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")

# what compile did, for tests and reports: counts, and the last reason a key stayed eager;
# compile_seconds: all the time of the traced calls (the two eager runs under the recorder,
# comparing them, generating code, building C); run_seconds: of that, the region's own runs
# under the recorder (each traced call computes its result eagerly); codegen_seconds: generating
# the Python and C and building or loading the C (cc.stats["build_seconds"]: the compiler alone)
stats: dict[str, Any] = {"traces": 0, "compiled": 0, "replays": 0, "eager": 0,
                         "recompiles": 0, "last_reason": None, "compile_seconds": 0.0,
                         "run_seconds": 0.0, "codegen_seconds": 0.0}
_live: weakref.WeakSet = weakref.WeakSet()
_SCALARS = (type(None), bool, int, float, complex, str)
_NOTHING_OUTSIDE: tuple = ((), ())  # the module guard's key of a function that reaches nothing


def reset() -> None:
    """Forget every compiled program (``torch._dynamo.reset()``): the next calls trace again."""
    for c in list(_live):
        c.cache.clear()
    for k in ("traces", "compiled", "replays", "eager", "recompiles"):
        stats[k] = 0
    stats["last_reason"] = None
    stats["compile_seconds"] = stats["run_seconds"] = stats["codegen_seconds"] = 0.0


def _flatten(obj: Any, leaves: list) -> Any:
    """The structure of nested tuples/lists/dicts, with the leaves appended to ``leaves``."""
    t = type(obj)
    if t is tuple or t is list:
        return (t, tuple(_flatten(x, leaves) for x in obj))
    if t is dict:
        return (dict, tuple(obj), tuple(_flatten(v, leaves) for v in obj.values()))
    if isinstance(obj, tuple) and hasattr(t, "_fields"):  # a named tuple (torch.return_types:
        return (t, tuple(_flatten(x, leaves) for x in obj))  # max(x, dim), sort, topk...)
    leaves.append(obj)
    return None


_FLAT_SPECS: dict[int, Any] = {}


def _flat_spec(n: int) -> Any:
    """``_flatten``'s spec of ``(args, {})`` for ``n`` arguments that are not containers."""
    spec = _FLAT_SPECS.get(n)
    if spec is None:
        spec = _FLAT_SPECS[n] = _flatten((tuple(range(n)), {}), [])
    return spec


def _unflatten(spec: Any, it: Any) -> Any:
    if spec is None:
        return next(it)
    if spec[0] is dict:
        return {k: _unflatten(s, it) for k, s in zip(spec[1], spec[2])}
    items = [_unflatten(s, it) for s in spec[1]]
    t = spec[0]
    return items if t is list else tuple(items) if t is tuple else t(*items)


def _roots(fn: Any, cache: list | None = None) -> tuple[list, list]:
    """Modules and tensors a compiled function reaches through its closure, the globals it
    names and its ``self``: their tensors are read live at each call and guarded on. With
    ``cache`` (a list of one item), the answer is reused while the objects found are the same
    ones and none is a container or an optimizer (whose contents can change in place)."""
    objs = _root_objects(fn)
    if cache is not None:
        ids = tuple(map(id, objs))
        hit = cache[0]
        if hit is not None and hit[0] == ids:
            return hit[1], hit[2]
    mods: list = []
    tensors: list = []
    plain = True
    for o in objs:
        if isinstance(o, (dict, list, tuple)):
            plain = False
        for x in (o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else (o,)):
            if isinstance(x, Module):
                mods.append(x)
            elif isinstance(x, TensorBase):
                tensors.append(x)
            elif hasattr(x, "param_groups") and hasattr(x, "state"):  # an optimizer
                plain = False
                for group in x.param_groups:
                    tensors.extend(group["params"])
    if cache is not None:
        # (the objects themselves are kept: while held, no new object can take their ids)
        cache[0] = (ids, mods, tensors, objs) if plain else None
    return mods, tensors


def _root_objects(fn: Any) -> list:
    """What ``_roots`` looks through: ``functools.partial`` arguments, a method's ``self``, the
    closure's cells and the globals the code names, as they are now."""
    objs: list = []
    target = fn
    if isinstance(target, functools.partial):
        objs.extend(target.args)
        objs.extend(target.keywords.values())
        target = target.func
    if isinstance(target, types.MethodType):
        objs.append(target.__self__)
        target = target.__func__
    code = getattr(target, "__code__", None)
    if code is not None:
        for cell in getattr(target, "__closure__", None) or ():
            try:
                objs.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        g = getattr(target, "__globals__", {})
        for name in code.co_names:
            if name in g:
                objs.append(g[name])
    return objs


_dynamo_module: Any = None  # ember._dynamo, which imports this module: bound on the first call


def _load_dynamo() -> Any:
    global _dynamo_module
    from .. import _dynamo

    _dynamo_module = _dynamo
    return _dynamo


class _Entry:
    __slots__ = ("state", "prog", "reason")

    def __init__(self) -> None:
        self.state = "new"  # new -> traced -> compiled | eager
        self.prog: Program | None = None
        self.reason: str | None = None


class _CompiledFn:
    """The cache and the call path of one compiled callable."""

    def __init__(self, fn: Callable, module: Module | None, fullgraph: bool,
                 recompile_limit: int | None = None) -> None:
        self.fn = fn
        self.module = module
        self.fullgraph = fullgraph
        self.recompile_limit = recompile_limit  # None: torch._dynamo.config.cache_size_limit
        self.cache: dict = {}
        self._mods_cache: Any = None  # (ids of the roots, [(module, its children)])
        self._roots_cache: list = [None]  # _roots' last answer, by the objects' identities
        # a plain function with no closure that names no globals reaches nothing outside its
        # arguments, now or later: its module guard is always empty (no walk per call)
        code = getattr(fn, "__code__", None)
        self._reaches_nothing = (
            module is None and type(fn) is types.FunctionType and code is not None
            and not fn.__closure__ and not code.co_names)
        _live.add(self)

    def _outside(self, want_tensors: bool = False) -> tuple[list | None, tuple]:
        """The guard on modules: every submodule's ``training`` flag and the identity of every
        parameter, buffer and child; with ``want_tensors``, the outside tensors (parameters,
        buffers...) too, for a trace."""
        if self.module is not None:
            roots = [self.module]
            extra: list = []
        elif self._reaches_nothing:
            return ([] if want_tensors else None), _NOTHING_OUTSIDE
        else:
            roots, extra = _roots(self.fn, self._roots_cache)
        ids = list(map(id, roots))
        cached = self._mods_cache
        if cached is None or cached[0] != ids:
            cached = self._modules_of(roots, ids)
        mods = cached[1]
        key = guards.module_key(mods, cached[2], extra)
        if key is None:  # a child was replaced: walk again
            self._modules_of(roots, ids)
            return self._outside(want_tensors)
        tensors = None
        if want_tensors:
            tensors = [t for m in mods
                       for t in (*m._parameters.values(), *m._buffers.values()) if t is not None]
            tensors.extend(extra)
        return tensors, key

    def _modules_of(self, roots: list, ids: list) -> Any:
        """Every module under ``roots``, once each, with its children as seen now (cached)."""
        seen: dict = {}
        for root in roots:
            for m in root.modules():
                seen.setdefault(id(m), m)
        mods = list(seen.values())
        self._mods_cache = (ids, mods, [dict(m._modules) for m in mods])
        return self._mods_cache

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _dynamo = _dynamo_module or _load_dynamo()
        if _function.tracer is not None or _function.anomaly_enabled or _dynamo._disabled():
            return self.fn(*args, **kwargs)  # inside another trace: its ops are recorded there
        leaves: Any = args  # the common call: flat positional arguments, keyed in one pass
        key_parts = None if kwargs else guards.arg_key(args)
        if key_parts is not None:
            spec = _flat_spec(len(args))
        else:
            leaves = []
            spec = _flatten((args, kwargs), leaves)
            key_parts = guards.arg_key(tuple(leaves))  # (flattened: no containers left)
        mod_key = self._outside()[1]
        key = (spec, key_parts, grad_mode.state.enabled, mod_key)
        try:
            entry = self.cache.get(key)
        except TypeError:  # an unhashable argument: no guard can be built
            stats["eager"] += 1
            return self.fn(*args, **kwargs)
        if entry is None:
            limit = self.recompile_limit
            if len(self.cache) >= (_dynamo.config.cache_size_limit if limit is None else limit):
                stats["eager"] += 1
                stats["last_reason"] = "cache_size_limit reached"
                return self.fn(*args, **kwargs)
            if self.cache:
                stats["recompiles"] += 1
            entry = self.cache[key] = _Entry()
        if entry.state == "compiled":
            prog = entry.prog
            if guards.guards_hold(prog.free):
                try:
                    if prog.fwd_fn is not None:  # the generated forward (codegen.py)
                        vals, ctxs = prog.fwd_fn(leaves)
                    else:
                        vals, ctxs = run_forward(prog, leaves)
                except ShapeChanged:
                    entry.state, entry.reason = "eager", "a data-dependent shape"
                    stats["last_reason"] = entry.reason
                    return self.fn(*args, **kwargs)
                stats["replays"] += 1
                out_fn = prog.out_fn
                out_leaves = out_fn(vals, ctxs, leaves) if out_fn is not None else \
                    make_outputs(prog, vals, ctxs, leaves)
                spec = prog.out_spec[0]
                return out_leaves[0] if spec is None else _unflatten(spec, iter(out_leaves))
            entry.state = "new"
            stats["recompiles"] += 1
        if entry.state == "eager":
            stats["eager"] += 1
            return self.fn(*args, **kwargs)
        return self._trace(entry, args, kwargs, leaves, self._outside(True)[0])

    def _trace(self, entry: _Entry, args: tuple, kwargs: dict, leaves: Any,
               outside: list) -> Any:
        t0 = time.perf_counter()
        flat = [(i, x) for i, x in enumerate(leaves) if isinstance(x, TensorBase)]
        tracer = Tracer(flat, outside, self.fullgraph)
        stats["traces"] += 1
        _function.tracer = tracer
        try:
            with Patches(tracer):
                out = self.fn(*args, **kwargs)
        except GraphBreak as e:
            from .._dynamo.exc import Unsupported

            raise Unsupported(str(e)) from None
        finally:
            _function.tracer = None
            stats["run_seconds"] += time.perf_counter() - t0
        out_leaves: list = []
        out_spec = _flatten(out, out_leaves)
        prog = None
        if all(isinstance(x, (TensorBase, *_SCALARS)) for x in out_leaves):
            prog = tracer.finish(out_leaves, out_spec)
        else:
            tracer.fail("the region returns something other than tensors and numbers in "
                        "tuples, lists and dicts")
        if prog is None:
            entry.state, entry.reason = "eager", tracer.reason
            stats["last_reason"] = tracer.reason
            if self.fullgraph and tracer.reason and tracer.reason.startswith("graph break"):
                from .._dynamo.exc import Unsupported

                raise Unsupported(tracer.reason)
        elif entry.state == "new":
            entry.state, entry.prog = "traced", prog
        elif same(entry.prog, prog):
            entry.state, entry.prog = "compiled", prog
            if codegen.enabled:
                t1 = time.perf_counter()
                codegen.generate(prog)
                stats["codegen_seconds"] += time.perf_counter() - t1
            stats["compiled"] += 1
        else:
            entry.state = "eager"
            entry.reason = stats["last_reason"] = (
                "two traces differ (a constant made from tensor data, or a random draw "
                "outside ember's recorded ops)")
            entry.prog = None
        stats["compile_seconds"] += time.perf_counter() - t0
        return out


class _CompileContext:
    """``OptimizedModule.dynamo_ctx``: the compile call's settings as a decorator, as PyTorch's
    ``OptimizeContext`` is (``ctx(fn)`` is ``fn`` compiled with them; ``fullgraph`` read back).
    Libraries test for it to tell a compiled module (skorch)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self.fullgraph = bool(options.get("fullgraph", False))

    def __call__(self, fn: Callable) -> Any:
        o = self._options
        return compile(fn, fullgraph=self.fullgraph, mode=o.get("mode"),
                       options=o.get("options"), backend=o.get("backend"),
                       recompile_limit=o.get("recompile_limit"))

    def __enter__(self) -> None:
        raise RuntimeError("torch._dynamo.optimize(...) is used with a context manager; use it as "
                           "a decorator (ctx(fn)), or torch.compile(fn)")

    def __exit__(self, *exc: object) -> None:
        return None


class OptimizedModule(Module):
    """What ``compile(module)`` returns: runs ``_orig_mod`` through the compiled path and
    forwards attribute reads to it."""

    def __init__(self, mod: Module, options: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compile_options", dict(options or {}))
        object.__setattr__(self, "dynamo_ctx", _CompileContext(self._compile_options))
        object.__setattr__(self, "_compiled", _CompiledFn(
            mod, mod, bool((options or {}).get("fullgraph", False)),
            (options or {}).get("recompile_limit")))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            mods = self.__dict__.get("_modules")
            if not mods or "_orig_mod" not in mods:
                raise
            return getattr(mods["_orig_mod"], name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._modules["_orig_mod"])))


def compile(model: Callable | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: str | Callable | None = None,
            mode: str | None = None, options: dict[str, Any] | None = None,
            name: str | None = None, disable: bool = False, recompile_limit: int | None = None,
            isolate_recompiles: bool = False, shapes_spec: Any = None) -> Any:
    """Return ``model`` compiled: traced on its first calls, then replayed (see the module doc).

    Args:
        model: an ``nn.Module`` or a function; omitted, ``compile(...)`` is a decorator.
        fullgraph: raise ``torch._dynamo.exc.Unsupported`` at a graph break instead of running
            that call eagerly.
        dynamic: accepted; shapes are always specialised (a new shape compiles again).
        backend, options, name: accepted and ignored (there is one backend).
        mode: checked against PyTorch's modes, then ignored.
        disable: return ``model`` itself.
        recompile_limit: the most guard keys (shapes, dtypes...) this callable compiles; past it,
            calls run eagerly (default: ``torch._dynamo.config.cache_size_limit``).
        isolate_recompiles: accepted; every compiled callable already has its own cache.
        shapes_spec: accepted; shapes are always specialised, as with ``dynamic``.

    Example::

        >>> model = torch.compile(model)       # an OptimizedModule wrapping model
        >>> @torch.compile
        ... def f(x): return x.sin() + 1
    """
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same "
            "time."
        )
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if model is None:
        def decorator(fn: Callable) -> Any:
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable,
                           recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)

        return decorator
    if not callable(model):
        raise RuntimeError(f"torch.compile: model must be callable (a Module or a function), "
                           f"got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, {"mode": mode, "options": options, "backend": backend,
                                       "fullgraph": fullgraph,
                                       "recompile_limit": recompile_limit})
    compiled_fn = _CompiledFn(model, None, fullgraph, recompile_limit)

    @functools.wraps(model)
    def compiled(*args: Any, **kw: Any) -> Any:
        return compiled_fn(*args, **kw)

    compiled._torchdynamo_orig_callable = model  # type: ignore[attr-defined]
    compiled._ember_compiled = compiled_fn  # type: ignore[attr-defined]
    return compiled
