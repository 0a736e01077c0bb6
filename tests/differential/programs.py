"""Differential tester: random short programs run on ember and on PyTorch, compared step by step.

A *program* is a list of :class:`Step` objects (data, not source strings). The same interpreter
(:func:`run`) executes it against either module object (``ember`` or ``torch``); :meth:`Program.source`
prints it as readable ``torch``-style code for a repro. Each program is fully determined by
``(family, seed)``: the generator draws from ``random.Random(f"{family}:{seed}")`` and checks each candidate step
on a PyTorch "shadow" run to learn shapes, dtypes and aliasing (so generation needs torch, as does
the comparison).

What is compared (:func:`compare`): after every step the value it produced (shape, dtype, values
with a dtype-dependent tolerance, ``requires_grad``, ``is_leaf``, ``grad_fn is None``); whether the
step raised (both or neither; the exception *class* is compared loosely, a mismatch is only
reported as a note); and at the end every variable's final value and ``.grad`` (views must see
in-place writes through their base and vice versa; leaf and retained gradients must agree).
Not compared: programs where PyTorch hits an INTERNAL ASSERT (its bug), and ``.grad`` after a
backward that raised in both engines (how far it got is implementation-defined). Gradients of
programs that compute in float32 get a 1e-3 relative tolerance (cancellation in float32).

Families (one generator each, selectable in the tests): ``views`` (views + in-place ops + autograd,
detach, no_grad, retain_grad, double backward), ``indexing`` (every index kind, reading and
writing), ``shape`` (shape ops), ``reductions`` (dim/keepdim/dtype), ``promotion`` (mixed dtypes
and Python scalars).

KNOWN_GAPS
----------
:data:`KNOWN_GAPS` names the generator *features* behind disagreements that ember still has. A
candidate step tagged with a feature in this set is never generated, so the budgeted CI run stays
green while the lead fixes ember. Remove a name as its fix lands (and run long mode: see
docs/testing.md). Each name is documented where it is tagged (:meth:`Builder._alias_tags`,
:meth:`Builder.add`, :func:`_promo_tags` and the family generators); :data:`CLASSES` maps each
disagreement class to its tags, and tests/test_differential.py holds one regression test per class.

CLI::

    python -m tests.differential.programs --family views --n 500 --seed 1
    python -m tests.differential.programs --family views --seed 1234 --n 1 --show   # print one program
"""

from __future__ import annotations

import argparse
import contextlib
import math
import random
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

# Features whose programs ember still gets wrong (see the module docstring). The lead shrinks this.
KNOWN_GAPS: set[str] = set()

# Features whose programs PyTorch itself runs in an undefined way (the result depends on its loop
# order, or on whether an attribute was read before): never generated, whatever KNOWN_GAPS says.
# docs/testing.md ("Undefined in PyTorch") gives the evidence for each.
UNDEFINED: frozenset[str] = frozenset({
    # an operand partly overlapping the written memory where PyTorch cannot check it (one of
    # them is not dense): the values depend on PyTorch's loop order
    "inplace_operand_partial_overlap",
    # an in-place op on a view made before grad entered its base through another view: PyTorch
    # refuses it ("a leaf Variable ...") unless the view's grad_fn was read in between
    "inplace_on_stale_view_after_grad_entered",
    # retain_grad() on such a view: PyTorch's .grad stays None unless the view's grad_fn was
    # read before the retain_grad() call
    "retain_grad_on_stale_view_after_grad_entered",
    # requires_grad_() on a tensor that a recorded op had read, then a double backward: PyTorch's
    # second gradient reaches it only where that op's formula saved the tensor itself (mul), not
    # a view of it taken inside the op (linear saves weight.t(), matmul a view)
    "double_backward_after_requires_grad_on_saved",
})

FAMILIES = ("views", "indexing", "shape", "reductions", "promotion")


# --------------------------------------------------------------------------------------------
# Program representation: expressions and steps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """A reference to a program variable."""

    name: str


@dataclass(frozen=True)
class Lit:
    """A Python literal: number, bool, None, Ellipsis, slice, range, str, or tuple/list of them."""

    value: Any


@dataclass(frozen=True)
class NPArr:
    """A NumPy array literal (``np.array(data, dtype=...)``)."""

    data: Any
    dtype: str


@dataclass(frozen=True)
class TensorLit:
    """``m.tensor(data, dtype=m.<dtype>, requires_grad=...)``; dtype None means the default."""

    data: Any
    dtype: str | None = None
    requires_grad: bool = False


@dataclass(frozen=True)
class DType:
    """``m.<name>`` for a dtype."""

    name: str


@dataclass(frozen=True)
class Call:
    """``m.<fn>(*args, **kwargs)``; ``fn`` may be dotted (``autograd.grad``)."""

    fn: str
    args: tuple = ()
    kwargs: tuple = ()


@dataclass(frozen=True)
class Method:
    """``obj.<name>(*args, **kwargs)``."""

    obj: Any
    name: str
    args: tuple = ()
    kwargs: tuple = ()


@dataclass(frozen=True)
class Attr:
    """``obj.<name>`` (``x.T``, ``x.grad``)."""

    obj: Any
    name: str


@dataclass(frozen=True)
class Bin:
    """``a <op> b`` for a Python binary operator."""

    op: str
    a: Any
    b: Any


@dataclass(frozen=True)
class Neg:
    """``-a`` (or ``~a`` when ``op='~'``)."""

    a: Any
    op: str = "-"


@dataclass(frozen=True)
class Index:
    """``obj[idx]``; ``idx`` is an expression (a :class:`Tup` for several indices)."""

    obj: Any
    idx: Any


@dataclass(frozen=True)
class Tup:
    """A tuple of expressions."""

    items: tuple


@dataclass(frozen=True)
class Lst:
    """A list of expressions."""

    items: tuple


@dataclass(frozen=True)
class Step:
    """One statement.

    kind: ``assign`` (``out = expr``; ``out`` may be a tuple of names for unpacking), ``expr``
    (``expr`` as a statement), ``setitem`` (``target[idx] = expr``), ``aug`` (``target op= expr``).
    ``no_grad`` wraps the statement in ``with torch.no_grad():``.
    """

    kind: str
    expr: Any
    out: Any = None
    target: str | None = None
    idx: Any = None
    op: str | None = None
    no_grad: bool = False
    features: frozenset = frozenset()


@dataclass
class Program:
    """A generated program: its family, seed and steps."""

    family: str
    seed: int
    steps: list[Step]

    @property
    def features(self) -> set[str]:
        """The union of the steps' feature tags."""
        out: set[str] = set()
        for s in self.steps:
            out |= s.features
        return out

    def source(self) -> str:
        """The program as ``torch`` source (runs as-is with ``import ember as torch``)."""
        lines = ["import numpy as np", "import torch", ""]
        for s in self.steps:
            lines.extend(render_step(s))
        return "\n".join(lines)


_BINOPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
    "@": lambda a, b: a @ b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _aug(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        a += b
    elif op == "-":
        a -= b
    elif op == "*":
        a *= b
    elif op == "/":
        a /= b
    elif op == "//":
        a //= b
    elif op == "%":
        a %= b
    elif op == "**":
        a **= b
    elif op == "&":
        a &= b
    elif op == "|":
        a |= b
    else:  # pragma: no cover - generator bug
        raise ValueError(op)
    return a


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _render_lit(v: Any, in_index: bool = False) -> str:
    if isinstance(v, slice):
        parts = ["" if v.start is None else str(v.start), "" if v.stop is None else str(v.stop)]
        s = ":".join(parts)
        if v.step is not None:
            s += f":{v.step}"
        return s if in_index else f"slice({v.start}, {v.stop}, {v.step})"
    if v is Ellipsis:
        return "..."
    if isinstance(v, range):
        return (
            f"range({v.start}, {v.stop}, {v.step})"
            if v.step != 1
            else f"range({v.start}, {v.stop})"
        )
    if isinstance(v, tuple):
        inner = ", ".join(_render_lit(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_render_lit(x) for x in v) + "]"
    return repr(v)


def render(e: Any, in_index: bool = False) -> str:
    """Render an expression as source."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Lit):
        return _render_lit(e.value, in_index)
    if isinstance(e, NPArr):
        return f"np.array({_render_lit(e.data)}, dtype=np.{e.dtype})"
    if isinstance(e, TensorLit):
        s = f"torch.tensor({_render_lit(e.data)}"
        if e.dtype is not None:
            s += f", dtype=torch.{e.dtype}"
        if e.requires_grad:
            s += ", requires_grad=True"
        return s + ")"
    if isinstance(e, DType):
        return f"torch.{e.name}"
    if isinstance(e, Call):
        return f"torch.{e.fn}({_render_args(e.args, e.kwargs)})"
    if isinstance(e, Method):
        return f"{_render_obj(e.obj)}.{e.name}({_render_args(e.args, e.kwargs)})"
    if isinstance(e, Attr):
        return f"{_render_obj(e.obj)}.{e.name}"
    if isinstance(e, Bin):
        return f"{_render_operand(e.a)} {e.op} {_render_operand(e.b)}"
    if isinstance(e, Neg):
        return f"{e.op}{_render_operand(e.a)}"
    if isinstance(e, Index):
        return f"{_render_obj(e.obj)}[{_render_index(e.idx)}]"
    if isinstance(e, Tup):
        inner = ", ".join(render(x) for x in e.items)
        return f"({inner},)" if len(e.items) == 1 else f"({inner})"
    if isinstance(e, Lst):
        return "[" + ", ".join(render(x) for x in e.items) + "]"
    raise TypeError(f"cannot render {e!r}")


def _render_index(idx: Any) -> str:
    if isinstance(idx, Tup):
        if not idx.items:
            return "()"
        inner = ", ".join(render(x, in_index=True) for x in idx.items)
        return inner + ("," if len(idx.items) == 1 else "")
    return render(idx, in_index=True)


def _render_obj(e: Any) -> str:
    s = render(e)
    if isinstance(e, (Bin, Neg)) or (isinstance(e, Lit) and isinstance(e.value, (int, float))):
        return f"({s})"
    return s


def _render_operand(e: Any) -> str:
    s = render(e)
    return f"({s})" if isinstance(e, (Bin, Neg)) else s


def _render_args(args: tuple, kwargs: tuple) -> str:
    parts = [render(a) for a in args] + [f"{k}={render(v)}" for k, v in kwargs]
    return ", ".join(parts)


def render_step(s: Step) -> list[str]:
    """Render one step as source lines."""
    if s.kind == "assign":
        if isinstance(s.out, tuple):
            lhs = ", ".join(s.out) + ("," if len(s.out) == 1 else "")
        else:
            lhs = s.out
        line = f"{lhs} = {render(s.expr)}"
    elif s.kind == "expr":
        line = render(s.expr)
    elif s.kind == "setitem":
        line = f"{s.target}[{_render_index(s.idx)}] = {render(s.expr)}"
    elif s.kind == "aug" and s.idx is not None:
        line = f"{s.target}[{_render_index(s.idx)}] {s.op}= {render(s.expr)}"
    elif s.kind == "aug":
        line = f"{s.target} {s.op}= {render(s.expr)}"
    else:  # pragma: no cover
        raise ValueError(s.kind)
    if s.no_grad:
        return ["with torch.no_grad():", "    " + line]
    return [line]


# --------------------------------------------------------------------------------------------
# Interpreter
# --------------------------------------------------------------------------------------------


class Undefined(Exception):
    """A step names a variable that does not exist (only after minimisation removed its step)."""


def evaluate(e: Any, env: dict, m: Any) -> Any:
    """Evaluate an expression against module ``m`` (ember or torch) and variables ``env``."""
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise Undefined(e.name) from None
    if isinstance(e, Lit):
        return e.value
    if isinstance(e, NPArr):
        return np.array(e.data, dtype=getattr(np, e.dtype))
    if isinstance(e, TensorLit):
        kw: dict[str, Any] = {}
        if e.dtype is not None:
            kw["dtype"] = getattr(m, e.dtype)
        if e.requires_grad:
            kw["requires_grad"] = True
        return m.tensor(e.data, **kw)
    if isinstance(e, DType):
        return getattr(m, e.name)
    if isinstance(e, Call):
        fn = m
        for part in e.fn.split("."):
            fn = getattr(fn, part)
        return fn(*[evaluate(a, env, m) for a in e.args], **_kw(e.kwargs, env, m))
    if isinstance(e, Method):
        obj = evaluate(e.obj, env, m)
        args = [evaluate(a, env, m) for a in e.args]
        return getattr(obj, e.name)(*args, **_kw(e.kwargs, env, m))
    if isinstance(e, Attr):
        return getattr(evaluate(e.obj, env, m), e.name)
    if isinstance(e, Bin):
        return _BINOPS[e.op](evaluate(e.a, env, m), evaluate(e.b, env, m))
    if isinstance(e, Neg):
        a = evaluate(e.a, env, m)
        return -a if e.op == "-" else ~a
    if isinstance(e, Index):
        return evaluate(e.obj, env, m)[evaluate(e.idx, env, m)]
    if isinstance(e, Tup):
        return tuple(evaluate(x, env, m) for x in e.items)
    if isinstance(e, Lst):
        return [evaluate(x, env, m) for x in e.items]
    raise TypeError(f"cannot evaluate {e!r}")


def _kw(kwargs: tuple, env: dict, m: Any) -> dict:
    return {k: evaluate(v, env, m) for k, v in kwargs}


def exec_step(s: Step, env: dict, m: Any) -> Any:
    """Execute one step; return the value it produced (for ``setitem``/``aug``: the target)."""
    ctx = m.no_grad() if s.no_grad else contextlib.nullcontext()
    with ctx:
        if s.kind == "assign":
            val = evaluate(s.expr, env, m)
            if isinstance(s.out, tuple):
                vals = tuple(val)
                if len(vals) != len(s.out):
                    raise ValueError(f"cannot unpack {len(vals)} values into {len(s.out)}")
                for name, v in zip(s.out, vals):
                    env[name] = v
            else:
                env[s.out] = val
            return val
        if s.kind == "expr":
            return evaluate(s.expr, env, m)
        if s.kind == "setitem":
            if s.target not in env:
                raise Undefined(s.target)
            obj = env[s.target]
            obj[evaluate(s.idx, env, m)] = evaluate(s.expr, env, m)
            return obj
        if s.kind == "aug":
            if s.target not in env:
                raise Undefined(s.target)
            if s.idx is not None:  # ``target[idx] op= expr``, with Python's evaluation order
                obj = env[s.target]
                i = evaluate(s.idx, env, m)
                item = obj[i]
                obj[i] = _aug(s.op, item, evaluate(s.expr, env, m))
                return obj
            env[s.target] = _aug(s.op, env[s.target], evaluate(s.expr, env, m))
            return env[s.target]
    raise ValueError(s.kind)  # pragma: no cover


def _is_tensor(x: Any, m: Any) -> bool:
    return isinstance(x, m.Tensor)


def _dtype_name(dt: Any) -> str:
    return str(dt).rsplit(".", 1)[-1]


def describe(x: Any, m: Any) -> Any:
    """A comparable, engine-independent description of a value."""
    if _is_tensor(x, m):
        arr = x.detach()
        if hasattr(arr, "resolve_neg"):
            arr = arr.resolve_neg().resolve_conj()
        if getattr(arr, "_is_zerotensor", lambda: False)():
            # PyTorch's lazily-zero gradient (double backward): numpy() refuses it
            vals = np.zeros(
                tuple(arr.shape), dtype=np.float64 if "64" in str(arr.dtype) else np.float32
            )
        else:
            vals = np.array(arr.cpu().numpy(), copy=True)
        return {
            "t": "tensor",
            "shape": tuple(int(d) for d in x.shape),
            "dtype": _dtype_name(x.dtype),
            "values": vals,
            "requires_grad": bool(x.requires_grad),
            "is_leaf": bool(x.is_leaf),
            "grad_fn_none": x.grad_fn is None,
        }
    if isinstance(x, (tuple, list)) and type(x).__name__ != "Size":
        return {"t": "seq", "items": [describe(i, m) for i in x]}
    if type(x).__name__ == "Size":
        return {"t": "size", "value": tuple(int(d) for d in x)}
    if x is None:
        return {"t": "none"}
    if isinstance(x, (bool, int, float, np.generic)):
        return {"t": "scalar", "value": x.item() if isinstance(x, np.generic) else x}
    if _dtype_name(x) in _DTYPES and "dtype" in type(x).__name__:
        return {"t": "dtype", "value": _dtype_name(x)}
    return {"t": "other", "type": type(x).__name__}


_DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"}


@dataclass
class Trace:
    """What one engine did: a description per step, the error (if any) and the final state."""

    steps: list = field(default_factory=list)
    error: tuple | None = None  # (step index, exception type name, message)
    final: dict = field(default_factory=dict)  # name -> (value description, grad description)
    undefined: bool = False


def run(program: Program, m: Any) -> Trace:
    """Execute ``program`` against module ``m``; stop at the first exception and record it."""
    env: dict[str, Any] = {}
    tr = Trace()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, s in enumerate(program.steps):
            try:
                val = exec_step(s, env, m)
            except Undefined:
                tr.undefined = True
                return tr
            except Exception as exc:  # noqa: BLE001 - every exception is data here
                tr.error = (i, type(exc).__name__, str(exc).split("\n")[0][:300])
                break
            if s.kind == "expr":
                val = None  # a statement's value is discarded (``y[:2].mul_(3)``): not compared
            try:
                tr.steps.append(describe(val, m))
            except Exception as exc:  # noqa: BLE001
                tr.error = (i, type(exc).__name__, "describing result: " + str(exc)[:200])
                break
        for name, v in env.items():
            try:
                grad = getattr(v, "grad", None) if _is_tensor(v, m) else None
                tr.final[name] = (describe(v, m), describe(grad, m))
            except Exception as exc:  # noqa: BLE001
                msg = str(exc).split("\n")[0][:300]
                tr.final[name] = (
                    {"t": "error", "type": type(exc).__name__, "msg": msg},
                    {"t": "none"},
                )
    return tr


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------


@dataclass
class Disagreement:
    """The first difference between the two traces."""

    kind: str  # torch_raises | ember_raises | value | dtype | shape | meta | grad | structure
    step: int | None  # step index (None: final state)
    where: str  # e.g. "step 3 (mul_)" or "final y.grad"
    detail: str
    op: str = ""

    def key(self) -> str:
        """A short class key used to group disagreements."""
        return f"{self.kind}:{self.op}"


_TOL = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6), "float16": (1e-2, 1e-3)}
# float64 results of a program that also computes in float32 carry float32 rounding: compare them
# with float32's tolerance (set by :func:`compare`).
_LOOSE = [False]


def _has_low_precision(tr: Trace) -> bool:
    def low(d: Any) -> bool:
        if d.get("t") == "tensor":
            return d["dtype"] in ("float32", "float16")
        if d.get("t") == "seq":
            return any(low(i) for i in d["items"])
        return False

    return any(low(d) for d in tr.steps) or any(low(v) or low(g) for v, g in tr.final.values())


def _values_close(a: np.ndarray, b: np.ndarray, dtype: str, grad: bool = False) -> bool:
    if a.shape != b.shape:
        return False
    if dtype in _TOL:
        rtol, atol = _TOL["float32" if dtype == "float64" and _LOOSE[0] else dtype]
        if grad and (_LOOSE[0] or dtype in ("float32", "float16")):
            # gradients computed in float32 through saturated functions (1 - tanh^2, ...)
            # lose digits to cancellation; the order of operations differs between engines
            rtol, atol = max(rtol, 1e-3), max(atol, 1e-5)
        a64 = a.astype(np.float64)
        b64 = b.astype(np.float64)
        scale = (
            max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(a64), a64, 0)))))
            if a.size
            else 1.0
        )
        return bool(np.allclose(a64, b64, rtol=rtol, atol=atol * scale, equal_nan=True))
    return bool(np.array_equal(a, b))


def _cmp(d_t: Any, d_e: Any, grad: bool = False) -> tuple[str, str] | None:
    """Compare two descriptions; return (kind, detail) of the first difference or None."""
    if d_t["t"] != d_e["t"]:
        return (
            "grad" if grad else "structure",
            f"torch gives {_brief(d_t)}, ember gives {_brief(d_e)}",
        )
    t = d_t["t"]
    if t == "tensor":
        if d_t["shape"] != d_e["shape"]:
            return (
                "grad" if grad else "shape",
                f"shape torch {d_t['shape']} vs ember {d_e['shape']}",
            )
        if d_t["dtype"] != d_e["dtype"]:
            return (
                "grad" if grad else "dtype",
                f"dtype torch {d_t['dtype']} vs ember {d_e['dtype']}",
            )
        if not _values_close(d_t["values"], d_e["values"], d_t["dtype"], grad):
            return (
                "grad" if grad else "value",
                f"torch {_fmt(d_t['values'])} vs ember {_fmt(d_e['values'])}",
            )
        for k in ("requires_grad", "is_leaf", "grad_fn_none"):
            if d_t[k] != d_e[k]:
                return ("meta", f"{k}: torch {d_t[k]} vs ember {d_e[k]}")
        return None
    if t == "seq":
        if len(d_t["items"]) != len(d_e["items"]):
            return ("structure", f"length torch {len(d_t['items'])} vs ember {len(d_e['items'])}")
        for a, b in zip(d_t["items"], d_e["items"]):
            r = _cmp(a, b, grad)
            if r:
                return r
        return None
    if t == "scalar":
        a, b = d_t["value"], d_e["value"]
        if isinstance(a, float) or isinstance(b, float):
            ok = (
                (math.isnan(a) and math.isnan(b))
                if (a != a or b != b)
                else math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
            )
        else:
            ok = a == b
        if not ok or type(a) is not type(b):
            return ("value", f"torch {a!r} vs ember {b!r}")
        return None
    if t == "error":  # the same error: its class and what it is about (wording may differ)
        if d_t["type"] == d_e["type"] and _msg_key(d_t["msg"]) == _msg_key(d_e["msg"]):
            return None
    if d_t != d_e:
        return ("structure", f"torch {_brief(d_t)} vs ember {_brief(d_e)}")
    return None


def _brief(d: Any) -> str:
    if d.get("t") == "tensor":
        return f"tensor{list(d['shape'])} {d['dtype']} {_fmt(d['values'])}"
    if d.get("t") == "none":
        return "None"
    return str({k: v for k, v in d.items() if k != "t"} or d["t"])


def _fmt(a: np.ndarray) -> str:
    with np.printoptions(precision=6, threshold=24, linewidth=200):
        return " ".join(str(a).split())


def step_op(s: Step) -> str:
    """A short name for what a step does (used in class keys)."""
    e = s.expr
    if s.kind == "setitem":
        return "setitem"
    if s.kind == "aug":
        return f"{s.op}=" if s.idx is None else f"index{s.op}="
    while isinstance(e, (Tup, Index)) and not isinstance(e, (Method, Call)):
        if isinstance(e, Index) and not isinstance(e.obj, (Method, Call)):
            return "getitem"
        e = e.obj if isinstance(e, Index) else (e.items[0] if e.items else None)
    if isinstance(e, Method):
        return e.name
    if isinstance(e, Call):
        return e.fn
    if isinstance(e, Bin):
        return e.op
    if isinstance(e, Neg):
        return "neg"
    if isinstance(e, Attr):
        return e.name
    return type(e).__name__


def compare(program: Program, tt: Trace, te: Trace) -> Disagreement | None:
    """Compare a torch trace with an ember trace of the same program."""
    _LOOSE[0] = _has_low_precision(tt)
    if tt.error and "INTERNAL ASSERT FAILED" in tt.error[2]:
        return None  # a PyTorch bug, not a disagreement to fix in ember (see error_class_note)
    et = tt.error[0] if tt.error else None
    ee = te.error[0] if te.error else None
    n = min(len(tt.steps), len(te.steps))
    grad_outs = set()  # (autograd.grad's results are gradients: the gradients' tolerance)
    for st in program.steps:
        if step_op(st) == "autograd.grad":
            grad_outs |= set(st.out) if isinstance(st.out, tuple) else {st.out}
    for i in range(n):
        r = _cmp(tt.steps[i], te.steps[i], grad=step_op(program.steps[i]) == "autograd.grad")
        if r:
            return Disagreement(r[0], i, f"step {i + 1}", r[1], step_op(program.steps[i]))
    if et != ee:
        first = min(x for x in (et, ee) if x is not None)
        s = program.steps[first]
        if et == first:
            return Disagreement(
                "torch_raises",
                first,
                f"step {first + 1}",
                f"torch raises {tt.error[1]}: {tt.error[2]}; ember returns a value",
                f"{step_op(s)}/{_msg_key(tt.error[2])}",
            )
        return Disagreement(
            "ember_raises",
            first,
            f"step {first + 1}",
            f"ember raises {te.error[1]}: {te.error[2]}; torch returns a value",
            f"{step_op(s)}/{te.error[1]}",
        )
    failed_backward = (
        tt.error is not None
        and te.error is not None
        and step_op(program.steps[tt.error[0]]) in ("backward", "autograd.grad")
    )
    # an index write that fails on an out-of-bounds index: PyTorch's kernel has written the
    # elements before the bad index (a partial write), ember's write is all or nothing
    # (NumPy checks every index first), so what the target holds afterwards is not compared
    failed_write = (
        et is not None
        and et == ee
        and "out of bounds" in tt.error[2]
        and "out of bounds" in te.error[2]
    )
    for name, (v_t, g_t) in tt.final.items():
        if failed_write:
            break
        if name not in te.final:
            return Disagreement("structure", None, f"final {name}", "missing in ember", name)
        v_e, g_e = te.final[name]
        if v_t["t"] == "error" and "INTERNAL ASSERT FAILED" in v_t["msg"]:
            continue  # PyTorch's bug on using this tensor (as for a step, above)
        if v_t["t"] == "error" and v_e["t"] != "error":
            return Disagreement(
                "torch_raises",
                None,
                f"final use of {name}",
                f"torch raises {v_t['type']} on using {name}: {v_t['msg']}; ember returns a value",
                f"use/{_msg_key(v_t['msg'])}",
            )
        if v_e["t"] == "error" and v_t["t"] != "error":
            return Disagreement(
                "ember_raises",
                None,
                f"final use of {name}",
                f"ember raises {v_e['type']} on using {name}: {v_e['msg']}",
                f"use/{v_e['type']}",
            )
        r = _cmp(v_t, v_e, grad=name in grad_outs)
        if r:
            return Disagreement(r[0], None, f"final value of {name}", r[1], "final")
        if failed_backward:
            continue  # .grad after a backward that raised midway is implementation-defined
        r = _cmp(g_t, g_e, grad=True)
        if r:
            return Disagreement("grad", None, f"final {name}.grad", r[1], "final")
    return None


_MSG_KEYS = (
    ("modified by an inplace operation", "modified-inplace"),
    ("leaf Variable that requires grad", "leaf-inplace"),
    ("view of a leaf Variable", "leaf-view-inplace"),
    ("more than one element of the written-to tensor", "overlap-write"),
    ("is a view and its base or another view", "view-of-multioutput"),
    ("does not require grad", "no-grad-output"),
    ("can't be cast to the desired output type", "cast"),
    ("result type", "cast"),
    ("Trying to backward through the graph a second time", "backward-twice"),
    ("was created in no_grad mode", "nograd-view-inplace"),
    ("out of bounds", "out-of-bounds"),
    ("must match the size", "size-mismatch"),
)


def _msg_key(msg: str) -> str:
    for needle, key in _MSG_KEYS:
        if needle in msg:
            return key
    return msg[:40]


def error_class_note(tt: Trace, te: Trace) -> str | None:
    """When both raise at the same step but with different exception classes, say so."""
    if tt.error and "INTERNAL ASSERT FAILED" in tt.error[2]:
        return "PyTorch INTERNAL ASSERT (ignored)"
    if tt.error and te.error and tt.error[0] == te.error[0] and tt.error[1] != te.error[1]:
        return f"{tt.error[1]} vs {te.error[1]}"
    return None


def _modules() -> tuple[Any, Any]:
    import torch

    import ember

    return torch, ember


def check(program: Program) -> tuple[Disagreement | None, Trace, Trace]:
    """Run ``program`` on both engines and compare."""
    torch, ember = _modules()
    tt = run(program, torch)
    te = run(program, ember)
    return compare(program, tt, te), tt, te


def minimize(program: Program, dis: Disagreement, budget: int = 400) -> Program:
    """Remove steps while the disagreement keeps its kind (and its op, for step-level kinds)."""
    torch, ember = _modules()

    def same(p: Program) -> bool:
        tt = run(p, torch)
        if tt.undefined:
            return False
        te = run(p, ember)
        if te.undefined:
            return False
        d = compare(p, tt, te)
        return (
            d is not None
            and d.kind == dis.kind
            and (d.step is None) == (dis.step is None)
            and (d.step is None or d.op == dis.op)
        )

    steps = list(program.steps)
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for i in range(len(steps) - 1, -1, -1):
            if i >= len(steps):
                continue
            cand = steps[:i] + steps[i + 1 :]
            tries += 1
            if cand and same(replace(program, steps=cand)):
                steps = cand
                changed = True
        # try dropping no_grad wrappers
        for i, s in enumerate(steps):
            if s.no_grad:
                cand = steps[:i] + [replace(s, no_grad=False)] + steps[i + 1 :]
                tries += 1
                if same(replace(program, steps=cand)):
                    steps = cand
                    changed = True
    return replace(program, steps=steps)


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------


class Builder:
    """Grows a program step by step, executing each candidate on a PyTorch shadow run."""

    def __init__(self, family: str, seed: int, known_gaps: set[str] | None = None) -> None:
        import torch

        self.torch = torch
        self.family = family
        self.seed = seed
        self.rng = random.Random(f"{family}:{seed}")
        self.steps: list[Step] = []
        self.env: dict[str, Any] = {}
        self.counter = 0
        self.done = False  # a kept step raised: the program ends there
        self.gaps = KNOWN_GAPS if known_gaps is None else known_gaps
        self.seen_version: dict[str, int] = {}
        self.multiout: set[str] = set()  # outputs of split/chunk/unbind (and views of them)
        self.nograd_views: set[str] = set()  # views of requires-grad tensors taken under no_grad
        self.retained: set[str] = set()  # variables that had retain_grad() called
        self.freed = False  # a backward without retain_graph ran
        self.layout_results: set[str] = set()  # results of ops that read non-contiguous inputs
        self.in_graph: set[str] = set()  # tensors without grad that a recorded op read
        self.promoted: set[str] = set()  # tensors a recorded op read beside another dtype
        # tensors given requires_grad_() after a recorded op read them (in_graph)
        self.grad_after_saved: set[str] = set()
        self.whole_fill: set[str] = set()  # targets of x[key] = v that PyTorch ran as fill_
        # views made before grad entered their base through another view, whose grad_fn PyTorch
        # has not re-derived yet (nothing read it since)
        self.stale_views: set[str] = set()
        self.meta_reshaped: set[str] = set()  # graph outputs reshaped in place under no_grad
        self.op_views: set[str] = set()  # results PyTorch made views of its own temporaries

    # ---- names and state ----
    def name(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def tensors(self, pred: Any = None) -> list[str]:
        """Names of tensor variables (optionally filtered by ``pred(tensor)``)."""
        out = []
        for k, v in self.env.items():
            if isinstance(v, self.torch.Tensor) and (pred is None or pred(v)):
                out.append(k)
        return out

    def floats(self) -> list[str]:
        return self.tensors(lambda t: t.is_floating_point())

    def _rebuild(self) -> None:
        self.env = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for s in self.steps:
                exec_step(s, self.env, self.torch)

    def _operand_reads(self, s: Step) -> set[str]:
        """Variables an in-place step reads besides its target (operands, index, value)."""
        if s.kind == "expr" and isinstance(s.expr, Method):
            e = s.expr
            return self._reads(Step("expr", Tup(tuple(e.args) + tuple(v for _, v in e.kwargs))))
        return self._reads(Step("expr", s.expr))  # a setitem's index may read the target

    def _reads(self, s: Step) -> set[str]:
        names: set[str] = set()

        def walk(e: Any) -> None:
            if isinstance(e, Var):
                names.add(e.name)
            elif isinstance(e, (Call, Method)):
                if isinstance(e, Method):
                    walk(e.obj)
                for a in e.args:
                    walk(a)
                for _, v in e.kwargs:
                    walk(v)
            elif isinstance(e, (Attr, Neg)):
                walk(e.obj if isinstance(e, Attr) else e.a)
            elif isinstance(e, Bin):
                walk(e.a)
                walk(e.b)
            elif isinstance(e, Index):
                walk(e.obj)
                walk(e.idx)
            elif isinstance(e, (Tup, Lst)):
                for x in e.items:
                    walk(x)

        walk(s.expr)
        walk(s.idx)
        if s.target:
            names.add(s.target)
        return names

    def _alias_tags(self, s: Step) -> set[str]:
        """Tags about aliasing, computed on the shadow state before ``s`` runs.

        - ``read_base_after_view_inplace``: the step reads a tensor (not a view) whose storage was
          written in place through one of its views since it was last seen (``b[:2].mul_(3);
          b.sum()``); ``..._grad`` when that tensor requires grad and grad mode is on.
        - ``read_view_after_alias_inplace``: the step reads a view whose storage was written
          through its base or a sibling view since the view was created/last written
          (``v = b[:2]; b.mul_(3); v.sum()``); ``..._grad`` likewise.
        - ``inplace_on_view`` / ``inplace_on_view_grad``: an in-place op whose target is a view
          (``_grad``: autograd records it: grad mode on and target or operand requires grad).
        - ``inplace_on_leaf``: an in-place op on a leaf that requires grad (an error unless in
          no_grad).
        - ``inplace_on_inline_view``: an in-place method called on a view expression
          (``y[:2].mul_(3)``; also tagged ``inplace_on_view``).
        - ``inplace_with_aliases``: the target shares storage with another live variable.
        - ``inplace_after_retain_grad``: an in-place op (grad mode on) on a variable that had
          ``retain_grad()`` called: PyTorch moves the retained grad to the new version.
        - ``inplace_multioutput_view_alias``: the target or one of its aliases came from
          ``split``/``chunk``/``unbind`` (PyTorch forbids using such views after in-place writes).
        - ``inplace_nograd_view_alias``: the target or an alias is a view taken under ``no_grad``
          of a tensor that requires grad (PyTorch forbids mixing it with tracked in-place ops).
        - ``inplace_on_expanded_alias``: the target or an alias has a zero stride (``expand``).
        - ``inplace_on_view_of_noncontiguous``: the target is a view whose base is not
          contiguous (e.g. the result of an op on a transposed tensor).
        - ``inplace_operand_aliases_target``: a tensor operand shares storage with the target
          (``v = s.unsqueeze(0); v.copy_(s)``).
        - ``inplace_operand_partial_overlap``: (in :data:`UNDEFINED`) an operand's elements
          partly overlap the target's and one of the two is not dense, so PyTorch cannot check
          the overlap and its result depends on its loop order (``v4.copy_(y[:, 1])`` with
          ``v4 = y.reshape(4, 3)``).
        - ``inplace_on_stale_view_after_grad_entered``: (in :data:`UNDEFINED`, tagged by
          :meth:`add`) an in-place op on a view made before grad entered its base through
          another view, with nothing reading the view's ``grad_fn`` since.
        - ``backward_after_freed_graph``: (tagged by :meth:`add`) a backward after an earlier
          one without ``retain_graph=True``.
        - ``view_of_result_of_noncontiguous``: (tagged by :meth:`add`) ``.view()`` of the result
          of an op that read a non-contiguous tensor (its memory layout is the op's choice).
        - ``inplace_on_saved_constant``: (tagged by :meth:`add`) an in-place op on a tensor that
          does not require grad but that a recorded op read (and may have saved for backward).
        - ``inplace_int_target_grad_operand``: (tagged by :meth:`add`) an in-place op on an
          integer tensor with an operand that requires grad (``k.copy_(x)``).
        - ``double_backward_empty``: (tagged by :meth:`add`) ``autograd.grad(create_graph=True)``
          of a loss built from an empty tensor.
        - ``create_graph_with_retain_grad``: (tagged by :meth:`add`) ``autograd.grad(...,
          create_graph=True)`` (or the backward after it) while a tensor has ``retain_grad()``.
        - ``grad_enters_view_of_constant`` / ``grad_enters_constant_with_views``: (tagged by
          :meth:`add`) an in-place op with a requires-grad operand on a view of a tensor that does
          not require grad (or on such a tensor that has views): the base starts requiring grad.
        - ``view_in_no_grad``: (tagged by :meth:`add`) a view op under ``no_grad`` on a tensor that
          requires grad: PyTorch's result keeps ``requires_grad=True`` as a leaf.
        """
        tags: set[str] = set()
        grad_on = not s.no_grad
        for n in self._reads(s):
            v = self.env.get(n)
            if not isinstance(v, self.torch.Tensor):
                continue
            if n in self.seen_version and v._version != self.seen_version[n]:
                base = (
                    "read_view_after_alias_inplace"
                    if v._base is not None
                    else "read_base_after_view_inplace"
                )
                tags.add(base)
                if grad_on and v.requires_grad:
                    tags.add(base + "_grad")
        tgt = self._inplace_target(s)
        if tgt is not None:
            v = self.env.get(tgt)
            if isinstance(v, self.torch.Tensor):
                rg = v.requires_grad or any(
                    isinstance(self.env.get(n), self.torch.Tensor) and self.env[n].requires_grad
                    for n in self._reads(s)
                )
                inline = (
                    isinstance(s.expr, Method)
                    and not isinstance(s.expr.obj, Var)
                    and s.kind == "expr"
                )
                if inline:
                    tags.add("inplace_on_inline_view")
                if v._base is not None or inline:
                    tags.add("inplace_on_view")
                    if grad_on and rg:
                        tags.add("inplace_on_view_grad")
                if _leaf(v) and v.requires_grad:
                    tags.add("inplace_on_leaf")
                key = _storage(v)
                aliases = {
                    k
                    for k, w in self.env.items()
                    if isinstance(w, self.torch.Tensor) and _storage(w) == key
                }
                if aliases & self.retained:
                    tags.add("inplace_after_retain_grad")
                tv = v
                if inline:
                    with contextlib.suppress(Exception), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        tv = evaluate(s.expr.obj, self.env, self.torch)
                cands = [self.env[k] for k in aliases] + [tv]
                if any(st == 0 and sz > 1 for w in cands for st, sz in zip(w.stride(), w.shape)):
                    tags.add("inplace_on_expanded_alias")
                if (tv._base is not None and not tv._base.is_contiguous()) or (
                    v._base is not None and not v._base.is_contiguous()
                ):
                    tags.add("inplace_on_view_of_noncontiguous")
                for n in self._operand_reads(s):
                    w = self.env.get(n)
                    if isinstance(w, self.torch.Tensor) and _storage(w) == key:
                        tags.add("inplace_operand_aliases_target")
                        if _partial_overlap_unchecked(tv, w):
                            tags.add("inplace_operand_partial_overlap")
                if aliases & self.multiout:
                    tags.add("inplace_multioutput_view_alias")
                if aliases & self.nograd_views:
                    tags.add("inplace_nograd_view_alias")
                for k, w in self.env.items():
                    if k != tgt and isinstance(w, self.torch.Tensor) and _storage(w) == key:
                        tags.add("inplace_with_aliases")
                        if grad_on and rg:
                            tags.add("inplace_with_aliases_grad")
                        break
        return tags

    def _inplace_target(self, s: Step) -> str | None:
        if s.kind in ("setitem", "aug"):
            return s.target
        e = s.expr
        if (
            s.kind in ("expr", "assign")
            and isinstance(e, Method)
            and e.name.endswith("_")
            and not e.name.startswith("_")
        ):
            if e.name in ("requires_grad_", "retain_grad"):
                return None
            if isinstance(e.obj, Var):
                return e.obj.name
            return _root_var(e.obj)  # an in-place op on an inline view: ``y[:2].mul_(3)``
        return None

    def add(self, s: Step, allow_error: float = 0.0) -> bool:
        """Try step ``s`` on the shadow run; keep it when it runs (or, with probability
        ``allow_error``, when it raises: the program then ends there). Returns whether kept."""
        if self.done:
            return False
        tags = set(s.features) | self._alias_tags(s)
        if s.no_grad:
            tags.add("no_grad")
        src = _root_var(s.expr) if "view" in tags else None
        src_t = self.env.get(src) if src else None
        if "inplace_on_inline_view" in tags:
            src_t = self.env.get(self._inplace_target(s) or "")
        if s.no_grad and isinstance(src_t, self.torch.Tensor) and src_t.requires_grad:
            tags.add("view_in_no_grad")
        if src in self.nograd_views:
            tags.add("view_of_nograd_view")
        if self.freed and ("backward" in tags or "double_backward" in tags):
            tags.add("backward_after_freed_graph")
        e = s.expr
        if (
            isinstance(e, Method)
            and e.name in ("view", "view_as")
            and _root_var(e) in self.layout_results
        ):
            tags.add("view_of_result_of_noncontiguous")
        if "double_backward" in tags and any(
            isinstance(self.env.get(n), self.torch.Tensor) and self.env[n].numel() == 0
            for n in self._reads(s)
        ):
            tags.add("double_backward_empty")
        if self.retained and "double_backward" in tags:
            tags.add("create_graph_with_retain_grad")
        if self.grad_after_saved and "double_backward" in tags:
            tags.add("double_backward_after_requires_grad_on_saved")
        if self.whole_fill and "double_backward" in tags:
            tags.add("double_backward_through_whole_fill")
        tgt = self._inplace_target(s)
        tv = self.env.get(tgt or "")
        if isinstance(tv, self.torch.Tensor) and not tv.requires_grad:
            key = _storage(tv)
            if any(_storage(self.env[n]) == key for n in self.in_graph if n in self.env):
                tags.add("inplace_on_saved_constant")
        if (
            isinstance(tv, self.torch.Tensor)
            and not tv.is_floating_point()
            and (
                _has_grad_literal(s)
                or any(
                    isinstance(self.env.get(n), self.torch.Tensor) and self.env[n].requires_grad
                    for n in self._operand_reads(s)
                )
            )
        ):
            tags.add("inplace_int_target_grad_operand")
        if isinstance(tv, self.torch.Tensor) and not s.no_grad and not tv.requires_grad:
            ops = [self.env.get(n) for n in self._operand_reads(s)]
            if _has_grad_literal(s) or any(
                isinstance(o, self.torch.Tensor) and o.requires_grad for o in ops
            ):
                root = tv._base if tv._base is not None else tv
                if tv._base is not None or "inplace_on_inline_view" in tags:
                    tags.add("grad_enters_view_of_constant")
                elif any(
                    isinstance(w, self.torch.Tensor)
                    and w is not tv
                    and _storage(w) == _storage(root)
                    for w in self.env.values()
                ):
                    tags.add("grad_enters_constant_with_views")
        if "inplace_after_retain_grad" in tags and any(t.startswith("inplace_meta:") for t in tags):
            tags.add("inplace_meta_after_retain_grad")
        if ("retain_grad" in tags and isinstance(s.expr, Method) and isinstance(s.expr.obj, Var)
                and s.expr.obj.name in self.meta_reshaped):
            tags.add("inplace_meta_after_retain_grad")  # (the other order: same class)
        if tgt is not None and (tgt in self.stale_views or _root_var(s.expr) in self.stale_views):
            tags.add("inplace_on_stale_view_after_grad_entered")
        if ("retain_grad" in tags and isinstance(s.expr, Method) and isinstance(s.expr.obj, Var)
                and s.expr.obj.name in self.stale_views):
            tags.add("retain_grad_on_stale_view_after_grad_entered")
        if tgt is not None and (tgt in self.op_views or _root_var(s.expr) in self.op_views):
            tags.add("inplace_on_op_internal_view")
        s = replace(s, features=frozenset(tags))
        if tags & self.gaps or tags & UNDEFINED:
            return False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec_step(s, self.env, self.torch)
        except Exception:  # noqa: BLE001
            if self.rng.random() < allow_error:
                self.steps.append(replace(s, features=s.features | {"raises"}))
                self.done = True
                return True
            self._rebuild()
            return False
        self.steps.append(s)
        if s.kind == "setitem":  # x[key] = value that PyTorch runs as x.fill_(value)
            w = self.env.get(s.target)
            # (a view's grad_fn is not read: the read re-derives its history in PyTorch)
            if (isinstance(w, self.torch.Tensor) and w._base is None
                    and type(w.grad_fn).__name__.startswith("FillBackward")):
                self.whole_fill.add(s.target)
        if "inplace_meta_on_graph_output_in_no_grad" in tags and tgt is not None:
            self.meta_reshaped.add(tgt)
        if not s.no_grad:  # reading a view under grad mode re-derives its grad_fn in PyTorch
            self.stale_views -= self._reads(s) - {tgt}
        if tags & {"grad_enters_view_of_constant", "grad_enters_constant_with_views"}:
            key = _storage(tv)
            fresh = None if "inplace_on_inline_view" in tags else tgt  # (its grad_fn is new)
            self.stale_views |= {
                k for k, w in self.env.items()
                if k != fresh and isinstance(w, self.torch.Tensor) and w._base is not None
                and _storage(w) == key
            }
        outs = set(s.out) if isinstance(s.out, tuple) else {s.out}
        if "view" in tags:
            if tags & {"view:split", "view:chunk", "view:unbind"} or src in self.multiout:
                self.multiout |= outs
            if "view_in_no_grad" in tags or src in self.nograd_views:
                self.nograd_views |= outs
        if "view" not in tags and any(
                isinstance(self.env.get(n), self.torch.Tensor) and self.env[n]._base is not None
                for n in outs):
            self.op_views |= outs
        if s.kind == "assign" and not isinstance(s.out, tuple):
            o = self.env.get(s.out)
            ins = [self.env.get(n) for n in self._reads(s) if n != s.out]
            if isinstance(o, self.torch.Tensor) and (
                any(isinstance(w, self.torch.Tensor) and not w.is_contiguous() for w in ins)
                or self._reads(s) & self.layout_results
            ):
                self.layout_results.add(s.out)
        if not s.no_grad and s.kind != "setitem":
            ins = {n: self.env.get(n) for n in self._reads(s)}
            if len({w.dtype for w in ins.values() if isinstance(w, self.torch.Tensor)}) > 1:
                self.promoted |= {n for n, w in ins.items() if isinstance(w, self.torch.Tensor)}
            if any(isinstance(w, self.torch.Tensor) and w.requires_grad for w in ins.values()):
                self.in_graph |= {
                    n
                    for n, w in ins.items()
                    if isinstance(w, self.torch.Tensor) and not w.requires_grad
                }
        if "backward" in tags and "retain_graph" not in render_step(s)[-1]:
            self.freed = True
        if "retain_grad" in tags and isinstance(s.expr, Method) and isinstance(s.expr.obj, Var):
            self.retained.add(s.expr.obj.name)
        # bookkeeping of versions
        for n in self._reads(s) | (set(s.out) if isinstance(s.out, tuple) else {s.out}):
            v = self.env.get(n)
            if isinstance(v, self.torch.Tensor):
                if (
                    n == s.out
                    or (isinstance(s.out, tuple) and n in s.out)
                    or n == self._inplace_target(s)
                ):
                    self.seen_version[n] = v._version
                elif n not in self.seen_version:
                    self.seen_version[n] = v._version
        return True

    def program(self) -> Program:
        return Program(self.family, self.seed, list(self.steps))

    # ---- random data ----
    def data(self, shape: tuple, lo: float = -2.0, hi: float = 2.0, dtype: str = "float64") -> Any:
        r = self.rng
        n = int(np.prod(shape)) if shape else 1
        if dtype.startswith("float"):
            # multiples of 1/8: sums of data are exact, so both engines cancel to the same value
            # (and never 0.0: x * -1 would make -0.0, whose sign ops may treat differently)
            flat = [round(r.uniform(lo, hi) * 8) / 8 or 0.125 for _ in range(n)]
        elif dtype == "bool":
            flat = [r.random() < 0.5 for _ in range(n)]
        else:
            flat = [r.randint(int(lo), int(hi)) for _ in range(n)]
        arr = np.array(flat, dtype=object).reshape(shape) if shape else flat[0]
        return arr.tolist() if shape else arr

    def leaf(
        self,
        shape: tuple,
        dtype: str = "float64",
        requires_grad: bool = True,
        prefix: str = "x",
        lo: float = -2.0,
        hi: float = 2.0,
    ) -> str:
        n = self.name(prefix)
        rg = requires_grad and dtype.startswith("float")
        self.add(Step("assign", TensorLit(self.data(shape, lo, hi, dtype), dtype, rg), out=n))
        return n

    def weights(self, name: str) -> Any:
        """``torch.linspace(0.5, 1.5, n, dtype=...).reshape(shape)`` matching variable ``name``."""
        t = self.env[name]
        e: Any = Call(
            "linspace",
            (Lit(0.5), Lit(1.5), Lit(t.numel())),
            (("dtype", DType(_dtype_name(t.dtype))),),
        )
        return e if t.dim() == 1 else Method(e, "reshape", (Lit(tuple(t.shape)),))

    def backward_of(self, name: str, features: frozenset = frozenset()) -> bool:
        """``(name * w).sum().backward()`` with distinct weights (so wrong gradients show)."""
        t = self.env.get(name)
        if not isinstance(t, self.torch.Tensor) or not t.is_floating_point():
            return False
        loss = Method(Bin("*", Var(name), self.weights(name)), "sum")
        kw: tuple = (("retain_graph", Lit(True)),) if self.rng.random() < 0.3 else ()
        return self.add(
            Step("expr", Method(loss, "backward", (), kw), features=features | {"backward"}),
            allow_error=1.0,
        )


# Tags that describe a step's context (computed by Builder.add from the shadow state), as opposed
# to what the step itself does; :func:`retag` recomputes them for a minimised program.
CONTEXT_TAGS = frozenset(
    {
        "raises", "no_grad", "read_view_after_alias_inplace", "read_view_after_alias_inplace_grad",
        "read_base_after_view_inplace", "read_base_after_view_inplace_grad", "inplace_on_view",
        "inplace_on_view_grad", "inplace_on_inline_view", "inplace_on_leaf",
        "inplace_with_aliases", "inplace_with_aliases_grad", "inplace_after_retain_grad",
        "inplace_multioutput_view_alias", "inplace_nograd_view_alias", "inplace_on_expanded_alias",
        "inplace_on_view_of_noncontiguous", "inplace_operand_aliases_target", "view_in_no_grad",
        "view_of_nograd_view", "backward_after_freed_graph", "create_graph_with_retain_grad",
        "grad_enters_view_of_constant", "grad_enters_constant_with_views",
        "inplace_on_saved_constant", "view_of_result_of_noncontiguous",
        "inplace_int_target_grad_operand", "double_backward_empty",
        "inplace_operand_partial_overlap", "inplace_on_stale_view_after_grad_entered",
        "inplace_meta_after_retain_grad", "double_backward_after_requires_grad_on_saved",
        "retain_grad_on_stale_view_after_grad_entered", "double_backward_through_whole_fill",
    }
)  # fmt: skip


def retag(program: Program) -> Program:
    """Recompute the context tags of ``program``'s steps (after minimisation removed steps)."""
    b = Builder(program.family, program.seed, set())
    for st in program.steps:
        if b.done:
            break
        b.add(replace(st, features=st.features - CONTEXT_TAGS), allow_error=1.0)
    if len(b.steps) != len(program.steps):
        return program  # the shadow run diverged: keep the generation-time tags
    return replace(program, steps=b.steps)


def _has_grad_literal(s: Step) -> bool:
    """Whether a step builds a tensor literal with ``requires_grad=True``."""
    return "requires_grad=True" in "\n".join(render_step(s))


def _root_var(e: Any) -> str | None:
    """The first variable an expression reads (the source of a view chain)."""
    while True:
        if isinstance(e, Var):
            return e.name
        if isinstance(e, (Method, Attr, Index)):
            e = e.obj
        elif isinstance(e, Call) and e.args:
            e = e.args[0]
        else:
            return None


def _leaf(t: Any) -> bool | None:
    """``t.is_leaf``, or None where PyTorch refuses to say (a poisoned no_grad view)."""
    try:
        return bool(t.is_leaf)
    except RuntimeError:
        return None


def _rr(r: random.Random, a: int, b: int | None = None) -> int:
    """``r.randrange`` that returns the lower end for an empty range (zero-size dims)."""
    lo, hi = (0, a) if b is None else (a, b)
    return r.randrange(lo, hi) if hi > lo else lo


def _offsets(t: Any) -> set[int]:
    """The storage offsets (in elements) of every element of tensor ``t``."""
    idx = np.zeros((), dtype=np.int64) + t.storage_offset()
    for size, stride in zip(t.shape, t.stride()):
        idx = idx[..., None] + np.arange(size, dtype=np.int64) * stride
    return set(idx.reshape(-1).tolist())


def _dense(t: Any) -> bool:
    """PyTorch's "non-overlapping and dense": its elements fill a block of memory exactly once."""
    dims = sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1)
    expect = 1
    for st, sz in dims:
        if st != expect:
            return False
        expect *= sz
    return True


def _partial_overlap_unchecked(a: Any, b: Any) -> bool:
    """``a`` and ``b`` share some memory but not all of it the same way, and PyTorch's overlap
    check gives up (one of them is not dense): what an in-place op computes is then its loop
    order's business."""
    same = (a.shape == b.shape and a.stride() == b.stride()
            and a.storage_offset() == b.storage_offset())
    if same or a.numel() == 0 or b.numel() == 0:
        return False
    if not _offsets(a) & _offsets(b):
        return False
    return not (_dense(a) and _dense(b))


def _storage(t: Any) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001
        return id(t)


# ---------------- views family ----------------

# atan, not sin: sin of a large float32 argument (exp of exp reaches thousands) turns the one-ulp
# difference between two libms' exp into a 1e-4 difference, which no fixed tolerance can tell
# from a bug. atan is well conditioned everywhere and has a non-trivial derivative too.
_INPLACE_UNARY = ("exp_", "sigmoid_", "tanh_", "relu_", "neg_", "zero_", "abs_", "atan_")
_INPLACE_SCALAR = ("mul_", "add_", "sub_", "div_", "pow_", "fill_", "clamp_", "clamp_min_")
_INPLACE_TENSOR = ("mul_", "add_", "sub_", "div_", "copy_")


def _broadcastable_to(src: tuple, dst: tuple) -> bool:
    if len(src) > len(dst):
        return False
    for a, b in zip(reversed(src), reversed(dst)):
        if a != b and a != 1:
            return False
    return True


def _view_expr(b: Builder, name: str) -> tuple[Any, str] | None:
    """A random view expression of variable ``name`` and its feature name."""
    r = b.rng
    t = b.env[name]
    shp = tuple(t.shape)
    nd = len(shp)
    v = Var(name)
    choices = ["unsqueeze", "view", "reshape", "flatten", "expand"]
    if nd >= 1 and shp[0] > 0:
        choices += [
            "slice",
            "select",
            "narrow",
            "step_slice",
            "split",
            "chunk",
            "unbind",
            "squeeze",
        ]
    if nd >= 2:
        choices += ["transpose", "diagonal", "permute", "t", "slice2", "select2", "T"]
    if nd == 1:
        choices += ["t"]
    kind = r.choice(choices)
    d = _rr(r, nd) if nd else 0
    n0 = shp[d] if nd else 1
    if kind == "slice":
        a = r.randint(0, max(0, shp[0] - 1))
        e = Index(v, Lit(slice(a, r.randint(a + 1, shp[0]) if r.random() < 0.7 else None)))
    elif kind == "slice2":
        a = r.randint(0, max(0, shp[1] - 1))
        e = Index(v, Tup((Lit(slice(None)), Lit(slice(a, None)))))
    elif kind == "step_slice":
        e = Index(v, Lit(slice(r.choice([None, 1]), None, r.choice([2, 3]))))
    elif kind == "select":
        e = (
            Index(v, Lit(_rr(r, -shp[0], shp[0])))
            if r.random() < 0.5
            else Method(v, "select", (Lit(d), Lit(_rr(r, n0))))
        )
    elif kind == "select2":
        e = Index(v, Tup((Lit(slice(None)), Lit(_rr(r, shp[1])))))
    elif kind == "narrow":
        start = _rr(r, n0) if n0 else 0
        e = Method(v, "narrow", (Lit(d), Lit(start), Lit(r.randint(0, n0 - start))))
    elif kind == "transpose":
        e = Method(v, "transpose", (Lit(0), Lit(_rr(r, -1, nd) or 1)))
    elif kind == "T":
        e = Attr(v, "T") if nd == 2 else Method(v, "t")
    elif kind == "t":
        e = Method(v, "t")
    elif kind == "diagonal":
        kw = (("offset", Lit(r.choice([-1, 1]))),) if r.random() < 0.3 else ()
        e = (
            Method(v, "diagonal", (), kw)
            if nd == 2 or r.random() < 0.5
            else Method(v, "diagonal", (Lit(0), Lit(nd - 2), Lit(nd - 1)))
        )
    elif kind == "permute":
        perm = list(range(nd))
        r.shuffle(perm)
        e = Method(v, "permute", tuple(Lit(p) for p in perm))
    elif kind == "unsqueeze":
        e = Method(v, "unsqueeze", (Lit(r.randint(-nd - 1, nd)),))
    elif kind == "squeeze":
        e = (
            Method(Method(v, "unsqueeze", (Lit(0),)), "squeeze", (Lit(0),))
            if r.random() < 0.5
            else Method(v, "squeeze")
        )
    elif kind == "view":
        e = (
            Method(v, "view", (Lit(-1),))
            if r.random() < 0.5
            else Method(v, "view", (Lit(shp[::-1]),))
        )
    elif kind == "reshape":
        e = Method(v, "reshape", (Lit((-1,) if r.random() < 0.4 else shp[::-1]),))
    elif kind == "flatten":
        e = Method(v, "flatten")
    elif kind == "expand":
        e = Method(
            Method(v, "unsqueeze", (Lit(0),)), "expand", (Lit(2),) + tuple(Lit(-1) for _ in shp)
        )
    elif kind == "split":
        e = Index(
            Method(v, "split", (Lit(r.randint(1, max(1, shp[0]))),)),
            Lit(0 if r.random() < 0.5 else -1),
        )
    elif kind == "chunk":
        e = Index(Method(v, "chunk", (Lit(2),)), Lit(0))
    elif kind == "unbind":
        e = Index(Method(v, "unbind", (Lit(0),)), Lit(_rr(r, shp[0])))
    else:  # pragma: no cover
        return None
    return e, kind


def _scalar(r: random.Random) -> Any:
    return r.choice([2, 3, -1, 0.5, 1.5, -2.0, 0.25])


def _inplace_step(b: Builder, name: str) -> Step | None:
    r = b.rng
    t = b.env[name]
    shp = tuple(t.shape)
    v = Var(name)
    roll = r.random()
    feats = {"inplace"}
    if roll < 0.25:
        op = r.choice(_INPLACE_UNARY)
        return Step("expr", Method(v, op), features=frozenset(feats | {op}))
    if roll < 0.5:
        op = r.choice(_INPLACE_SCALAR)
        if op == "clamp_":
            args: tuple = (Lit(-0.5), Lit(0.7))
        elif op == "pow_":
            args = (Lit(r.choice([2, 3])),)
        elif op == "div_":
            args = (Lit(r.choice([2, -4, 0.5])),)
        elif op == "clamp_min_":
            args = (Lit(0.1),)
        else:
            args = (Lit(_scalar(r)),)
        return Step("expr", Method(v, op, args), features=frozenset(feats | {op}))
    if roll < 0.7:
        op = r.choice(_INPLACE_TENSOR)
        cands = [
            n for n in b.tensors() if n != name and _broadcastable_to(tuple(b.env[n].shape), shp)
        ]
        if cands and r.random() < 0.2:  # addcmul_/addcdiv_ (the target may be an operand:
            op = r.choice(["addcmul_", "addcdiv_"])  # y.addcmul_(y, t, value=0.5))
            t1, t2 = Var(r.choice(cands + [name])), Var(r.choice(cands + [name]))
            if any(b.env[o.name].dtype != t.dtype for o in (t1, t2)):
                feats.add("dtype_mix")
            div = Bin("+", Method(t2, "abs"), Lit(1.0)) if op == "addcdiv_" else t2
            return Step("expr", Method(v, op, (t1, div), (("value", Lit(0.5)),)),
                        features=frozenset(feats | {op, "inplace_tensor_arg"}))
        if cands and r.random() < 0.7:
            other: Any = Var(r.choice(cands))
            if b.env[other.name].dtype != t.dtype:
                feats.add("dtype_mix")
        else:
            other = TensorLit(
                b.data(shp[-1:] if shp and r.random() < 0.5 else shp, 0.5, 2.0),
                "float64",
                r.random() < 0.3,
            )
        if op == "div_" and isinstance(other, Var):
            other = Bin("+", Method(other, "abs"), Lit(1.0))
        kw: tuple = (("alpha", Lit(2)),) if op in ("add_", "sub_") and r.random() < 0.3 else ()
        return Step(
            "expr",
            Method(v, op, (other,), kw),
            features=frozenset(feats | {op, "inplace_tensor_arg"}),
        )
    if roll < 0.82 and shp:
        idx: Any = Lit(_rr(r, shp[0])) if r.random() < 0.5 else Lit(slice(0, max(1, shp[0] // 2)))
        val: Any = Lit(_scalar(r))
        if r.random() < 0.4:
            cands = [n for n in b.floats() if n != name]
            if cands:
                val = Bin("*", Var(r.choice(cands)), Lit(2.0))
        return Step("setitem", val, target=name, idx=idx, features=frozenset(feats | {"setitem"}))
    if roll < 0.9:
        op = r.choice(["+", "-", "*"])
        return Step(
            "aug", Lit(_scalar(r)), target=name, op=op, features=frozenset(feats | {"aug" + op})
        )
    if roll < 0.95 and shp:
        m = [n for n in b.tensors() if _broadcastable_to(tuple(b.env[n].shape), shp)]
        mask = (
            Bin(">", Var(r.choice(m)), Lit(0))
            if m
            else TensorLit(b.data(shp, dtype="bool"), "bool")
        )
        return Step(
            "expr",
            Method(v, "masked_fill_", (mask, Lit(_scalar(r)))),
            features=frozenset(feats | {"masked_fill_"}),
        )
    if shp and shp[0] >= 2:
        idx_t = TensorLit([0, shp[0] - 1, 0], "int64")
        src = TensorLit(b.data((3,) + shp[1:], 0.5, 2.0), "float64", r.random() < 0.3)
        return Step(
            "expr",
            Method(v, "index_add_", (Lit(0), idx_t, src)),
            features=frozenset(feats | {"index_add_"}),
        )
    return None


def _flat(name: str, n: int) -> Any:
    """``name.reshape(-1)[:n]``: a 1-D view of the first ``n`` elements."""
    return Index(Method(Var(name), "reshape", (Lit(-1),)), Lit(slice(None, n, None)))


def _saving_op_expr(b: Builder, name: str) -> Any:
    """An op whose backward reads each operand only for another one's gradient (linear, einsum,
    1-D ``@``, addcmul, addcdiv, conv1d): PyTorch saves an operand only when that gradient is
    needed, so a later in-place change of it (under no_grad, or of a constant) is refused only
    then. Operands are other variables or views of them (in-place changes reach the views)."""
    r = b.rng
    t = b.env[name]
    fl = [n for n in b.floats() if b.env[n].dtype == t.dtype and b.env[n].numel() > 0]
    if t.numel() == 0 or not fl:
        return None
    o = r.choice(fl)
    v = Var(name)
    n, m = t.numel(), b.env[o].numel()
    kind = r.choice(["linear", "linear_w", "matmul_1d", "mv", "einsum", "addcmul", "addcdiv",
                     "conv1d"])
    feats = {"saving_op", "saving_op:" + kind}
    if kind in ("linear", "linear_w"):
        if kind == "linear_w" and t.dim() == 2:  # the variable is the weight
            k = t.shape[-1]
            if m < k:
                return None
            args: tuple = (Method(_flat(o, k), "unsqueeze", (Lit(0),)), v)
        else:
            k = t.shape[-1] if t.dim() else 1
            if m < k or t.dim() == 0:
                return None
            w = Var(o) if b.env[o].dim() == 2 and b.env[o].shape[-1] == k else Method(
                _flat(o, k), "unsqueeze", (Lit(0),))
            args = (v, w)
            if t.dim() > 2:
                try:
                    t.view(-1, k)
                except RuntimeError:  # PyTorch flattens the batch into a copy, which it saves
                    feats.add("linear_batched_input_copied")
        if r.random() < 0.3:  # a bias: another variable's first element(s)
            bias = r.choice(fl)
            args = (*args, _flat(bias, 1))
        return Call("nn.functional.linear", args), feats
    if kind == "matmul_1d":
        k = min(n, m)
        return Bin("@", _flat(name, k), _flat(o, k)), feats
    if kind == "mv":
        if t.dim() != 2 or m < t.shape[-1]:
            return None
        return Bin("@", v, _flat(o, t.shape[-1])), feats
    if kind == "einsum":
        k = min(n, m)
        eq = r.choice(["i,i->", "i,j->ij", "i,i->i"])
        return Call("einsum", (Lit(eq), _flat(name, k), _flat(o, k))), feats
    if kind in ("addcmul", "addcdiv"):
        shp = tuple(t.shape)
        ok = [x for x in fl if _broadcastable_to(tuple(b.env[x].shape), shp)]
        if not ok:
            return None
        o1, o2 = r.choice(ok), r.choice(ok)
        return Call(kind, (v, Var(o1), Var(o2)), (("value", Lit(0.5)),)), feats
    kk = min(m, n, 3)
    x3 = Method(v, "reshape", (Lit((1, 1, -1)),))
    w3 = Method(_flat(o, kk), "reshape", (Lit((1, 1, kk)),))
    return Call("nn.functional.conv1d", (x3, w3)), feats


def _outofplace_expr(b: Builder, name: str) -> Any:
    r = b.rng
    v = Var(name)
    t = b.env[name]
    roll = r.random()
    if roll < 0.4:
        fn = r.choice(["exp", "tanh", "sigmoid", "atan", "relu", "clone", "abs", "square"])
        return Method(v, fn) if r.random() < 0.6 else Call(fn, (v,))
    if roll < 0.5:
        return Bin("**", v, Lit(r.choice([2, 3])))
    others = [
        n
        for n in b.tensors()
        if _broadcastable_to(tuple(b.env[n].shape), tuple(t.shape))
        or _broadcastable_to(tuple(t.shape), tuple(b.env[n].shape))
    ]
    if roll < 0.62:
        o = Var(r.choice(others)) if others else Lit(0.5)
        kind = r.choice(["where", "maximum", "masked_fill", "clamp", "cat", "mul_scalar_tensor"])
        if kind == "where":
            return Call("where", (Bin(">", v, Lit(0)), v, o))
        if kind == "maximum" and isinstance(o, Var):
            return Call("maximum", (v, o))
        if kind == "masked_fill":
            return Method(v, "masked_fill", (Bin("<", v, Lit(0)), Lit(_scalar(r))))
        if kind == "cat" and t.dim():
            return Call("cat", (Lst((v, Bin("*", v, Lit(2.0)))),), (("dim", Lit(-1)),))
        if kind == "mul_scalar_tensor":  # a 0-d tensor, maybe of another dtype
            val = _scalar(r)
            dt = r.choice(["float32", "float64"]) if isinstance(val, float) else "int64"
            return Bin("*", v, TensorLit(val, dt))
        return Method(v, "clamp", (), (("min", Lit(-0.5)), ("max", Lit(1.0))))
    op = r.choice(["*", "+", "-", "/"])
    if others and r.random() < 0.7:
        o = r.choice(others)
        other: Any = Var(o)
        if op == "/":
            other = Bin("+", Method(other, "abs"), Lit(1))
        return Bin(op, v, other) if r.random() < 0.5 else Bin(op, other, v)
    return Bin(op, v, Lit(_scalar(r)))


def gen_views(b: Builder) -> None:
    """Views, in-place ops through them, out-of-place ops, reductions, autograd."""
    r = b.rng
    shape = r.choice([(4,), (3, 4), (4, 4), (2, 3, 4), (6,), (2, 4)])
    x = b.leaf(shape, dtype="float64" if r.random() < 0.85 else "float32")
    if r.random() < 0.3:
        b.leaf(
            r.choice([shape, shape[-1:], (1,) + shape[1:]]),
            requires_grad=r.random() < 0.5,
            prefix="c",
        )
    if r.random() < 0.15:
        b.leaf(
            shape[-1:],
            dtype=r.choice(["float32", "int64"]),
            requires_grad=False,
            prefix="k",
            lo=1,
            hi=3,
        )
    double = r.random() < 0.12
    # start from a non-leaf most of the time
    if r.random() < 0.85:
        n = b.name("y")
        e = (
            Bin("*", Var(x), Lit(r.choice([2, 1.5, -1])))
            if r.random() < 0.5
            else _outofplace_expr(b, x)
        )
        b.add(Step("assign", e, out=n))
    n_steps = r.randint(2, 9)
    for _ in range(n_steps * 3):
        if b.done or len(b.steps) >= n_steps + 3:
            break
        ts = b.tensors()
        if not ts:
            break
        ng = r.random() < 0.1
        roll = r.random()
        if roll < 0.3:
            name = r.choice(ts)
            ve = _view_expr(b, name)
            if ve is None:
                continue
            e, kind = ve
            b.add(
                Step(
                    "assign",
                    e,
                    out=b.name("v"),
                    no_grad=ng,
                    features=frozenset({"view", "view:" + kind}),
                ),
                allow_error=0.1,
            )
        elif roll < 0.62:
            fl = b.floats() if r.random() < 0.95 else ts
            pref = [n for n in fl if b.env[n]._base is not None]
            name = r.choice(pref if pref and r.random() < 0.6 else fl)
            s = None
            roll2 = r.random()
            if roll2 < 0.08:
                # through ``.data`` (not tracked by autograd; its own version counter)
                ve: Any = (Attr(Var(name), "data"), "data")
            elif roll2 < 0.35:
                # through an inline view: ``y[:2].mul_(3)``
                ve = _view_expr(b, name)
            else:
                ve = None
            if roll2 < 0.35:
                if ve is not None:
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            b.env["__view"] = evaluate(ve[0], b.env, b.torch)
                        s = _inplace_step(b, "__view")
                    except Exception:  # noqa: BLE001 - an invalid view: skip
                        s = None
                    b.env.pop("__view", None)
                    if s is not None and s.kind == "expr" and s.expr.obj == Var("__view"):
                        extra = {"inplace_through_data" if ve[1] == "data" else "view:" + ve[1]}
                        if ve[1] == "data" and name in b.promoted:
                            extra.add("inplace_through_data_promoted")
                        s = replace(
                            s,
                            expr=replace(s.expr, obj=ve[0]),
                            features=s.features | extra,
                        )
                    else:
                        s = None
            elif roll2 < 0.42:
                # in-place metadata ops
                t = b.env[name]
                nd = t.dim()
                ops = (
                    ["unsqueeze_", "squeeze_"]
                    + (["t_"] if nd <= 2 else [])
                    + (["transpose_"] if nd >= 2 else [])
                )
                op = r.choice(ops)
                args: tuple = (
                    (Lit(0),)
                    if op == "unsqueeze_"
                    else (Lit(0), Lit(-1))
                    if op == "transpose_"
                    else ()
                )
                feats = {"inplace_meta:" + op}
                try:  # (reading grad_fn raises for a stale output of split/unbind)
                    graph_output = t._base is None and t.grad_fn is not None
                except RuntimeError:
                    graph_output = False
                if ng and graph_output:  # reshapes a graph output
                    feats.add("inplace_meta_on_graph_output_in_no_grad")
                s = Step("expr", Method(Var(name), op, args), features=frozenset(feats))
            else:
                s = _inplace_step(b, name)
            if s is not None:
                b.add(replace(s, no_grad=ng), allow_error=0.5)
        elif roll < 0.77:
            name = r.choice(b.floats() or ts)
            saving = _saving_op_expr(b, name) if r.random() < 0.3 else None
            if saving is not None:  # (an in-place change of an operand may follow)
                b.add(
                    Step("assign", saving[0], out=b.name("y"), no_grad=ng,
                         features=frozenset(saving[1])),
                    allow_error=0.1,
                )
                continue
            b.add(
                Step("assign", _outofplace_expr(b, name), out=b.name("y"), no_grad=ng),
                allow_error=0.2,
            )
        elif roll < 0.84:
            name = r.choice(ts)
            t = b.env[name]
            fn = r.choice(["sum", "mean"])
            args: tuple = ()
            kw: tuple = ()
            if t.dim() and r.random() < 0.6:
                args = (Lit(_rr(r, -t.dim(), t.dim())),)
                if r.random() < 0.5:
                    kw = (("keepdim", Lit(True)),)
            b.add(
                Step(
                    "assign",
                    Method(Var(name), fn, args, kw),
                    out=b.name("s"),
                    no_grad=ng,
                    features=frozenset({"reduce"}),
                ),
                allow_error=0.3,
            )
        elif roll < 0.88 and r.random() < 0.25:
            consts = [n for n in b.floats() if not b.env[n].requires_grad and _leaf(b.env[n])]
            if consts:
                c = r.choice(consts)
                f = {"requires_grad_"}
                if b.env[c]._base is not None:
                    f.add("requires_grad_on_view")  # a view of a tensor without grad
                key = _storage(b.env[c])
                if any(
                    k != c and isinstance(w, b.torch.Tensor) and _storage(w) == key
                    for k, w in b.env.items()
                ):
                    f.add("requires_grad_with_views")  # its views start requiring grad
                if c in b.op_views or b.env[c]._base is not None and any(
                        _storage(b.env[k]) == key for k in b.op_views if k in b.env):
                    f.add("requires_grad_on_op_internal_view")  # (see KNOWN_GAPS)
                if b.add(
                    Step("expr", Method(Var(c), "requires_grad_"), features=frozenset(f)),
                    allow_error=0.5,
                ) and any(_storage(b.env[k]) == key for k in b.in_graph if k in b.env):
                    b.grad_after_saved.add(c)
        elif roll < 0.88:
            name = r.choice(ts)
            b.add(
                Step(
                    "assign",
                    Method(Var(name), "detach"),
                    out=b.name("d"),
                    features=frozenset({"detach"}),
                )
            )
        elif roll < 0.92:
            nl = [n for n in ts if b.env[n].requires_grad and _leaf(b.env[n]) is False]
            if nl:
                b.add(
                    Step(
                        "expr",
                        Method(Var(r.choice(nl)), "retain_grad"),
                        features=frozenset({"retain_grad"}),
                    )
                )
        elif roll < 0.95:
            name = r.choice(ts)
            cast = r.choice(["float", "double", "to_f32"])
            e = (
                Method(Var(name), "to", (DType("float32"),))
                if cast == "to_f32"
                else Method(Var(name), cast)
            )
            b.add(Step("assign", e, out=b.name("y"), features=frozenset({"cast"})))
        else:
            g = [n for n in ts if b.env[n].requires_grad]
            if g:
                b.backward_of(r.choice(g), frozenset({"mid_backward"}))
    if b.done:
        return
    # the final backward (or double backward)
    g = [n for n in b.tensors() if b.env[n].requires_grad and b.env[n].is_floating_point()]
    if not g:
        return
    last = [n for n in g if not n.startswith("x")] or g
    target = last[-1] if r.random() < 0.6 else r.choice(g)
    if double and target != x:
        loss = Method(Bin("*", Bin("*", Var(target), Var(target)), b.weights(target)), "sum")
        gn = b.name("g")
        ok = b.add(
            Step(
                "assign",
                Call("autograd.grad", (loss, Lst((Var(x),))), (("create_graph", Lit(True)),)),
                out=(gn,),
                features=frozenset({"double_backward"}),
            ),
            allow_error=1.0,
        )
        if ok and not b.done:
            b.backward_of(gn, frozenset({"double_backward"}))
        return
    b.backward_of(target)


# ---------------- indexing family ----------------


def _index_item(b: Builder, size: int, kinds: list[str]) -> tuple[Any, str, bool]:
    """One index component for a dim of ``size``: (expr, kind, consumes a dim)."""
    r = b.rng
    k = r.choice(kinds)
    if k == "int":
        return Lit(_rr(r, -size, size) if r.random() < 0.95 else size), k, True
    if k == "slice":
        a = r.choice([None, 0, 1, -2, -1])
        c = r.choice([None, size, -1, 2, size + 3])
        st = r.choice([None, None, 1, 2, 3])
        return Lit(slice(a, c, st)), k, True
    if k == "none":
        return Lit(None), k, False
    if k == "list":
        return Lit([_rr(r, -size, size) for _ in range(r.randint(1, 3))]), k, True
    if k == "range":
        return Lit(range(0, size, r.choice([1, 2]))), k, True
    if k == "nparr":
        return NPArr([_rr(r, size) for _ in range(r.randint(1, 3))], "int64"), k, True
    if k == "nparr2d":
        return NPArr([[_rr(r, size) for _ in range(2)] for _ in range(2)], "int64"), k, True
    if k == "npbool":
        return NPArr([r.random() < 0.5 for _ in range(size)], "bool_"), k, True
    if k == "tensor0d":
        return TensorLit(_rr(r, size), "int64"), k, True
    if k == "tensor1d":
        return TensorLit([_rr(r, -size, size) for _ in range(r.randint(1, 3))], "int64"), k, True
    if k == "tensor2d":
        return (
            TensorLit([[_rr(r, size) for _ in range(2)] for _ in range(r.randint(1, 2))], "int64"),
            k,
            True,
        )
    if k == "booltensor":
        return TensorLit([r.random() < 0.5 for _ in range(size)], "bool"), k, True
    if k == "pybool":
        return Lit(r.random() < 0.5), k, False
    return Lit(slice(None)), "slice", True


_INDEX_KINDS = [
    "int",
    "slice",
    "none",
    "list",
    "range",
    "nparr",
    "nparr2d",
    "npbool",
    "tensor0d",
    "tensor1d",
    "tensor2d",
    "booltensor",
    "pybool",
]


def _random_index(b: Builder, shape: tuple) -> tuple[Any, set[str]]:
    r = b.rng
    nd = len(shape)
    items: list[Any] = []
    kinds: set[str] = set()
    dim = 0
    ell = nd >= 2 and r.random() < 0.2
    kinds_pool = _INDEX_KINDS if r.random() < 0.7 else ["int", "slice", "none"]
    n_items = r.randint(1, nd + 1) if nd else 1
    for _j in range(n_items):
        if dim >= nd:
            if r.random() < 0.5:
                items.append(Lit(None))
                kinds.add("none")
            break
        if ell and r.random() < 0.3 and "ellipsis" not in kinds:
            items.append(Lit(Ellipsis))
            kinds.add("ellipsis")
            dim = nd - max(0, n_items - len(items) - 0)
            dim = max(dim, 0)
            continue
        e, k, consume = _index_item(b, shape[dim], kinds_pool)
        items.append(e)
        kinds.add(k)
        if consume:
            dim += 1
    if r.random() < 0.1 and nd >= 2:
        # a whole-tensor boolean mask
        return Bin(">", Var("__base__"), Lit(0.0)), {"mask_full"}
    if r.random() < 0.1 and nd >= 2:
        # a tuple of lists (paired advanced indices)
        n = r.randint(1, 3)
        return Tup(
            (Lit([_rr(r, shape[0]) for _ in range(n)]), Lit([_rr(r, shape[1]) for _ in range(n)]))
        ), {"tuple_of_lists"}
    if len(items) == 1 and r.random() < 0.6:
        return items[0], kinds
    return Tup(tuple(items)), kinds


def _subst_base(e: Any, name: str) -> Any:
    if isinstance(e, Bin) and e.a == Var("__base__"):
        return Bin(e.op, Var(name), e.b)
    return e


def gen_indexing(b: Builder) -> None:
    """Reading and writing with every index kind, with gradients."""
    r = b.rng
    shape = r.choice([(5,), (4, 5), (3, 4, 5), (2, 3, 4), (3, 3)])
    dtype = "float64" if r.random() < 0.8 else r.choice(["int64", "float32"])
    x = b.leaf(shape, dtype=dtype, requires_grad=dtype == "float64")
    for _ in range(r.randint(1, 3)):
        if b.done:
            return
        idx, kinds = _random_index(b, shape)
        feats = frozenset({"index:" + k for k in kinds})
        if r.random() < 0.5:
            # read
            idx = _subst_base(idx, x)
            b.add(
                Step(
                    "assign", Index(Var(x), idx), out=b.name("r"), features=feats | {"index_read"}
                ),
                allow_error=0.25,
            )
        else:
            y = b.name("y")
            if not b.add(Step("assign", Method(Var(x), "clone"), out=y)):
                return
            if len(shape) >= 2 and r.random() < 0.3:
                # write through a view of the clone: ``w = y.t(); w[idx] = value``
                w = b.name("w")
                ve = r.choice(
                    [
                        Method(Var(y), "transpose", (Lit(0), Lit(-1))),
                        Index(Var(y), Lit(slice(1, None))),
                        Index(Var(y), Tup((Lit(Ellipsis), Lit(slice(None, None, 2))))),
                    ]
                )
                if b.add(Step("assign", ve, out=w, features=frozenset({"view"}))):
                    y = w
                    idx, kinds = _random_index(b, tuple(b.env[w].shape))
                    feats = frozenset({"index:" + k for k in kinds} | {"index_write_through_view"})
            idx = _subst_base(idx, y)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    target_shape = tuple(b.env[y][evaluate(idx, b.env, b.torch)].shape)
                except Exception:  # noqa: BLE001
                    target_shape = None
            vr = r.random()
            if vr < 0.4 or target_shape is None:
                val: Any = Lit(_scalar(r) if dtype != "int64" else r.randint(-3, 3))
            elif vr < 0.8:
                sh = target_shape[1:] if target_shape and r.random() < 0.3 else target_shape
                vdt = dtype if r.random() < 0.85 else r.choice(["float32", "int64", "float64"])
                val = TensorLit(
                    b.data(sh, 0.5, 3.0, vdt),
                    vdt,
                    vdt == "float64" and dtype == "float64" and r.random() < 0.6,
                )
            else:
                val = TensorLit(b.data((r.randint(1, 3),), 0.5, 3.0, dtype), dtype)
            # tags: index_write_dtype_mismatch_advanced (a tensor value of another dtype through
            # an advanced index), index_write_empty_target (a tensor value into an empty region)
            wf = {"index_write"}
            adv = kinds - {"int", "slice", "none", "ellipsis"}
            aug = r.random() < 0.25
            if isinstance(val, TensorLit) and val.dtype != dtype and adv and not aug:
                wf.add("index_write_dtype_mismatch_advanced")
            if isinstance(val, TensorLit) and target_shape is not None and 0 in target_shape:
                wf.add("index_write_empty_target")
            if aug:  # ``y[idx] += val``
                op = r.choice(["+", "-", "*"])
                st = Step("aug", val, target=y, idx=idx, op=op, features=feats | wf | {"index_aug"})
            else:
                st = Step("setitem", val, target=y, idx=idx, features=feats | wf)
            b.add(st, allow_error=0.25)
            if not b.done and r.random() < 0.5:
                b.add(Step("assign", Method(Var(y), "sum"), out=b.name("s")))
    if not b.done and r.random() < 0.6:
        e = _index_op_expr(b, x)
        if e is not None:
            src = e[0]
            if e[2]:  # in place: on a clone
                y = b.name("y")
                b.add(Step("assign", Method(Var(x), "clone"), out=y))
                src = replace(src, obj=Var(y))
                b.add(Step("expr", src, features=frozenset({"index_op:" + e[1]})), allow_error=0.3)
            else:
                b.add(
                    Step("assign", src, out=b.name("r"), features=frozenset({"index_op:" + e[1]})),
                    allow_error=0.3,
                )
    if b.done or dtype != "float64":
        return
    outs = [n for n in b.tensors() if n != x and b.env[n].requires_grad]
    if outs:
        b.backward_of(r.choice(outs[-3:]))  # often the written tensor's base, not the view


def _unique_index(b: Builder, shape: tuple, d: int, k: int) -> Any:
    """An int64 index tensor of ``shape`` with dim ``d`` of size ``k``, unique along ``d``."""
    ishape = list(shape)
    ishape[d] = k
    arr = np.zeros(ishape, dtype=np.int64)
    others = [n for i, n in enumerate(ishape) if i != d]
    for pos in np.ndindex(*others):
        line = b.rng.sample(range(shape[d]), k)
        key = list(pos)
        key.insert(d, slice(None))
        arr[tuple(key)] = line
    return TensorLit(arr.tolist(), "int64")


def _index_op_expr(b: Builder, name: str) -> tuple[Any, str, bool] | None:
    """(expression, op name, in place) for gather/scatter/index_*/take/put/masked ops."""
    r = b.rng
    t = b.env[name]
    shape = tuple(t.shape)
    nd = len(shape)
    if nd == 0 or 0 in shape:
        return None
    d = r.randrange(nd)
    n = shape[d]
    v = Var(name)
    dt = _dtype_name(t.dtype)
    rg = dt == "float64" and r.random() < 0.5

    def idx1(unique: bool) -> Any:
        k = r.randint(1, n)
        vals = r.sample(range(n), k) if unique else [r.randrange(n) for _ in range(k)]
        return TensorLit(vals, "int64"), k

    def src(sh: tuple) -> Any:
        return TensorLit(b.data(sh, 0.5, 2.0, dt), dt, rg)

    op = r.choice(
        ["gather", "index_select", "take", "masked_select", "scatter", "scatter_add",
         "index_add", "index_copy", "index_fill", "index_put_", "masked_scatter", "put_",
         "scatter_", "index_add_", "index_fill_", "masked_fill"]
    )  # fmt: skip
    if op == "gather":
        k = r.randint(1, 3)
        ishape = list(shape)
        ishape[d] = k
        idx = TensorLit(
            np.array([r.randrange(n) for _ in range(math.prod(ishape))]).reshape(ishape).tolist(),
            "int64",
        )
        return Call("gather", (v, Lit(d), idx)), op, False
    if op == "index_select":
        idx, _k = idx1(False)
        return Method(v, "index_select", (Lit(d), idx)), op, False
    if op == "take":
        return (
            Call("take", (v, TensorLit([r.randrange(t.numel()) for _ in range(3)], "int64"))),
            op,
            False,
        )
    if op == "masked_select":
        return Call("masked_select", (v, Bin(">", v, Lit(0)))), op, False
    if op == "masked_fill":
        return Method(v, "masked_fill", (Bin("<", v, Lit(0)), Lit(0.5))), op, False
    if op in ("scatter", "scatter_", "scatter_add"):
        k = r.randint(1, n)
        idx = _unique_index(b, shape, d, k) if op != "scatter_add" else None
        if idx is None:
            ishape = list(shape)
            ishape[d] = k
            idx = TensorLit(
                np.array([r.randrange(n) for _ in range(math.prod(ishape))])
                .reshape(ishape)
                .tolist(),
                "int64",
            )
        ishape = list(shape)
        ishape[d] = k
        return Method(v, op, (Lit(d), idx, src(tuple(ishape)))), op, op.endswith("_")
    if op in ("index_add", "index_add_", "index_copy"):
        idx, k = idx1(op == "index_copy")
        sh = list(shape)
        sh[d] = k
        kw = (("alpha", Lit(2)),) if op != "index_copy" and r.random() < 0.3 else ()
        return Method(v, op, (Lit(d), idx, src(tuple(sh))), kw), op, op.endswith("_")
    if op in ("index_fill", "index_fill_"):
        idx, _k = idx1(False)
        return Method(v, op, (Lit(d), idx, Lit(-1.5))), op, op.endswith("_")
    if op == "index_put_":
        m = r.randint(1, 3)
        acc = r.random() < 0.5
        rows = (
            [r.randrange(shape[0]) for _ in range(m)]
            if acc
            else r.sample(range(shape[0]), min(m, shape[0]))
        )
        vals = src((len(rows),) + shape[1:])
        return (
            Method(
                v,
                "index_put_",
                (Tup((TensorLit(rows, "int64"),)), vals),
                (("accumulate", Lit(acc)),),
            ),
            op,
            True,
        )
    if op == "put_":
        acc = r.random() < 0.5
        pos = (
            [r.randrange(t.numel()) for _ in range(3)]
            if acc
            else r.sample(range(t.numel()), min(3, t.numel()))
        )
        return (
            Method(
                v, "put_", (TensorLit(pos, "int64"), src((len(pos),))), (("accumulate", Lit(acc)),)
            ),
            op,
            True,
        )
    # masked_scatter
    mask = Bin(">", v, Lit(0))
    return Call("masked_scatter", (v, mask, src(shape))), op, False


# ---------------- shape family ----------------


def _shape_expr(b: Builder, name: str) -> tuple[Any, str]:
    r = b.rng
    t = b.env[name]
    shp = tuple(t.shape)
    nd = len(shp)
    v = Var(name)
    numel = t.numel()
    ops = [
        "reshape",
        "view",
        "flatten",
        "unsqueeze",
        "flip",
        "repeat",
        "cat",
        "stack",
        "contiguous",
        "expand",
    ]
    if nd:
        ops += [
            "squeeze",
            "split",
            "chunk",
            "unbind",
            "roll",
            "narrow",
            "movedim",
            "tile",
            "repeat_interleave",
            "unflatten",
            "transpose",
            "permute",
        ]
    if nd == 2:
        ops += ["t", "T", "tril", "mT"]
    op = r.choice(ops)
    d = _rr(r, nd) if nd else 0
    if op == "reshape":
        divs = [k for k in range(1, numel + 1) if numel % k == 0] or [1]
        k = r.choice(divs)
        return Method(
            v, "reshape", (Lit(k), Lit(-1)) if r.random() < 0.5 else (Lit((numel // k, k)),)
        ), op
    if op == "view":
        return Method(v, "view", (Lit(-1),) if r.random() < 0.5 else (Lit(shp[::-1]),)), op
    if op == "flatten":
        return (
            Method(v, "flatten", (Lit(0), Lit(-1)))
            if nd >= 2 and r.random() < 0.5
            else Call("flatten", (v,))
        ), op
    if op == "unsqueeze":
        return Call("unsqueeze", (v, Lit(r.randint(-nd - 1, nd)))), op
    if op == "flip":
        return Call("flip", (v, Lit((d,) if nd else ()))), op
    if op == "repeat":
        return Method(
            v, "repeat", tuple(Lit(r.choice([1, 2])) for _ in range(max(nd, 1) + r.randint(0, 1)))
        ), op
    if op == "tile":
        return Call("tile", (v, Lit((2,)))), op
    if op == "cat":
        others = [
            n for n in b.tensors() if tuple(b.env[n].shape)[1:] == shp[1:] and b.env[n].dim() == nd
        ]
        o = r.choice(others) if others else name
        return Call("cat", (Lst((v, Var(o))),), (("dim", Lit(0)),) if r.random() < 0.5 else ()), op
    if op == "stack":
        return Call("stack", (Lst((v, Bin("*", v, Lit(2.0)))), Lit(r.randint(-nd - 1, nd)))), op
    if op == "contiguous":
        return Method(v, "contiguous"), op
    if op == "expand":
        return Method(Method(v, "unsqueeze", (Lit(0),)), "expand", (Lit((3,) + shp),)), op
    if op == "squeeze":
        return Call("squeeze", (v, Lit(d))) if r.random() < 0.5 else Method(v, "squeeze"), op
    if op == "split":
        sizes = r.choice(
            [Lit(r.randint(1, max(1, shp[d]))), Lit([1, shp[d] - 1] if shp[d] > 1 else [1])]
        )
        return Index(Call("split", (v, sizes, Lit(d))), Lit(-1)), op
    if op == "chunk":
        return Index(Method(v, "chunk", (Lit(r.randint(1, 3)), Lit(d))), Lit(0)), op
    if op == "unbind":
        return Index(Call("unbind", (v, Lit(d))), Lit(_rr(r, shp[d]) if shp[d] else 0)), op
    if op == "roll":
        return Call("roll", (v, Lit(r.randint(-3, 3)), Lit(d))), op
    if op == "narrow":
        s = _rr(r, shp[d]) if shp[d] else 0
        return Method(v, "narrow", (Lit(d), Lit(s), Lit(r.randint(0, shp[d] - s)))), op
    if op == "movedim":
        return Call("movedim", (v, Lit(d), Lit(_rr(r, nd)))), op
    if op == "repeat_interleave":
        return Method(v, "repeat_interleave", (Lit(2),), (("dim", Lit(d)),)), op
    if op == "unflatten":
        n = shp[d]
        divs = [k for k in range(1, n + 1) if n % k == 0] or [1]
        k = r.choice(divs)
        return Method(v, "unflatten", (Lit(d), Lit((k, -1)))), op
    if op == "transpose":
        return Call("transpose", (v, Lit(d), Lit(_rr(r, -nd, nd)))), op
    if op == "permute":
        p = list(range(nd))
        r.shuffle(p)
        return Method(v, "permute", (Lit(tuple(p)),)), op
    if op == "t":
        return Method(v, "t"), op
    if op in ("T", "mT"):
        return Attr(v, op), op
    return Call("tril", (v,)), op


def gen_shape(b: Builder) -> None:
    """Chains of shape ops, then a weighted backward."""
    r = b.rng
    shape = r.choice([(6,), (2, 3), (3, 4), (2, 3, 4), (1, 4), (4, 1, 2), (2, 2, 1, 3)])
    x = b.leaf(shape)
    cur = x
    for _ in range(r.randint(1, 4)):
        if b.done:
            return
        e, op = _shape_expr(b, cur)
        n = b.name("y")
        if b.add(Step("assign", e, out=n, features=frozenset({"shape:" + op})), allow_error=0.2):
            cur = n
    if not b.done and cur != x:
        b.backward_of(cur)


# ---------------- reductions family ----------------


def gen_reductions(b: Builder) -> None:
    """Reductions with dim (int, negative, tuple, None), keepdim and dtype."""
    r = b.rng
    shape = r.choice(
        [(5,), (3, 4), (2, 3, 4), (4, 1), (2, 0, 3)]
        if r.random() < 0.05
        else [(5,), (3, 4), (2, 3, 4), (4, 1)]
    )
    dtype = r.choice(["float64"] * 6 + ["float32", "int64", "bool"])
    x = b.leaf(
        shape,
        dtype=dtype,
        requires_grad=dtype == "float64",
        lo=-3 if dtype == "int64" else -2,
        hi=3 if dtype == "int64" else 2,
    )
    if len(shape) >= 2 and r.random() < 0.35:
        # reduce a non-contiguous view of the input (transposed, strided, expanded, flipped)
        kind = r.choice(["t", "step", "expand", "flip"])
        e: Any = {
            "t": Method(Var(x), "transpose", (Lit(0), Lit(-1))),
            "step": Index(Var(x), Tup((Lit(Ellipsis), Lit(slice(None, None, 2))))),
            "expand": Method(
                Method(Var(x), "unsqueeze", (Lit(1),)),
                "expand",
                (Lit(-1), Lit(2)) + tuple(Lit(-1) for _ in shape[1:]),
            ),
            "flip": Call("flip", (Var(x), Lit((0,)))),
        }[kind]
        v = b.name("v")
        if b.add(Step("assign", e, out=v, features=frozenset({"reduce_input:" + kind}))):
            x = v
            shape = tuple(b.env[v].shape)
    nd = len(shape)
    for _ in range(r.randint(1, 2)):
        if b.done:
            return
        fn = r.choice(
            [
                "sum",
                "mean",
                "prod",
                "amax",
                "amin",
                "max",
                "min",
                "std",
                "var",
                "logsumexp",
                "norm",
                "argmax",
                "argmin",
                "cumsum",
                "cumprod",
                "all",
                "any",
                "count_nonzero",
                "nansum",
                "softmax",
                "log_softmax",
            ]
        )
        args: tuple = ()
        kw: list = []
        single_dim = fn in (
            "max",
            "min",
            "argmax",
            "argmin",
            "cumsum",
            "cumprod",
            "softmax",
            "log_softmax",
        )
        if nd and (single_dim or r.random() < 0.7):
            if single_dim or r.random() < 0.6:
                dim: Any = _rr(r, -nd, nd)
            else:
                dim = tuple(sorted(r.sample(range(nd), r.randint(1, nd))))
            args = (Lit(dim),)
            if (
                fn not in ("cumsum", "cumprod", "softmax", "log_softmax", "count_nonzero")
                and r.random() < 0.5
            ):
                kw.append(("keepdim", Lit(r.random() < 0.6)))
        if fn in ("sum", "cumsum", "prod", "mean") and r.random() < 0.25:
            kw.append(("dtype", DType(r.choice(["float64", "float32", "int64"]))))
        if fn in ("std", "var") and r.random() < 0.4:
            kw.append(("correction", Lit(r.choice([0, 1, 2]))))
        if fn == "norm" and r.random() < 0.5:
            args = (Lit(r.choice([1, 2, 3.0, float("inf")])),) + ((args[0],) if args else ())
            fn_call = (
                Call("norm", (Var(x),) + args, tuple(kw))
                if r.random() < 0.5
                else Method(Var(x), "norm", args, tuple(kw))
            )
        else:
            fn_call = (
                Method(Var(x), fn, args, tuple(kw))
                if r.random() < 0.6
                else Call(fn, (Var(x),) + args, tuple(kw))
            )
        # tags: reduce_bool:<fn> (bool input), norm_p0 (norm with p=0; also when a dim lands
        # in norm's positional p), int_dtype_reduce_grad (dtype=int64 on a requires-grad input)
        feats = {"reduce:" + fn}
        if dtype == "bool":
            feats.add("reduce_bool:" + fn)
        if fn in ("softmax", "log_softmax") and dtype in ("int64", "bool") and 0 in shape:
            feats.add("reduce_empty_int")  # softmax of an empty integer tensor
        if fn == "norm" and args and args[0].value == 0:
            feats.add("norm_p0")
        if dtype == "float64" and ("dtype", DType("int64")) in kw:
            feats.add("int_dtype_reduce_grad")
        if fn in ("std", "var"):
            corr = dict(kw).get("correction", Lit(1)).value
            dims = args[0].value if args else tuple(range(nd))
            dims = (dims,) if isinstance(dims, int) else dims
            if corr >= math.prod(shape[d] for d in dims):
                feats.add("var_dof_nonpositive")  # std/var with correction >= the sample size
        out = b.name("s")
        if fn in ("max", "min") and args and r.random() < 0.6:
            ok = b.add(
                Step("assign", fn_call, out=(out, b.name("i")), features=frozenset(feats)),
                allow_error=0.3,
            )
        else:
            ok = b.add(
                Step("assign", fn_call, out=out, features=frozenset(feats)),
                allow_error=0.3,
            )
        if (
            ok
            and not b.done
            and isinstance(b.env.get(out), b.torch.Tensor)
            and b.env[out].requires_grad
        ):
            b.backward_of(out)


# ---------------- promotion family ----------------

_PROMO_DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64"]


def _promo_operand(b: Builder) -> Any:
    r = b.rng
    roll = r.random()
    if roll < 0.2:
        return Lit(r.choice([2, -3, 0, 1.5, -0.5, True, False, 3]))
    dt = r.choice(_PROMO_DTYPES)
    shape = r.choice([(), (3,), (2, 3)])
    lo, hi = (0, 1) if dt == "bool" else ((1, 5) if dt == "uint8" else (-3, 4))
    if dt.startswith("float"):
        lo, hi = -2.0, 2.0
    data = b.data(shape, lo, hi, dt)
    if r.random() < 0.5:
        n = b.name("a")
        b.add(Step("assign", TensorLit(data, dt), out=n))
        return Var(n)
    return TensorLit(data, dt)


def gen_promotion(b: Builder) -> None:
    """Binary ops and in-place ops on mixed dtypes, 0-d tensors and Python scalars."""
    r = b.rng
    for _ in range(r.randint(1, 4)):
        if b.done:
            return
        a = _promo_operand(b)
        c = _promo_operand(b)
        if isinstance(a, Lit) and isinstance(c, Lit):
            continue
        roll = r.random()
        if roll < 0.55:
            op = r.choice(["+", "-", "*", "/", "//", "%", "**", "==", "<", ">=", "&", "|", "^"])
            e: Any = Bin(op, a, c)
        elif roll < 0.8:
            fn = r.choice(
                [
                    "add",
                    "sub",
                    "mul",
                    "div",
                    "maximum",
                    "minimum",
                    "where",
                    "true_divide",
                    "floor_divide",
                    "remainder",
                    "pow",
                    "atan2",
                    "eq",
                    "result_type",
                ]
            )
            if fn == "where":
                e = Call(
                    "where",
                    (
                        Bin(">", a, Lit(0))
                        if not isinstance(a, Lit)
                        else TensorLit([True, False, True], "bool"),
                        a,
                        c,
                    ),
                )
            elif fn in ("add", "sub") and r.random() < 0.3:
                e = Call(fn, (a, c), (("alpha", Lit(r.choice([2, 0.5]))),))
            elif fn == "div" and r.random() < 0.3:
                e = Call("div", (a, c), (("rounding_mode", Lit(r.choice(["floor", "trunc"]))),))
            else:
                e = Call(fn, (a, c))
            op = fn
        else:
            # in-place: target must be a variable tensor
            if not isinstance(a, Var):
                continue
            op = r.choice(["+", "-", "*", "/"])
            tags = _promo_tags(b, op, a, c, (), False) | {"promo_inplace"}
            if r.random() < 0.5:
                b.add(Step("aug", c, target=a.name, op=op, features=tags), allow_error=0.6)
            else:
                m = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_"}[op]
                b.add(Step("expr", Method(a, m, (c,)), features=tags), allow_error=0.6)
            continue
        kw = e.kwargs if isinstance(e, Call) else ()
        tags = _promo_tags(b, op, a, c, kw, isinstance(e, Call)) | {"promo:" + op}
        b.add(Step("assign", e, out=b.name("r"), features=tags), allow_error=0.5)


def _promo_kind(v: Any, torch: Any) -> str:
    if isinstance(v, torch.Tensor):
        return _dtype_name(v.dtype)
    if isinstance(v, bool):
        return "pybool"
    return "pyint" if isinstance(v, int) else "pyfloat"


def _promo_tags(b: Builder, op: str, a: Any, c: Any, kwargs: tuple, is_call: bool) -> frozenset:
    """Tags naming the dtype situations of a binary op (see CLASSES and KNOWN_GAPS).

    - ``bool_sub``: a subtraction with a bool tensor or Python bool operand (PyTorch raises).
    - ``bool_pow_floordiv``: ``**``/``pow``/``//``/``floor_divide`` with only bool operands.
    - ``uint8_negative_int``: a uint8 tensor with a negative Python int (PyTorch wraps around).
    - ``int_pow_negative_tensor``: integer ``**`` with a negative integer *tensor* exponent.
    - ``int_pow_negative_scalar``: integer tensor ``**`` a negative Python int (PyTorch raises).
    - ``scalar_first:<fn>``: ``torch.<fn>(python_scalar, tensor)``; ``scalar_arg:atan2``.
    - ``int_alpha_float``: ``add``/``sub`` of integer operands with a float ``alpha``.
    - ``alpha_scalar_other``: ``add``/``sub`` with a Python scalar ``other`` and ``alpha``.
    - ``alpha_with_bool``: ``add``/``sub`` with ``alpha`` and a bool tensor operand.
    - ``alpha_mixed_dtypes``: ``add``/``sub`` with ``alpha`` and operands of different dtypes.
    """
    torch = b.torch
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            va, vc = evaluate(a, b.env, torch), evaluate(c, b.env, torch)
    except Exception:  # noqa: BLE001
        return frozenset()
    ka, kc = _promo_kind(va, torch), _promo_kind(vc, torch)
    kinds = {ka, kc}
    ints = {"uint8", "int32", "int64", "pyint", "bool", "pybool"}
    tags: set[str] = set()
    if op in ("-", "sub") and kinds & {"bool", "pybool"}:
        tags.add("bool_sub")
    if op in ("**", "pow", "//", "floor_divide") and kinds <= {"bool", "pybool"}:
        tags.add("bool_pow_floordiv")
    if "uint8" in kinds:
        for v in (va, vc):
            if isinstance(v, int) and not isinstance(v, bool) and v < 0:
                tags.add("uint8_negative_int")
    if op in ("**", "pow") and ka in ints and kc in ints - {"pyint", "pybool"}:
        if isinstance(vc, torch.Tensor) and bool((vc < 0).any()):
            tags.add("int_pow_negative_tensor")
    if op in ("**", "pow") and ka in ints and isinstance(vc, int) and vc < 0:
        tags.add("int_pow_negative_scalar")
    if is_call and not isinstance(va, torch.Tensor):
        tags.add(f"scalar_first:{op}")
    if op == "atan2" and not (isinstance(va, torch.Tensor) and isinstance(vc, torch.Tensor)):
        tags.add("scalar_arg:atan2")
    alpha = dict(kwargs).get("alpha")
    if alpha is not None:
        if isinstance(alpha.value, float) and kinds <= ints:
            tags.add("int_alpha_float")
        if not isinstance(vc, torch.Tensor):
            tags.add("alpha_scalar_other")
        if "bool" in kinds:
            tags.add("alpha_with_bool")
        if len(kinds) > 1:
            tags.add("alpha_mixed_dtypes")
    return frozenset(tags)


_GENERATORS = {
    "views": gen_views,
    "indexing": gen_indexing,
    "shape": gen_shape,
    "reductions": gen_reductions,
    "promotion": gen_promotion,
}


def generate(family: str, seed: int, known_gaps: set[str] | None = None) -> Program:
    """The program of ``family`` for ``seed`` (deterministic), avoiding ``known_gaps`` features."""
    b = Builder(family, seed, known_gaps)
    _GENERATORS[family](b)
    return b.program()


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


@dataclass
class Report:
    """What a fuzzing run found."""

    family: str
    n: int = 0
    failures: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)  # class key -> (program, disagreement)
    notes: Counter = field(default_factory=Counter)
    note_examples: dict = field(default_factory=dict)  # note -> (program, errors, step index)
    crashes: int = 0
    seconds: float = 0.0


def fuzz(
    family: str,
    n: int,
    seed: int,
    known_gaps: set[str] | None = None,
    minimize_first: bool = True,
    max_examples: int = 1000,
) -> Report:
    """Generate and check ``n`` programs of ``family`` with seeds ``seed .. seed + n - 1``."""
    t0 = time.time()
    rep = Report(family)
    for i in range(n):
        s = seed + i
        prog = generate(family, s, known_gaps)
        rep.n += 1
        dis, tt, te = check(prog)
        note = error_class_note(tt, te)
        if note:
            rep.notes[note] += 1
            if note not in rep.note_examples:
                i = (tt.error or te.error)[0]
                rep.note_examples[note] = (prog, f"torch: {tt.error}; ember: {te.error}", i)
        if dis is None:
            continue
        if minimize_first and sum(rep.failures.values()) < max_examples:
            small = retag(minimize(prog, dis))
            d2, _, _ = check(small)
            if d2 is not None:
                prog, dis = small, d2
        key = classify(prog, dis)
        rep.failures[key] += 1
        rep.examples.setdefault(key, (prog, dis))
    rep.seconds = time.time() - t0
    return rep


_SALIENT = (
    "inplace_on_view_grad",
    "read_base_after_view_inplace_grad",
    "read_view_after_alias_inplace_grad",
    "read_view_after_alias_inplace",
    "inplace_with_aliases_grad",
    "double_backward",
    "no_grad",
    "detach",
    "retain_grad",
)

# Disagreement classes: name -> (features that make a program fall in it, description). The
# features are generator tags; putting them in KNOWN_GAPS stops the generator from making such
# programs. Checked in order; the first whose features the minimised program has wins.
CLASSES: dict[str, tuple[frozenset, str]] = {
    "op_result_is_internal_view": (
        frozenset({"inplace_on_op_internal_view", "requires_grad_on_op_internal_view"}),
        "einsum with a contraction, F.linear of an N-D or 1-D input with a bias: PyTorch's "
        "result is a view of the op's own temporary (_base set), so its no_grad-view refusals "
        "and requires_grad_() on it follow view rules (fixed for those two, unrecorded: "
        "function.internal_view; tensordot, inner, bilinear, multi_dot are not generated)",
    ),
    "whole_setitem_double_backward": (
        frozenset({"double_backward_through_whole_fill"}),
        "x[key] = value where key covers all of x (s[0:1] on one element, s[...]): PyTorch runs "
        "x.fill_(value) (FillBackward3), whose gradient under create_graph has no graph; "
        "ember's IndexPutBackward0 gave one that requires grad (fixed: fresh zeros)",
    ),
    "retained_grad_after_inplace_metadata_op": (
        frozenset({"inplace_meta_after_retain_grad"}),
        "retain_grad() and unsqueeze_/t_/... under no_grad on a graph output (either order): "
        ".grad keeps the shape the node recorded, as PyTorch's (fixed: "
        "function.keep_recorded_shape)",
    ),
    "inplace_metadata_ops": (
        frozenset(
            {
                "inplace_meta:t_",
                "inplace_meta:squeeze_",
                "inplace_meta:unsqueeze_",
                "inplace_meta:transpose_",
                "inplace_meta_on_graph_output_in_no_grad",
            }
        ),
        "t_/squeeze_/unsqueeze_/transpose_ under no_grad on a non-leaf that is not a view: "
        "it keeps its grad_fn, and the gradient reaching that node is summed back to the shape "
        "the node made, or raises where it does not broadcast from it, as PyTorch's engine "
        "checks a node's input metadata (fixed)",
    ),
    "inplace_operand_overlaps_target": (
        frozenset({"inplace_operand_partial_overlap", "inplace_operand_aliases_target"}),
        "an in-place op whose tensor operand overlaps its target: PyTorch raises (dense "
        "operands) or computes in its loop order (undefined: not generated, docs/testing.md)",
    ),
    "no_grad_view": (
        frozenset({"view_in_no_grad", "view_of_nograd_view", "inplace_nograd_view_alias"}),
        "a view of a requires-grad tensor taken under no_grad: PyTorch keeps requires_grad=True "
        "(a leaf), forbids tracked in-place ops mixing it with its base",
    ),
    "multioutput_view_inplace": (
        frozenset({"inplace_multioutput_view_alias"}),
        "outputs of split/chunk/unbind (and their base) modified in place: PyTorch raises",
    ),
    "retain_grad_then_inplace": (
        frozenset({"inplace_after_retain_grad"}),
        "retain_grad() then an in-place op on that tensor (or an alias): PyTorch's .grad is the "
        "gradient of the new version",
    ),
    "inplace_on_expanded": (
        frozenset({"inplace_on_expanded_alias"}),
        "in-place writes to (part of) an expanded tensor or its base",
    ),
    "inplace_view_of_noncontiguous": (
        frozenset({"inplace_on_view_of_noncontiguous"}),
        "an in-place op under autograd on a view of a non-contiguous tensor: ember raises "
        "'cannot express this view as a window of its base'",
    ),
    "int_inplace_with_grad_operand": (
        frozenset({"inplace_int_target_grad_operand"}),
        "an in-place op on an integer tensor with a requires-grad operand (k.copy_(x)): PyTorch's "
        "k does not require grad, ember's does",
    ),
    "requires_grad_on_view": (
        frozenset({"requires_grad_on_view", "requires_grad_with_views"}),
        "requires_grad_() on a tensor that has views (PyTorch's views made before become "
        "non-leaf views that require grad, and those made under no_grad refuse use after an "
        "in-place change); requires_grad_() on a view itself, then an in-place op on a view "
        "of it, raises as in PyTorch (fixed)",
    ),
    "inplace_through_data": (
        frozenset({"inplace_through_data", "inplace_through_data_promoted"}),
        "y.data.op_() on a tensor whose value a recorded op saved: PyTorch does not bump the "
        "version and its backward uses the new values (fixed, for a 0-d saved output too, and "
        "for an operand a mixed-dtype op promoted: its backward casts the operand again)",
    ),
    "empty_double_backward": (
        frozenset({"double_backward_empty"}),
        "autograd.grad(create_graph=True) of a loss from an empty tensor: PyTorch's gradient "
        "does not require grad (no graph), ember's does",
    ),
    "saved_constant_modified_inplace": (
        frozenset({"inplace_on_saved_constant"}),
        "a tensor without grad saved by a recorded op (y = x * k) then modified in place: "
        "PyTorch's backward raises 'modified by an inplace operation', ember silently uses the "
        "new values",
    ),
    "retain_grad_create_graph": (
        frozenset({"create_graph_with_retain_grad"}),
        "retain_grad() plus autograd.grad(create_graph=True): PyTorch fills the retained .grad "
        "(differentiable) and keeps it through the second backward; the saved output of an "
        "in-place op on a view has the view's history there (fixed: node.ViewOutput)",
    ),
    "grad_enters_constant_through_view": (
        frozenset({"inplace_on_stale_view_after_grad_entered",
                   "retain_grad_on_stale_view_after_grad_entered", "grad_enters_view_of_constant",
                   "grad_enters_constant_with_views"}),
        "an in-place op with a requires-grad operand on a view of a tensor that does not require "
        "grad: the base and its other views start requiring grad (an in-place op on such another "
        "view is undefined in PyTorch: not generated, docs/testing.md)",
    ),
    "linear_saves_flattened_copy": (
        frozenset({"linear_batched_input_copied"}),
        "F.linear of a batched input that does not flatten to a view (expanded, transposed): "
        "PyTorch saves the flattened copy, so an in-place change of the input later is allowed; "
        "ember keeps the input itself (double backward needs its history) and refuses",
    ),
    # promotion family
    "int_pow_negative_scalar": (
        frozenset({"int_pow_negative_scalar"}),
        "integer tensor ** negative Python int: PyTorch raises 'Integers to negative integer "
        "powers are not allowed'",
    ),
    "bool_subtraction": (
        frozenset({"bool_sub"}),
        "subtraction with a bool tensor or Python bool operand: PyTorch raises",
    ),
    "bool_pow_floordiv": (
        frozenset({"bool_pow_floordiv"}),
        "** / pow / // / floor_divide with only bool operands: PyTorch raises (or keeps bool)",
    ),
    "uint8_negative_python_int": (
        frozenset({"uint8_negative_int"}),
        "a uint8 tensor with a negative Python int: PyTorch wraps the int around; ember raises "
        "OverflowError",
    ),
    "int_pow_negative_tensor_exponent": (
        frozenset({"int_pow_negative_tensor"}),
        "integer ** integer tensor with negative entries: PyTorch computes (0, 1 or -1); ember raises",
    ),
    "python_scalar_first_argument": (
        frozenset({"scalar_first:eq", "scalar_arg:atan2"}),
        "torch.eq(scalar, t) / torch.atan2 with a Python scalar: PyTorch raises TypeError",
    ),
    "int_alpha_float": (
        frozenset({"int_alpha_float"}),
        "add/sub of integer operands with a float alpha: PyTorch raises",
    ),
    "alpha_with_scalar_other": (
        frozenset({"alpha_scalar_other"}),
        "torch.add/sub(tensor, python_scalar, alpha=...): ember raises TypeError",
    ),
    # reductions family
    "argmax_bool": (
        frozenset({"reduce_bool:argmax", "reduce_bool:argmin"}),
        "argmax/argmin of a bool tensor: PyTorch raises",
    ),
    "norm_p0": (frozenset({"norm_p0"}), "norm with p=0: PyTorch's result has no gradient"),
    "int_dtype_reduce_grad": (
        frozenset({"int_dtype_reduce_grad"}),
        "sum(..., dtype=torch.int64) of a requires-grad tensor: PyTorch raises",
    ),
    "softmax_empty_int": (
        frozenset({"reduce_empty_int"}),
        "softmax/log_softmax of an empty integer tensor: PyTorch returns an empty result",
    ),
    "var_dof_nonpositive": (
        frozenset({"var_dof_nonpositive"}),
        "std/var with correction >= the number of reduced elements: PyTorch's gradient is finite "
        "(0), ember's is nan",
    ),
    "alpha_promotion": (
        frozenset({"alpha_with_bool", "alpha_mixed_dtypes"}),
        "torch.add/sub with alpha and operands of different dtypes: ember's result dtype differs "
        "(uint8 + bool, alpha=2 gives int64; 0-d float64 + uint8, alpha=0.5 gives float32)",
    ),
    # indexing and shape families
    "index_put_dtype_mismatch": (
        frozenset({"index_write_dtype_mismatch_advanced"}),
        "t[advanced index] = tensor of another dtype: PyTorch raises 'Index put requires the "
        "source and destination dtypes match'",
    ),
    "index_write_empty_target": (
        frozenset({"index_write_empty_target"}),
        "t[index selecting nothing] = tensor: PyTorch accepts any value shape; ember raises",
    ),
    "view_of_op_result_layout": (
        frozenset({"view_of_result_of_noncontiguous"}),
        ".view() of an op's result computed from non-contiguous inputs: PyTorch's result is "
        "contiguous (view works), ember's keeps the input's layout (view raises)",
    ),
    "backward_twice": (
        frozenset({"backward_after_freed_graph"}),
        "a second backward without retain_graph=True",
    ),
}


def classify(prog: Program, dis: Disagreement) -> str:
    """The class name of a (minimised) disagreement."""
    if "NotImplementedYet" in dis.detail:
        name = dis.detail.split("implement ", 1)[-1].split(" yet", 1)[0]
        return f"missing_api:{name}"
    if dis.step is not None and dis.step < len(prog.steps):
        own = prog.steps[dis.step].features
        for name, (fs, _desc) in CLASSES.items():
            if own & fs:
                return name
    feats = prog.features
    for name, (fs, _desc) in CLASSES.items():
        if feats & fs:
            return name
    return _class_key(prog, dis)


def _class_key(prog: Program, dis: Disagreement) -> str:
    """Fallback class key: kind, op, and the salient features left after minimisation."""
    feats = prog.features
    sal = [f for f in _SALIENT if f in feats]
    return dis.key() + ("[" + ",".join(sal) + "]" if sal else "")


def describe_failure(prog: Program, dis: Disagreement) -> str:
    """Human-readable description of a disagreement with the program's source."""
    torch, ember = _modules()
    tt = run(prog, torch)
    te = run(prog, ember)
    lines = [
        f"family {prog.family}, seed {prog.seed}: {dis.kind} at {dis.where}: {dis.detail}",
        f"replay: python -m tests.differential.programs --family {prog.family} --seed {prog.seed} --n 1 --show",
        "---- program ----",
        prog.source(),
        "---- torch ----",
        _trace_summary(prog, tt),
        "---- ember ----",
        _trace_summary(prog, te),
    ]
    return "\n".join(lines)


def _trace_summary(prog: Program, tr: Trace) -> str:
    out = []
    if tr.error:
        out.append(
            f"raises at step {tr.error[0] + 1} ({step_op(prog.steps[tr.error[0]])}): {tr.error[1]}: {tr.error[2]}"
        )
    for name, (v, g) in tr.final.items():
        if v.get("t") == "tensor":
            s = f"{name} = {_brief(v)}"
            if g.get("t") == "tensor":
                s += f"; grad {_fmt(g['values'])}"
            out.append(s)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """CLI: fuzz a family and print a summary plus the first (minimised) repro of each class."""
    ap = argparse.ArgumentParser(
        prog="python -m tests.differential.programs", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--family", default="views", choices=list(FAMILIES) + ["all"])
    ap.add_argument("--n", type=int, default=200, help="programs per family")
    ap.add_argument("--seed", type=int, default=1, help="first program seed")
    ap.add_argument("--show", action="store_true", help="print every program's source")
    ap.add_argument("--all-features", action="store_true", help="ignore KNOWN_GAPS")
    ap.add_argument("--no-minimize", action="store_true")
    args = ap.parse_args(argv)
    gaps = set() if args.all_features else None
    fams = FAMILIES if args.family == "all" else (args.family,)
    bad = 0
    for fam in fams:
        if args.show:
            for s in range(args.seed, args.seed + args.n):
                p = generate(fam, s, gaps)
                dis, _, _ = check(p)
                print(
                    f"# family {fam} seed {s}: {'OK' if dis is None else dis.kind + ' at ' + dis.where + ': ' + dis.detail}"
                )
                print(p.source())
                if dis is not None:
                    print(describe_failure(p, dis))
                print()
            continue
        rep = fuzz(fam, args.n, args.seed, gaps, minimize_first=not args.no_minimize)
        nf = sum(rep.failures.values())
        bad += nf
        print(f"== {fam}: {rep.n} programs (ember from {_modules()[1].__file__})")
        print(
            f"== {fam}: {rep.n} programs, {nf} disagreements, {len(rep.failures)} classes, {rep.seconds:.1f} s"
        )
        for k, c in rep.failures.most_common():
            print(f"   {c:5d}  {k}")
        for k, c in rep.notes.most_common():
            print(f"   note: error class differs ({k}) x{c}")
        for k, (p, errs, i) in rep.note_examples.items():
            print(f"\n-- note {k}: family {fam}, seed {p.seed}, step {i + 1} --")
            print("\n".join(p.source().splitlines()[3:]))
            print(errs)
        for k, (p, d) in rep.examples.items():
            print(f"\n-- class {k} --")
            print(describe_failure(p, d))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
