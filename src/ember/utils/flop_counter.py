"""``torch.utils.flop_counter``: ``FlopCounterMode`` counts the floating-point operations of the
matrix products, convolutions and attention a region runs, forward and backward, per module.

The counts follow PyTorch's formulas, under the ATen operator PyTorch's CPU build records them
for: ``mm`` (2-D products, linear layers without bias or on non-contiguous inputs, N-D @ 2-D
matmul), ``addmm`` (linear layers with bias), ``bmm`` (batched matmul, einsum contractions,
attention's two products), ``baddbmm``, ``convolution`` and ``convolution_backward`` (PyTorch's
formula, grouped weights included). A product's backward counts one more product of the same
size for each input that needs a gradient (``mm`` for the linear family's). Products with a vector
(``dot``, ``mv``) and elementwise ops count nothing, as in PyTorch.

One documented difference: ``scaled_dot_product_attention`` always counts its two batched
products (and four in backward when every input needs a gradient), as PyTorch counts it
where it runs the math kernel or a CUDA kernel; PyTorch's CPU build counts 0 for calls its
fused CPU kernel takes (4-D inputs of one head size, causal masks).

How ops are seen: every ember op runs through ``Function.apply``, which reports each call to
``ember.autograd.function.tracer`` while one is set (both cores); the counter is that tracer while
it is entered, and wraps the backward rules of the ops it counts for the same span.
"""

from __future__ import annotations

import importlib
import math
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..autograd import function as _function

__all__ = ["FlopCounterMode"]


def _packet(name: str) -> Any:
    """``torch.ops.aten.<name>``: the keys of ``get_flop_counts()``'s inner dicts."""
    from ..ops import _aten

    found = getattr(_aten.aten, name, None) if hasattr(_aten, "aten") else None
    if found is None:
        found = _PACKETS.get(name)
        if found is None:
            found = _PACKETS[name] = _aten.OpOverloadPacket(name, {})
    return found


_PACKETS: dict[str, Any] = {}


def _mm(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def _conv(x_shape: tuple, w_shape: tuple, out_shape: tuple, transposed: bool) -> int:
    """PyTorch's convolution count: every output (input, when transposed) position times the
    filter, the batch and both channel counts of the weight, times 2."""
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *kernel = w_shape
    return math.prod(spatial) * math.prod(kernel) * x_shape[0] * c_out * c_in * 2


def _conv_backward(grad_shape: tuple, x_shape: tuple, w_shape: tuple, transposed: bool,
                   need_x: bool, need_w: bool) -> int:
    def t(s: tuple) -> tuple:
        return (s[1], s[0], *s[2:])

    flops = 0
    if need_x:  # grad_input: the transposed convolution of grad with the weight
        flops += _conv(grad_shape, w_shape, x_shape, not transposed)
    if need_w:  # grad_weight: a convolution of the input with grad (channels as batch)
        if transposed:
            flops += _conv(t(grad_shape), t(x_shape), t(w_shape), False)
        else:
            flops += _conv(t(x_shape), t(grad_shape), t(w_shape), False)
    return flops


def _matmul(a: tuple, b: tuple) -> tuple[str, int] | None:
    """(ATen op, flops) of ``a @ b`` as PyTorch's matmul lowers it; None for vector products."""
    if len(b) == 1:  # dot, mv, or N-D @ 1-D folded into mv
        return None
    if len(a) == 1:  # vector @ matrix: mm of one row
        a = (1,) + a
    if len(a) == 2 and len(b) == 2:
        return "mm", _mm(a[0], a[1], b[1])
    if len(b) == 2:  # N-D @ 2-D: the leading dims fold into mm's rows
        return "mm", _mm(math.prod(a[:-1]), a[-1], b[1])
    batch = math.prod(_broadcast(a[:-2], b[:-2]))
    return "bmm", 2 * batch * a[-2] * a[-1] * b[-1]


def _broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


def _sdpa(q: tuple, k: tuple, v: tuple) -> tuple[int, int]:
    """The two batched products of attention: scores = q k^T, out = scores v."""
    batch = math.prod(q[:-2])
    s_q, d, s_k, d_v = q[-2], q[-1], k[-2], v[-1]
    return 2 * batch * s_q * d * s_k, 2 * batch * s_q * s_k * d_v


def _einsum_pairs(spec: tuple) -> list[int]:
    """The flops of each pairwise contraction einsum runs, left to right (0 where a pair sums
    over no subscript: PyTorch multiplies those elementwise)."""
    ins, out, sizes = spec  # subscripts per operand, the output's, each subscript's size
    flops = []
    left = set(ins[0])
    for i in range(1, len(ins)):
        right = set(ins[i])
        later = set(out).union(*[set(s) for s in ins[i + 1:]])
        union = left | right
        summed = {s for s in left & right if s not in later}
        flops.append(2 * math.prod(int(sizes[s]) for s in union) if summed else 0)
        left = union & later
    return flops


def _shape(a: Any) -> tuple:
    return tuple(getattr(a, "shape", ()))


class _Counter:
    """What one counted call cost, kept on its node for the backward rule."""

    __slots__ = ("backward", "modules")

    def __init__(self, backward: Callable[[tuple], list[tuple[str, int]]], modules: tuple) -> None:
        self.backward = backward  # needs_input_grad -> [(op, flops)]
        self.modules = modules


def _contiguous(t: Any, arr: Any) -> bool:
    """Whether linear's input is contiguous (PyTorch folds it into one addmm only then)."""
    is_contiguous = getattr(t, "is_contiguous", None)
    if is_contiguous is not None:
        return bool(is_contiguous())
    return bool(getattr(getattr(arr, "flags", None), "c_contiguous", True))


def _count(cls: type, ctx: Any, args: tuple, raw: tuple,
           outputs: list) -> tuple[list, Callable] | None:
    """([(op, flops)] of the forward, backward rule) for a counted op; None for the others."""
    name = cls.__name__
    if name in ("Linear", "LinearMm", "LinearView", "LinearUnsafeView", "LinearSqueeze"):
        x, w, b = raw[0], raw[1], raw[2]
        xs, ws = _shape(x), _shape(w)
        rows = math.prod(xs[:-1])
        flops = _mm(rows, xs[-1], ws[0])
        contiguous = len(xs) <= 2 or _contiguous(args[0], x)
        op = "addmm" if b is not None and contiguous else "mm"
        return [(op, flops)], lambda need: [("mm", flops)] * (need[0] + need[1])
    if name in ("Matmul", "Mm", "Bmm", "Mv", "_VecMat"):
        found = _matmul(_shape(raw[0]), _shape(raw[1]))
        if found is None:
            return None
        op, flops = found
        return [(op, flops)], lambda need: [(op, flops)] * (need[0] + need[1])
    if name in ("Addmm", "Baddbmm"):
        m1, m2 = _shape(raw[1]), _shape(raw[2])
        if name == "Addmm":
            op, back, flops = "addmm", "mm", _mm(m1[0], m1[1], m2[1])
        else:
            op, back, flops = "baddbmm", "bmm", 2 * m1[0] * m1[1] * m1[2] * m2[2]
        return [(op, flops)], lambda need: [(back, flops)] * (need[1] + need[2])
    if name in ("Conv", "ConvTranspose"):
        transposed = name == "ConvTranspose"
        xs, ws, out = _shape(raw[0]), _shape(raw[1]), _shape(outputs[0])
        flops = _conv(xs, ws, out, transposed)
        return [("convolution", flops)], lambda need: [("convolution_backward", _conv_backward(
            out, xs, ws, transposed, need[0], need[1]))] if need[0] or need[1] else []
    if name in ("ScaledDotProductAttention", "ScaledDotProductFlashAttention"):
        f1, f2 = _sdpa(_shape(raw[0]), _shape(raw[1]), _shape(raw[2]))

        def sdpa_backward(need: tuple) -> list[tuple[str, int]]:
            out = []
            if need[0] or need[1]:  # grad of the attention weights: grad_out v^T
                out.append(("bmm", f2))
            if need[2]:  # grad_v: weights^T grad_out
                out.append(("bmm", f2))
            out += [("bmm", f1)] * (need[0] + need[1])  # grad_q, grad_k
            return out

        return [("bmm", f1), ("bmm", f2)], sdpa_backward
    if name == "Einsum":
        pairs = _einsum_pairs(raw[0])

        def einsum_backward(need: tuple) -> list[tuple[str, int]]:
            ops = need[1:]
            out = []
            for i, f in enumerate(pairs):
                out += [("bmm", f)] * (any(ops[:i + 1]) + bool(ops[i + 1]))
            return [o for o in out if o[1]]

        return [("bmm", f) for f in pairs if f], einsum_backward
    return None


_COUNTED = ("Linear", "Matmul", "_AddMatmul", "Conv", "ConvTranspose",
            "ScaledDotProductAttention", "ScaledDotProductFlashAttention", "Einsum")


def _counted_classes() -> list[type]:
    found = []
    for path in ("blas", "other_matrix", "nn.attention", "nn.convolution", "nn.linear"):
        mod = importlib.import_module(f"ember.ops.{path}")  # (ops.nn.linear is also a function)
        for name in _COUNTED:
            cls = getattr(mod, name, None)
            if isinstance(cls, type) and "backward" in cls.__dict__:
                found.append(cls)
    return found


# --- the hooks shared by every entered counter (installed by the first, removed by the last) ---

_active: list[FlopCounterMode] = []
_installed: dict[str, Any] = {}
_nodes: dict[int, tuple[Any, _Counter]] = {}  # id(ctx) -> (ctx, its counter)


class _Tracer:
    """``Function.apply``'s tracer while a counter is entered: counts each op's forward."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def record(self, cls: type, ctx: Any, args: tuple, raw: tuple, outputs: list) -> None:
        if self.previous is not None:
            self.previous.record(cls, ctx, args, raw, outputs)
        if not _active:
            return
        found = _count(cls, ctx, args, raw, outputs)
        if found is None:
            return
        forward, backward = found
        for mode in _active:
            mode._add(forward, mode._stack_names())
        if any(getattr(ctx, "needs_input_grad", ())):
            _nodes[id(ctx)] = (ctx, _Counter(backward, tuple(m._stack_names() for m in _active)))


def _counted_backward(rule: Callable) -> Callable:
    def backward(ctx: Any, *grads: Any) -> Any:
        entry = _nodes.get(id(ctx))
        if entry is not None and entry[0] is ctx and _active:
            counts = entry[1].backward(tuple(ctx.needs_input_grad))
            for mode, names in zip(_active, entry[1].modules):
                mode._add(counts, names + mode._stack_names())
        return rule(ctx, *grads)

    backward.__wrapped__ = rule  # type: ignore[attr-defined]
    return backward


def _install() -> None:
    _installed["tracer"] = _function.tracer
    _function.tracer = _Tracer(_function.tracer)
    saved = []
    for cls in _counted_classes():
        original = cls.__dict__["backward"]
        saved.append((cls, original))
        cls.backward = staticmethod(_counted_backward(original.__func__))
    _installed["backwards"] = saved
    from ..nn.modules import _hooks

    _installed["handles"] = [_hooks.register_module_forward_pre_hook(_enter_module),
                             _hooks.register_module_forward_hook(_exit_module)]


def _uninstall() -> None:
    _function.tracer = _installed.pop("tracer")
    for cls, original in reversed(_installed.pop("backwards")):
        cls.backward = original
    for h in _installed.pop("handles"):
        h.remove()
    _nodes.clear()


def _enter_module(module: Any, args: Any) -> None:
    for mode in _active:
        mode._enter(module)


def _exit_module(module: Any, args: Any, output: Any) -> None:
    for mode in _active:
        mode._exit(module)


class FlopCounterMode:
    """Count the FLOPs of the matrix products, convolutions and attention run inside it, per
    module (``get_flop_counts()``: ``{"Global": {aten.mm: n, ...}, "Net.enc.0": {...}}``, the
    root module named by its class) and in all (``get_total_flops()``). ``display=True`` prints
    the table (to ``depth`` levels of modules) on exit."""

    def __init__(self, mods: Any = None, depth: int = 2, display: bool = True,
                 custom_mapping: dict[Any, Any] | None = None) -> None:
        if custom_mapping:
            raise NotImplementedError(
                "FlopCounterMode(custom_mapping=...): ember counts with its own formulas for "
                "mm, addmm, bmm, baddbmm, convolution and attention; extra formulas are not "
                "supported")
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.depth = depth
        self.display = display
        self.flop_counts: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
        self._names: dict[int, str] = {}
        self._parents: list[str] = []

    # -- counting ------------------------------------------------------------------------------

    def _stack_names(self) -> tuple:
        return tuple(self._parents)

    def _add(self, counts: list[tuple[str, int]], modules: tuple) -> None:
        for op, flops in counts:
            key = _packet(op)
            for name in ("Global",) + tuple(dict.fromkeys(modules)):
                self.flop_counts[name][key] += flops

    def _enter(self, module: Any) -> None:
        name = self._names.get(id(module))
        if name is None:
            name = self._names[id(module)] = type(module).__name__
        for child_name, child in module.named_children():
            self._names.setdefault(id(child), f"{name}.{child_name}")
        self._parents.append(name)

    def _exit(self, module: Any) -> None:
        name = self._names.get(id(module))
        if name in self._parents:  # the innermost entry of this module
            del self._parents[len(self._parents) - 1 - self._parents[::-1].index(name)]

    # -- results -------------------------------------------------------------------------------

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """``{module name: {ATen op: flops}}``, ``"Global"`` for the whole region."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as a text table: module, FLOPs, share of the total, each op beneath."""
        depth = self.depth if depth is None else depth
        total = self.get_total_flops()
        rows = [("Module", "FLOP", "% Total")]

        def pct(n: int) -> str:
            return f"{100 * n / total:.2f}%" if total else "0.00%"

        for mod, counts in self.flop_counts.items():
            level = 0 if mod == "Global" else mod.count(".") + 1
            if level > depth or not counts:
                continue
            n = sum(counts.values())
            rows.append((" " * level + mod, _readable(n), pct(n)))
            rows += [(" " * level + f" - {op}", _readable(v), pct(v)) for op, v in counts.items()]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}" for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        return "\n".join(lines)

    def __enter__(self) -> FlopCounterMode:
        self.flop_counts.clear()
        self._parents = []
        if not _active:
            _install()
        _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self in _active:
            _active.remove(self)
        if not _active and _installed:
            _uninstall()
        if self.display:
            print(self.get_table(self.depth), file=sys.stdout)


def _readable(n: int) -> str:
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.3f}{unit}"
    return str(n)
