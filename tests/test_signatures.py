"""Every public function and Tensor method takes PyTorch 2.13's parameters, keyword for keyword.

The reference is PyTorch's own: the schema of every op (``native_functions.yaml``, shipped in
the installed ``torchgen``), turned into the Python signature PyTorch's argument parser builds
from it (``self`` is ``input`` for a function and the bound tensor for a method, ``out=`` is
keyword-only, factory functions take ``requires_grad``), merged over a name's overloads. A
PyTorch function written in Python (``torch.nn.functional.softmax``, ``torch.split``) is compared
with ``inspect.signature`` of it directly.

For each name ember has and PyTorch has (``torch``, ``torch.special``, ``torch.linalg``,
``torch.nn.functional``, ``Tensor`` methods), ember's ``inspect.signature`` must:

- accept as keywords exactly PyTorch's names (no missing, no extra; no catch-all ``**kwargs``);
- take positionally what PyTorch takes positionally, in its order, and keyword-only what is
  keyword-only in all of PyTorch's overloads;
- default what PyTorch defaults, to the same value where the value is simple (None, a bool, a
  number, a string), and require what PyTorch requires;
- take ``out=`` wherever PyTorch has an ``.out`` overload.

A differential run then calls each function whose schema is simple enough to fill (tensors,
scalars, dims, bools) with every parameter by keyword on both engines and compares values,
dtypes and shapes; the same call with an unknown keyword and with a misspelt one must raise
TypeError on both; and where PyTorch's builtin takes NumPy's names (``axis`` for ``dim``,
``keepdims`` for ``keepdim``), so must ember.

What is still different is listed, name by name with the reason, in ``tests/signature_gaps.py``.
The test fails on a mismatch missing from that table and on an entry that no longer mismatches,
so the table only shrinks. ``python tests/test_signatures.py`` prints the current mismatches.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from signature_gaps import GAPS

import ember

torch = pytest.importorskip("torch")
model = pytest.importorskip("torchgen.model")

YAML = os.path.join(os.path.dirname(model.__file__), "packaged", "ATen", "native",
                    "native_functions.yaml")

REQUIRED = object()  # a parameter without a default
UNKNOWN = object()  # a default that is not a simple Python value (an enum, a list)

# PyTorch builtins whose Python binding is written by hand (not generated from the schema): no
# reference signature to compare with.
MANUAL = {
    "torch": {"tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "nonzero", "numel",
              "range", "get_device", "sparse_coo_tensor", "autocast_increment_nesting"},
    "Tensor": {"to", "size", "stride", "type", "numpy", "tolist", "item", "cuda", "cpu", "xpu",
               "mps", "new_tensor", "nonzero", "apply_", "map_", "map2_", "element_size", "dim",
               "numel", "data_ptr", "requires_grad_", "get_device", "half", "float", "double",
               "bfloat16", "int", "long", "short", "char", "byte", "bool", "_make_subclass",
               "untyped_storage", "copy_", "set_", "storage", "backward", "register_hook",
               "retain_grad", "contiguous", "is_contiguous", "index_put_", "index_put"},
}

# Overloads PyTorch does not bind in Python: `add.Scalar(self, Scalar other, Scalar alpha=1)`
# and its kin (`torch.add(t, 1, 2)` is a deprecated signature; `t.add(t, 2)` raises).
UNBOUND_SCALAR = {"add", "sub", "mul", "div"}

# PyTorch's NumPy-compatible keyword names, accepted by its builtins (not by Python-level
# functions such as torch.nn.functional.softmax): alias -> PyTorch's name.
NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input",
                 "x1": "input", "x2": "other"}


# -- PyTorch's reference signatures --------------------------------------------------------------

class Param:
    """One parameter of a Python signature: name, kind ('pos' or 'kw'), default."""

    __slots__ = ("name", "kind", "default")

    def __init__(self, name: str, kind: str, default: Any) -> None:
        self.name, self.kind, self.default = name, kind, default

    def __repr__(self) -> str:
        d = "" if self.default is REQUIRED else "=?" if self.default is UNKNOWN else \
            f"={self.default!r}"
        return f"{'*' if self.kind == 'kw' else ''}{self.name}{d}"


class Sig:
    """A Python signature as the comparison sees it."""

    def __init__(self, params: list[Param], varargs: str | None = None,
                 varkw: bool = False, types_: dict[str, str] | None = None) -> None:
        self.params, self.varargs, self.varkw = params, varargs, varkw
        self.types = types_ or {}  # schema type of each parameter (PyTorch's builtins only)

    def __repr__(self) -> str:
        parts = [repr(p) for p in self.params]
        if self.varargs:
            parts.insert(0, f"*{self.varargs}")
        if self.varkw:
            parts.append("**kwargs")
        return f"({', '.join(parts)})"


def _schema_default(text: str | None) -> Any:
    if text is None:
        return REQUIRED
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return UNKNOWN


def _schema_sig(schema: Any, method: bool) -> Sig:
    """The Python signature PyTorch's argument parser gives one schema overload."""
    args = schema.arguments
    params: list[Param] = []
    types_: dict[str, str] = {}
    for a in args.flat_positional:
        if method and a.name == "self":
            continue
        name = "input" if a.name == "self" else a.name
        params.append(Param(name, "pos", _schema_default(a.default)))
        types_[name] = str(a.type)
    kwnames = set()
    for a in args.flat_kwarg_only:
        name = "input" if a.name == "self" else a.name
        kwnames.add(name)
        params.append(Param(name, "kw", _schema_default(a.default)))
        types_[name] = str(a.type)
    if {"dtype", "layout", "device", "pin_memory"} <= kwnames:
        for p in params:
            if p.name in ("layout", "pin_memory"):
                p.default = UNKNOWN
        params.append(Param("requires_grad", "kw", False))
    if args.out:
        params.append(Param("out", "kw", None))
    return Sig(params, types_=types_)


@functools.cache
def _schemas() -> dict[tuple[str, str], list[Sig]]:
    """(namespace, python name) -> the signatures of its overloads, from native_functions.yaml."""
    # (func, python_module, variants, whether PyTorch binds its autogenerated .out overloads)
    entries: list[tuple[str, str | None, str, bool]] = []
    func = module = variants = None
    tags, autogen_out = "", False
    with open(YAML, encoding="utf-8") as f:
        for line in f:
            if line.startswith("- func:"):
                if func is not None:
                    entries.append((func, module, variants or "function",
                                    autogen_out and "view_copy" in tags))
                func, module, variants = line[len("- func:"):].strip(), None, None
                tags, autogen_out = "", False
            elif line.startswith("  python_module:"):
                module = line.split(":", 1)[1].strip()
            elif line.startswith("  variants:"):
                variants = line.split(":", 1)[1].strip()
            elif line.startswith("  tags:"):
                tags = line.split(":", 1)[1]
            elif line.startswith("  autogen:"):
                autogen_out = "out" in line.split(":", 1)[1]
    if func is not None:
        entries.append((func, module, variants or "function", autogen_out and "view_copy" in tags))
    out: dict[tuple[str, str], list[Sig]] = {}
    for text, module, variants, bound_out in entries:
        if bound_out:
            # torchgen's rule: an overload it generates (`autogen: expand_copy.out`) gets a
            # Python binding only for a `view_copy` op (`torch.expand_copy(x, s, out=o)` works,
            # `torch.ones_like(x, out=o)` raises): the .out twin of this schema
            out_arg = "Tensor(a!) out" if text.rstrip().endswith("-> Tensor") else None
            if out_arg is not None:
                head, rest = text.split("(", 1)
                args, ret = rest.rsplit(") ->", 1)
                sep = ", " if "*" in args else ", *, " if args.strip() else "*, "
                name = head + ("_out" if "." in head else ".out")
                entries.append((f"{name}({args}{sep}{out_arg}) -> Tensor(a!)", module,
                                "function", False))  # out= overloads are never methods
        schema = model.FunctionSchema.parse(text)
        base = str(schema.name.name)
        if base.startswith("_") or (base in UNBOUND_SCALAR and schema.name.overload_name
                                    == "Scalar"):
            continue
        if schema.name.name.inplace:
            base += "_"
        kinds = {v.strip() for v in variants.split(",") if v.strip()}
        if "function" in kinds:
            if module is None:
                out.setdefault(("torch", base), []).append(_schema_sig(schema, False))
            elif module in ("special", "linalg") and base.startswith(module + "_"):
                name = base[len(module) + 1:]
                out.setdefault((module, name), []).append(_schema_sig(schema, False))
            elif module == "nn":
                out.setdefault(("nn", base), []).append(_schema_sig(schema, False))
        if "method" in kinds:
            out.setdefault(("Tensor", base), []).append(_schema_sig(schema, True))
    return out


def _py_sig(fn: Any, method: bool) -> Sig | None:
    """A Python callable's signature as a Sig (the bound ``self`` dropped for a method)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params: list[Param] = []
    varargs, varkw = None, False
    plist = list(sig.parameters.values())
    if method and plist and plist[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                              inspect.Parameter.POSITIONAL_OR_KEYWORD):
        plist = plist[1:]
    for p in plist:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            varargs = p.name
            continue
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            varkw = True
            continue
        if p.default is inspect.Parameter.empty:
            default = REQUIRED
        elif p.default is None or isinstance(p.default, (bool, int, float, str)):
            default = p.default
        else:
            default = UNKNOWN
        kind = {inspect.Parameter.POSITIONAL_ONLY: "posonly",
                inspect.Parameter.KEYWORD_ONLY: "kw"}.get(p.kind, "pos")
        params.append(Param(p.name, kind, default))
    return Sig(params, varargs, varkw)


def _torch_obj(space: str, name: str) -> Any:
    mod = {"torch": torch, "special": torch.special, "linalg": torch.linalg,
           "nn": torch.nn.functional, "Tensor": torch.Tensor}[space]
    return getattr(mod, name, None)


def reference(space: str, name: str) -> tuple[list[Sig], bool] | None:
    """PyTorch's signatures for ``space.name`` and whether it is a builtin (takes NumPy's names);
    None where there is no reference (a hand-written binding, or not a function)."""
    obj = _torch_obj(space, name)
    if obj is None or isinstance(obj, type) or not callable(obj):
        return None
    if isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType,
                        types.WrapperDescriptorType)):
        if name in MANUAL.get(space, ()):
            return None
        key = (space, name)
        if space == "nn":
            sigs = _schemas().get(("nn", name)) or _schemas().get(("torch", name))
        else:
            sigs = _schemas().get(key)
        return (sigs, True) if sigs else None
    # F.max_pool2d, torch.unique...: PyTorch's `boolean_dispatch` wrapper, `(*args, **kwargs)`,
    # calls one of two functions by `return_indices=`/`return_inverse=`; their signature is its
    from torch._jit_internal import boolean_dispatched

    while obj in boolean_dispatched:
        obj = boolean_dispatched[obj]["if_false"]
    sig = _py_sig(obj, method=space == "Tensor")
    return ([sig], False) if sig is not None else None


# -- the comparison ------------------------------------------------------------------------------

def _same_default(a: Any, b: Any) -> bool:
    if a is None or b is None or isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b and type(a) is type(b)
    return a == b or (isinstance(a, float) and isinstance(b, float)
                      and math.isnan(a) and math.isnan(b))


def compare(ref: list[Sig], mine: Sig, method_shares_out: bool = False) -> list[str]:
    """The differences of ember's signature from PyTorch's overloads (empty when it matches).

    ``method_shares_out``: a Tensor method whose function takes ``out=``; ember's method is that
    function, so it takes ``out=`` too (a deliberate difference, docs/signatures.md)."""
    issues: list[str] = []
    names: dict[str, list[Param]] = {}
    for sig in ref:
        for p in sig.params:
            names.setdefault(p.name, []).append(p)
    positions: dict[int, set[str]] = {}
    for sig in ref:
        for i, p in enumerate(q for q in sig.params if q.kind == "pos"):
            positions.setdefault(i, set()).add(p.name)
    ref_varkw = any(s.varkw for s in ref)
    ref_varargs = {s.varargs for s in ref if s.varargs}
    # PyTorch's `int[] size` / `Tensor[] tensors` first parameters also take varargs
    lists_first = {s.params[0].name for s in ref if s.params and s.params[0].kind == "pos"
                   and "[]" in s.types.get(s.params[0].name, "")}
    mine_by = {p.name: p for p in mine.params}
    mine_pos = [p.name for p in mine.params if p.kind in ("pos", "posonly")]
    if mine.varkw and not ref_varkw:
        issues.append("catch-all **kwargs")
    if mine.varargs and not ref_varargs and not lists_first:
        issues.append(f"*{mine.varargs}: PyTorch takes no varargs")
    for name, ps in names.items():
        p = mine_by.get(name)
        if p is None or p.kind == "posonly":
            if mine.varargs and (name in lists_first or name in ref_varargs) and p is None:
                if name in lists_first:
                    issues.append(f"{name}= not accepted as a keyword (*{mine.varargs})")
                continue
            issues.append(f"missing {name}=" if p is None else f"{name} is positional-only")
            continue
        torch_pos = [i for sig in ref for i, q in enumerate(x for x in sig.params
                                                            if x.kind == "pos") if q.name == name]
        if all(q.kind == "kw" for q in ps) and p.kind != "kw":
            issues.append(f"{name} should be keyword-only")
        elif torch_pos and p.kind == "kw":
            if not any(i < len(mine_pos) and mine_pos[i] in positions.get(i, ()) for i in torch_pos):
                issues.append(f"{name} should be positional")
        # defaults
        in_all = all(any(q.name == name for q in sig.params) for sig in ref)
        required = in_all and all(q.default is REQUIRED for q in ps)
        if required:
            if p.default is not REQUIRED:
                issues.append(f"{name} has default {p.default!r}, PyTorch requires it")
            continue
        if p.default is REQUIRED:
            issues.append(f"{name} is required, PyTorch has a default")
            continue
        values = [q.default for q in ps if q.default is not REQUIRED]
        if (values and len(values) == len(ps) and all(v is not UNKNOWN for v in values)
                and all(_same_default(v, values[0]) for v in values)):
            if p.default is not UNKNOWN and not _same_default(p.default, values[0]):
                issues.append(f"{name} defaults to {p.default!r}, PyTorch to {values[0]!r}")
    for p in mine.params:
        if p.name not in names and p.kind != "posonly":
            if p.name == "out" and method_shares_out:
                continue  # a Tensor method is its function: it takes the function's out=
            issues.append(f"extra {p.name}=")
    for i, name in enumerate(mine_pos):
        if i in positions and name not in positions[i]:
            want = "/".join(sorted(positions[i]))
            issues.append(f"positional #{i + 1} is {name}, PyTorch's is {want}")
            break
    return issues


# -- ember's names -------------------------------------------------------------------------------

def _ember_obj(space: str, name: str) -> Any:
    if space == "torch":
        return getattr(ember, name, None) if name in _ember_names("torch") else None
    mod = {"special": "ember.special", "linalg": "ember.linalg", "nn": "ember.nn.functional"}
    if space == "Tensor":
        return getattr(ember.Tensor, name, None)
    import importlib

    return getattr(importlib.import_module(mod[space]), name, None)


@functools.cache
def _ember_names(space: str) -> tuple[str, ...]:
    import importlib

    if space == "Tensor":
        mod: Any = ember.Tensor
        names = set(dir(mod))
    else:
        mod = ember if space == "torch" else importlib.import_module(
            {"special": "ember.special", "linalg": "ember.linalg",
             "nn": "ember.nn.functional"}[space])
        names = set(dir(mod)) | set(getattr(mod, "_LAZY_ATTRS", {}))
    out = []
    for name in sorted(names):
        if name.startswith("_"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = inspect.getattr_static(mod, name) if space == "Tensor" else \
                    getattr(mod, name)
        except (AttributeError, NotImplementedError):
            continue
        if isinstance(obj, (type, types.ModuleType, property)) or not callable(obj):
            continue
        out.append(name)
    return tuple(out)


SPACES = ("torch", "special", "linalg", "nn", "Tensor")
PREFIX = {"torch": "torch.", "special": "torch.special.", "linalg": "torch.linalg.",
          "nn": "torch.nn.functional.", "Tensor": "Tensor."}


def surface() -> Iterator[tuple[str, str, str]]:
    """(space, name, qualified name) of every function both engines have and PyTorch describes."""
    for space in SPACES:
        for name in _ember_names(space):
            if reference(space, name) is not None:
                yield space, name, PREFIX[space] + name


@functools.cache
def signature_mismatches() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for space, name, qual in surface():
        ref, _ = reference(space, name)  # type: ignore[misc]
        mine = _py_sig(_ember_obj(space, name), method=space == "Tensor")
        if mine is None:
            found[qual] = ["no inspectable signature"]
            continue
        shares = space == "Tensor" and any(
            p.name == "out" for sig in (reference("torch", name) or ([],))[0] for p in sig.params)
        issues = structural(qual, ref, mine, compare(ref, mine, shares))
        if issues:
            found[qual] = issues
    return found


# -- what a Python signature cannot say ----------------------------------------------------------
#
# Two kinds of PyTorch signature have no Python spelling; docs/signatures.md ("Deliberate
# differences") lists them. The comparison allows each only for a function whose calls below
# run as on PyTorch: the forms PyTorch accepts give the same shapes and dtypes, the ones it
# refuses raise the same error type.
#
# - varargs sizes: PyTorch's first parameter is a list (`int[] size`, `int[] dims`) that its
#   parser also takes as varargs (`zeros(2, 3)`, `x.view(2, 3)`, `x.view(size=(2, 3))`). Python
#   cannot name a parameter that is also `*size`, so ember takes the keyword as keyword-only (or
#   through `**kwargs` that accept it alone), and the other overloads' first parameter
#   (`x.view(dtype)`) positionally through the varargs.
# - shifted overloads: a parameter every overload requires at a different position
#   (`arange(end)` / `arange(start, end)`, `randint(high, size)` / `randint(low, high, size)`):
#   Python cannot require it, so it shows a default and the function binds its arguments as
#   PyTorch's overloads do (`arange(start=1)` raises TypeError).

def _shape_of(r: Any) -> Any:
    return [(tuple(t.shape), str(t.dtype).split(".")[-1]) if hasattr(t, "shape") else t
            for t in _results(r)]


def _t34(m: Any) -> Any:
    return m.arange(12.0).reshape(3, 4)


STRUCTURAL_PROBES: dict[str, list[Callable]] = {
    **{f"torch.{f}": [
        lambda m, f=f: getattr(m, f)(3, 4), lambda m, f=f: getattr(m, f)((3, 4)),
        lambda m, f=f: getattr(m, f)(size=(3, 4)), lambda m, f=f: getattr(m, f)(m.Size([3, 4])),
        lambda m, f=f: getattr(m, f)(3, size=(3, 4)),  # refused
        lambda m, f=f: getattr(m, f)(3, 4, sizes=(3,)),  # refused
        lambda m, f=f: getattr(m, f)(size=(3, 4), dtype=m.float64)]
       for f in ("zeros", "ones", "empty", "rand", "randn")},
    **{f"Tensor.{f}": [
        lambda m, f=f: getattr(_t34(m), f)(2, 3), lambda m, f=f: getattr(_t34(m), f)((2, 3)),
        lambda m, f=f: getattr(_t34(m), f)(size=(2, 3)),
        lambda m, f=f: getattr(_t34(m), f)(2, size=(2, 3)),  # refused
        lambda m, f=f: getattr(_t34(m), f)(2, 3, sizes=(3,)),  # refused
        lambda m, f=f: getattr(_t34(m), f)(size=(2, 3), dtype=m.int32)]
       for f in ("new_zeros", "new_ones", "new_empty")},
    **{f"Tensor.{f}": [
        lambda m, f=f, a=a: getattr(_t34(m), f)(*a), lambda m, f=f, a=a: getattr(_t34(m), f)(a),
        lambda m, f=f, a=a, k=k: getattr(_t34(m), f)(**{k: a}),
        lambda m, f=f, a=a, k=k: getattr(_t34(m), f)(a[0], **{k: a}),  # refused
        lambda m, f=f, a=a, k=k: getattr(_t34(m), f)(a, **{k + "s": a})]  # refused
       for f, k, a in (("view", "size", (4, 3)), ("reshape", "shape", (2, 6)),
                       ("permute", "dims", (1, 0)), ("flip", "dims", (1, 0)),
                       ("tile", "dims", (2, 1)), ("broadcast_to", "size", (2, 3, 4)),
                       ("sum_to_size", "size", (1, 4)))},
    "Tensor.view": [lambda m: _t34(m).view(m.int32), lambda m: _t34(m).view(dtype=m.int32),
                    lambda m: _t34(m).view(m.int32, dtype=m.int32),  # refused
                    lambda m: _t34(m).view(4, 3), lambda m: _t34(m).view(size=(4, 3)),
                    lambda m: _t34(m).view(4, size=(4, 3))],  # refused
    "torch.arange": [lambda m: m.arange(5), lambda m: m.arange(end=5), lambda m: m.arange(1, 5),
                     lambda m: m.arange(start=1, end=5), lambda m: m.arange(1, end=5),
                     lambda m: m.arange(1, 5, 2), lambda m: m.arange(start=1, end=5, step=2.0),
                     lambda m: m.arange(start=1),  # refused
                     lambda m: m.arange(step=2, end=5),  # refused
                     lambda m: m.arange(5, start=1)],  # refused
    "torch.randint": [lambda m: m.randint(5, (3,)), lambda m: m.randint(5, size=(3,)),
                      lambda m: m.randint(high=5, size=(3,)), lambda m: m.randint(1, 5, (3,)),
                      lambda m: m.randint(low=1, high=5, size=(3,)),
                      lambda m: m.randint(1, high=5, size=(3,)),
                      lambda m: m.randint(low=1, size=(3,)),  # refused
                      lambda m: m.randint(5)],  # refused
    "torch.randint_like": [lambda m: m.randint_like(_t34(m), 5),
                           lambda m: m.randint_like(_t34(m), high=5),
                           lambda m: m.randint_like(_t34(m), 1, 5),
                           lambda m: m.randint_like(_t34(m), low=1, high=5),
                           lambda m: m.randint_like(_t34(m), low=1)],  # refused
    "torch.repeat_interleave": [
        lambda m: m.repeat_interleave(m.tensor([1, 2])),
        lambda m: m.repeat_interleave(repeats=m.tensor([1, 2])),
        lambda m: m.repeat_interleave(_t34(m), 2), lambda m: m.repeat_interleave(_t34(m), 2, 0),
        lambda m: m.repeat_interleave(input=_t34(m), repeats=2, dim=1),
        lambda m: m.repeat_interleave(m.tensor([1, 2]), dim=0),  # refused
        lambda m: m.repeat_interleave(input=_t34(m))],  # refused
}


def _probe_outcome(call: Callable, m: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _shape_of(call(m))
        except Exception as e:  # noqa: BLE001 - the error type is the outcome
            return type(e).__name__


@functools.cache
def structural_probe(qual: str) -> list[str]:
    """The calls of ``STRUCTURAL_PROBES[qual]`` whose outcome on ember differs from PyTorch's."""
    bad = []
    for i, call in enumerate(STRUCTURAL_PROBES.get(qual, ())):
        mine, ref = _probe_outcome(call, ember), _probe_outcome(call, torch)
        if mine != ref:
            bad.append(f"probe #{i + 1}: {mine}, PyTorch {ref}")
    return bad


def structural(qual: str, ref: list[Sig], mine: Sig, issues: list[str]) -> list[str]:
    """``issues`` less those the two structural kinds explain (see above), where the function's
    probes run as on PyTorch; a probe that differs is reported instead."""
    allowed = set()
    lists_first = {s.params[0].name for s in ref if s.params and s.params[0].kind == "pos"
                   and "[]" in s.types.get(s.params[0].name, "")}
    if mine.varargs and lists_first:  # varargs sizes
        first = {s.params[0].name for s in ref if s.params and s.params[0].kind == "pos"}
        for p in first:
            allowed |= {f"{p} should be positional", f"{p} has default None, PyTorch requires it",
                        f"{p}= not accepted as a keyword (*{mine.varargs})"}
        if mine.varkw:
            allowed.add("catch-all **kwargs")
    at: dict[str, set[int]] = {}
    for sig in ref:
        for i, p in enumerate(q for q in sig.params if q.kind == "pos"):
            at.setdefault(p.name, set()).add(i)
    for p in mine.params:  # shifted overloads
        if len(at.get(p.name, ())) > 1 and p.default is not REQUIRED:
            allowed.add(f"{p.name} has default {p.default!r}, PyTorch requires it")
    kept = [i for i in issues if i not in allowed]
    if len(kept) < len(issues):
        if qual not in STRUCTURAL_PROBES:
            return issues + ["structural difference without probes (STRUCTURAL_PROBES)"]
        kept += structural_probe(qual)
    return kept


# -- the differential run ------------------------------------------------------------------------

_FILLABLE = {"Tensor", "Tensor?", "Scalar", "Scalar?", "int", "int?", "bool", "bool?", "float",
             "float?", "int[1]?", "int[1]", "ScalarType?", "SymInt", "SymInt?"}


def _value(name: str, typ: str, engine: Any) -> Any:
    """An argument for a parameter of this schema type, on ``engine`` (ember or torch)."""
    if typ.startswith("Tensor"):
        data = (np.arange(12, dtype=np.float32).reshape(3, 4) % 7 + 1) / 10
        if name not in ("input", "self"):
            data = data[::-1].copy() * 0.9 + 0.05
        return engine.tensor(data)
    if typ.startswith("Scalar") and not typ.startswith("ScalarType"):
        return 0.5
    if typ.startswith("ScalarType"):
        return engine.float64
    if typ.startswith("bool"):
        return True
    if typ.startswith("float"):
        return 0.25
    if name in ("dim", "dim0", "dim1", "axis"):
        return 1
    return 2  # other ints (k, n, ...)


def _fill(sig: Sig, engine: Any) -> dict[str, Any] | None:
    kwargs = {}
    for p in sig.params:
        typ = sig.types.get(p.name, "")
        if p.name == "out" or typ not in _FILLABLE:
            if p.default is REQUIRED:
                return None
            continue
        kwargs[p.name] = _value(p.name, typ, engine)
    return kwargs


def _results(x: Any) -> list[Any]:
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _results(item)]
    return [x]


def _same_result(a: Any, b: Any) -> str | None:
    ra, rb = _results(a), _results(b)
    if len(ra) != len(rb):
        return f"{len(ra)} results, PyTorch {len(rb)}"
    for x, y in zip(ra, rb):
        if isinstance(y, torch.Tensor):
            if not isinstance(x, ember.Tensor):
                return f"returned {type(x).__name__}, PyTorch a Tensor"
            if str(x.dtype).split(".")[-1] != str(y.dtype).split(".")[-1]:
                return f"dtype {x.dtype}, PyTorch {y.dtype}"
            if tuple(x.shape) != tuple(y.shape):
                return f"shape {tuple(x.shape)}, PyTorch {tuple(y.shape)}"
            if str(x.layout) != str(y.layout):
                return f"layout {x.layout}, PyTorch {y.layout}"
            if y.layout != torch.strided:  # sparse: compare the dense values
                x, y = x.to_dense(), y.to_dense()
            xa = x.detach().cpu().numpy().astype(np.float64)
            ya = y.detach().cpu().numpy().astype(np.float64)
            if not np.allclose(xa, ya, rtol=1e-4, atol=1e-5, equal_nan=True):
                return "values differ"
        elif isinstance(y, (bool, int, float)) and not np.isclose(x, y, equal_nan=True):
            return f"returned {x!r}, PyTorch {y!r}"
    return None


def _call(fn: Callable, kwargs: dict[str, Any]) -> tuple[Any, BaseException | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(**kwargs), None
        except Exception as e:  # noqa: BLE001 - any failure is compared, not raised
            return None, e


def _misspelt(name: str) -> str:
    return name[:-1] if len(name) > 2 else name + name[-1]


def keyword_mismatches_for(space: str, name: str) -> list[str]:
    """Call PyTorch's and ember's ``space.name`` with each overload's parameters by keyword."""
    ref, builtin = reference(space, name)  # type: ignore[misc]
    if not builtin:
        return []
    issues: list[str] = []
    method = space == "Tensor"
    for sig in ref:
        kt, ke = _fill(sig, torch), _fill(sig, ember)
        if not kt or ke is None:
            continue
        if method:
            self_t, self_e = _value("self", "Tensor", torch), _value("self", "Tensor", ember)
            fn_t: Callable = getattr(self_t, name)
            fn_e: Callable = getattr(self_e, name)
        else:
            fn_t, fn_e = _torch_obj(space, name), _ember_obj(space, name)
        rt, et = _call(fn_t, kt)
        if et is not None:
            continue
        re_, ee = _call(fn_e, ke)
        shown = ", ".join(kt)
        if ee is not None:
            issues.append(f"({shown}) raised {type(ee).__name__}: {str(ee)[:120]}")
            continue
        diff = _same_result(re_, rt)
        if diff:
            issues.append(f"({shown}): {diff}")
            continue
        # an unknown keyword and a misspelt one raise TypeError on both
        for bad in ({**ke, "not_a_parameter": 1},
                    {(_misspelt(k) if i == 0 else k): v for i, (k, v) in enumerate(ke.items())}):
            _, err = _call(fn_e, bad)
            if not isinstance(err, TypeError):
                issues.append(f"({', '.join(bad)}) gave {type(err).__name__ if err else 'no error'},"
                              " PyTorch TypeError")
                break
        # NumPy's names, where PyTorch's builtin takes them
        for alias, real in (("axis", "dim"), ("keepdims", "keepdim"), ("x", "input"),
                            ("x2", "other")):
            if real in kt and (real != "input" or not method):
                at = {(alias if k == real else k): v for k, v in kt.items()}
                ae = {(alias if k == real else k): v for k, v in ke.items()}
                rt2, et2 = _call(fn_t, at)
                if et2 is not None:
                    continue
                re2, ee2 = _call(fn_e, ae)
                if ee2 is not None:
                    issues.append(f"{alias}= for {real}=: raised {type(ee2).__name__}: "
                                  f"{str(ee2)[:100]}")
                elif _same_result(re2, rt2):
                    issues.append(f"{alias}= for {real}=: {_same_result(re2, rt2)}")
        break  # one overload that PyTorch runs is enough per name
    return issues


@functools.cache
def keyword_mismatches() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for space, name, qual in surface():
        if name.endswith("_") or name in SKIP_CALLS:
            continue
        issues = keyword_mismatches_for(space, name)
        if issues:
            found[qual] = issues
    return found


# Calls the differential run does not make: random results, or no meaningful small input.
SKIP_CALLS = {"bernoulli", "multinomial", "normal", "rand_like", "randn_like", "randint_like",
              "dropout", "alpha_dropout", "feature_alpha_dropout", "rrelu", "empty_like",
              "empty", "empty_strided", "poisson", "uniform", "random", "exponential",
              "geometric", "cauchy", "log_normal", "resize_", "resize_as_", "set_", "new_empty",
              "new_empty_strided", "randperm", "randint", "randn", "rand", "seed", "manual_seed"}


def all_mismatches() -> dict[str, list[str]]:
    found = {k: list(v) for k, v in signature_mismatches().items()}
    for k, v in keyword_mismatches().items():
        found.setdefault(k, []).extend(f"call {x}" for x in v)
    return found


# -- the tests -----------------------------------------------------------------------------------

def test_surface_is_found() -> None:
    names = {q for _, _, q in surface()}
    for q in ("torch.sum", "Tensor.sum", "torch.add", "torch.special.erf", "torch.linalg.norm",
              "torch.nn.functional.softmax", "torch.split"):
        assert q in names, q
    assert len(names) > 600


def test_compare_finds_each_kind_of_difference() -> None:
    ref = reference("torch", "sum")[0]  # type: ignore[index]

    def issues(fn: Callable) -> str:
        return "; ".join(compare(ref, _py_sig(fn, False)))  # type: ignore[arg-type]

    def good(input, dim=None, keepdim=False, *, dtype=None, out=None): ...  # noqa: E704
    def no_out(input, dim=None, keepdim=False, *, dtype=None): ...  # noqa: E704
    def kw_dim(input, *, dim=None, keepdim=False, dtype=None, out=None): ...  # noqa: E704
    def pos_dtype(input, dim=None, keepdim=False, dtype=None, *, out=None): ...  # noqa: E704
    def wrong_default(input, dim=None, keepdim=True, *, dtype=None, out=None): ...  # noqa: E704
    def extra(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None): ...  # noqa: E704
    def catch_all(input, dim=None, keepdim=False, **kwargs): ...  # noqa: E704
    def renamed(x, dim=None, keepdim=False, *, dtype=None, out=None): ...  # noqa: E704

    assert issues(good) == ""
    assert "missing out=" in issues(no_out)
    assert "dim should be positional" in issues(kw_dim)
    assert "dtype should be keyword-only" in issues(pos_dtype)
    assert "keepdim defaults to True" in issues(wrong_default)
    assert "extra axis=" in issues(extra)
    assert "catch-all **kwargs" in issues(catch_all)
    assert "missing input=" in issues(renamed) and "extra x=" in issues(renamed)


def _takes_out(sigs: list[Sig]) -> bool:
    return any(p.name == "out" for sig in sigs for p in sig.params)


@pytest.mark.parametrize(("name", "call", "bound"), [
    ("expand_copy", lambda x, o: torch.expand_copy(x, (2, 3), out=o), True),
    ("t_copy", lambda x, o: torch.t_copy(x.t(), out=o), True),
    ("slice_scatter", lambda x, o: torch.slice_scatter(o.clone(), x, out=o), True),
    ("ones_like", lambda x, o: torch.ones_like(x, out=o), False),  # not a view_copy op
    ("flip", lambda x, o: torch.flip(x, (0,), out=o), False),
    ("roll", lambda x, o: torch.roll(x, 1, out=o), False),
])
def test_autogenerated_out_overloads_as_pytorch_binds_them(name: str, call: Callable,
                                                           bound: bool) -> None:
    """torchgen binds an autogenerated ``.out`` overload in Python only for a ``view_copy`` op;
    the reference knows which, and PyTorch agrees when called."""
    assert _takes_out(reference("torch", name)[0]) is bound, name  # type: ignore[index]
    x, o = torch.ones(1, 3).expand(2, 3).contiguous(), torch.zeros(2, 3)
    if bound:
        assert call(x, o) is o
    else:
        with pytest.raises(TypeError, match="out"):
            call(x, o)


def test_boolean_dispatch_wrappers_are_compared_by_their_functions() -> None:
    """``F.max_pool2d``, ``torch.unique``: PyTorch's ``(*args, **kwargs)`` wrapper that picks one
    of two functions by ``return_indices=``; the reference is their signature."""
    ref = reference("nn", "max_pool2d")[0][0]  # type: ignore[index]
    assert [p.name for p in ref.params][-1] == "return_indices" and not ref.varkw
    assert [p.name for p in reference("torch", "unique")[0][0].params][:2] == [  # type: ignore
        "input", "sorted"]


def test_structural_allowances_need_agreeing_probes() -> None:
    """A varargs-sizes or shifted-overload difference is allowed only with probes that run as
    on PyTorch; without probes it stays a mismatch."""
    ref = reference("torch", "zeros")[0]  # type: ignore[index]

    def zeros(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,  # noqa
              requires_grad=False, **size_kw): ...  # noqa: E704
    sig = _py_sig(zeros, False)
    issues = compare(ref, sig)  # type: ignore[arg-type]
    assert "catch-all **kwargs" in issues
    assert structural("torch.zeros", ref, sig, issues) == []  # type: ignore[arg-type]
    unprobed = structural("torch.not_probed", ref, sig, issues)  # type: ignore[arg-type]
    assert "catch-all **kwargs" in unprobed and any("without probes" in i for i in unprobed)
    assert not structural_probe("torch.arange"), structural_probe("torch.arange")


def test_signatures_match_pytorch() -> None:
    found = all_mismatches()
    new = {k: v for k, v in found.items() if k not in GAPS}
    assert not new, "signatures differ from PyTorch's (fix them, or list them in " \
        "tests/signature_gaps.py with the reason):\n" + "\n".join(
            f"  {k}: {'; '.join(v)}" for k, v in sorted(new.items()))


def test_gap_table_only_lists_real_gaps() -> None:
    found = all_mismatches()
    stale = sorted(k for k in GAPS if k not in found)
    assert not stale, "these now match PyTorch; remove them from tests/signature_gaps.py: " + \
        ", ".join(stale)


def test_numpy_names_only_where_pytorch_takes_them() -> None:
    """``torch.sum(x, axis=1)`` works as in PyTorch; ``F.softmax(x, axis=1)`` raises as in it."""
    x = ember.ones(2, 3)
    assert ember.sum(x, axis=1).tolist() == [3.0, 3.0]
    assert x.sum(axis=0, keepdims=True).shape == (1, 3)
    with pytest.raises(TypeError):
        ember.sum(x, dim=1, axis=1)
    with pytest.raises(TypeError):
        ember.nn.functional.softmax(x, axis=1)


def test_numpy_names_cost_nothing_in_meaning() -> None:
    """The twin gives the op's own signature and refuses what PyTorch refuses."""
    x = ember.ones(2, 3)
    assert str(inspect.signature(ember.sum)) == str(inspect.signature(ember.ops.sum))
    assert ember.add(x=x, x2=x).tolist() == (x + x).tolist()
    assert ember.max(x, axis=1).values.tolist() == [1.0, 1.0]
    assert ember.cumsum(x, axis=1)[0].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="positional"):
        ember.sum(x, 1, True, ember.float64)  # dtype stays keyword-only
    with pytest.raises(TypeError):
        ember.sum(x=x, a=x)
    with pytest.raises(TypeError):
        x.add(x=x)  # a method's input is the tensor itself
    with pytest.raises(TypeError, match="unexpected keyword"):
        ember.sum(x, axes=1)


@pytest.mark.parametrize("call", [
    lambda m, t, o: m.sum(t, 1, out=o(2)),
    lambda m, t, o: m.mean(t, 0, keepdim=True, out=o(1, 3)),
    lambda m, t, o: m.prod(t, 1, out=o(2)),
    lambda m, t, o: m.amax(t, 1, out=o(2)),
    lambda m, t, o: m.logsumexp(t, 1, out=o(2)),
    lambda m, t, o: m.std(t, 1, out=o(2)),
    lambda m, t, o: m.cumsum(t, 1, out=o(2, 3)),
    lambda m, t, o: m.sum(t, 1, dtype=m.float64, out=o(2, dtype=m.float64)),
    lambda m, t, o: m.sum(t, 1, dtype=m.float64, out=o(2)),  # dtype and out disagree: refused
    lambda m, t, o: m.max(t, 1, out=(o(2), o(2, dtype=m.int64))),
    lambda m, t, o: m.cummax(t, 1, out=(o(2, 3), o(2, 3, dtype=m.int64))),
    lambda m, t, o: m.median(t, 1, out=(o(2), o(2, dtype=m.int64))),
])
def test_reduction_out_matches_pytorch(call: Callable) -> None:
    def run(m: Any) -> Any:
        t = m.tensor([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]])
        try:
            return call(m, t, lambda *shape, dtype=None: m.zeros(*shape, dtype=dtype)), None
        except RuntimeError as e:
            return None, e

    (mine, err_e), (ref, err_t) = run(ember), run(torch)
    assert (err_e is None) == (err_t is None), (err_e, err_t)
    if err_t is None:
        assert _same_result(mine, ref) is None, (mine, ref)


if __name__ == "__main__":  # print the table of current mismatches
    for qual, issues in sorted(all_mismatches().items()):
        print(f"    {qual!r}: {'; '.join(issues)!r},")
