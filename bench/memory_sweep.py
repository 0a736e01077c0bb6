"""``python -m bench --memory --sweep``: forward+backward peak memory over the op table, PyTorch
beside ember, one process per engine.

Each op runs on 16 MB float32 operands (2^22 elements: a 2048x2048 matrix, or 16x64x64x64
images) with gradients on its float inputs; its forward+backward (``out.sum().backward()``, or
the loss itself) runs twice and the second run is measured as ``bench.memory`` measures a case:
the resident-set high-water mark (reset through ``/proc/self/clear_refs``) minus the resident
set before, with ``MALLOC_MMAP_THRESHOLD_=131072`` for both engines. The ops run one after the
other in one process per engine (a fresh process per op would take an hour), so each reading
is an op's own peak above what the process holds between ops. Linux only.

``python -m bench.memory_sweep --child`` is the engine's process (prints one JSON line).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
RATIO, SLACK_MB = 1.25, 16.0  # the target, per op

N = 1 << 22  # elements of one operand (16 MB of float32)
SIDE = 2048  # a SIDE x SIDE matrix holds N elements
IMG = (16, 64, 64, 64)  # N elements as images

# (name, operands, fn): operands are specs "v" (vector, N), "m" (matrix SIDE x SIDE), "p" (a
# positive matrix), "u" (a matrix in (-0.9, 0.9)), "i" (images), "w" (a 64->64 3x3 conv
# weight), "t" (class indices for SIDE rows), "c" (SIDE x 16 embedding indices, as floats);
# fn(torch, F, *tensors) -> the tensor whose sum (or itself, when 0-d) is backpropagated
OPS: list[tuple[str, str, Callable[..., Any]]] = []


def op(name: str, operands: str) -> Callable:
    def register(fn: Callable) -> Callable:
        OPS.append((name, operands, fn))
        return fn
    return register


def _unary(name: str, operands: str = "m") -> None:
    op(name, operands)(lambda t, F, x: getattr(t, name)(x))


for _n in ("exp", "exp2", "expm1", "sin", "cos", "atan", "sinh", "cosh", "tanh", "asinh",
           "sigmoid", "relu", "abs", "neg", "square", "erf", "erfc", "frac", "floor", "sign",
           "nan_to_num", "deg2rad", "sinc"):
    _unary(_n)
for _n in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "lgamma", "digamma"):
    _unary(_n, "p")
for _n in ("asin", "acos", "atanh", "tan", "erfinv"):
    _unary(_n, "u")
op("pow_scalar", "m")(lambda t, F, x: x ** 3)
op("rpow", "m")(lambda t, F, x: 2.0 ** x)
op("clamp", "m")(lambda t, F, x: x.clamp(-0.5, 0.7))
op("logit", "u")(lambda t, F, x: t.logit(x.abs()))

op("add", "mm")(lambda t, F, a, b: a + b)
op("add_broadcast", "mm")(lambda t, F, a, b: a + b[0])
op("sub_alpha", "mm")(lambda t, F, a, b: t.sub(a, b, alpha=2))
op("mul", "mm")(lambda t, F, a, b: a * b)
op("div", "mp")(lambda t, F, a, b: a / b)
op("pow", "pm")(lambda t, F, a, b: a ** b)
op("atan2", "mp")(lambda t, F, a, b: t.atan2(a, b))
op("maximum", "mm")(lambda t, F, a, b: t.maximum(a, b))
op("logaddexp", "mm")(lambda t, F, a, b: t.logaddexp(a, b))
op("hypot", "pp")(lambda t, F, a, b: t.hypot(a, b))
op("remainder", "mp")(lambda t, F, a, b: t.remainder(a, b))
op("lerp", "mm")(lambda t, F, a, b: t.lerp(a, b, 0.3))
op("where", "mm")(lambda t, F, a, b: t.where(a > 0, a, b))
op("xlogy", "mp")(lambda t, F, a, b: t.xlogy(a, b))
op("addcmul", "mmm")(lambda t, F, a, b, c: t.addcmul(a, b, c, value=0.5))
op("addcdiv", "mmp")(lambda t, F, a, b, c: t.addcdiv(a, b, c, value=0.5))
op("mm", "mm")(lambda t, F, a, b: a @ b)

op("sum_dim", "m")(lambda t, F, x: x.sum(1))
op("mean", "m")(lambda t, F, x: x.mean())
op("var_dim", "m")(lambda t, F, x: x.var(1))
op("std", "m")(lambda t, F, x: x.std())
op("norm", "m")(lambda t, F, x: x.norm())
op("norm_dim", "m")(lambda t, F, x: t.linalg.vector_norm(x, 3, dim=1))
op("prod_dim", "u")(lambda t, F, x: x.prod(1))
op("amax_dim", "m")(lambda t, F, x: x.amax(1))
op("max_dim", "m")(lambda t, F, x: x.max(1).values)
op("logsumexp", "m")(lambda t, F, x: x.logsumexp(1))
op("cumsum", "m")(lambda t, F, x: x.cumsum(1))
op("cumprod", "u")(lambda t, F, x: x.cumprod(1))
op("softmax", "m")(lambda t, F, x: t.softmax(x, -1))
op("log_softmax", "m")(lambda t, F, x: t.log_softmax(x, -1))
op("sort", "m")(lambda t, F, x: x.sort(1).values)
op("topk", "m")(lambda t, F, x: x.topk(64, 1).values)

op("transpose_contiguous", "m")(lambda t, F, x: x.t().contiguous())
op("cat", "mm")(lambda t, F, a, b: t.cat([a, b], 0))
op("stack", "mm")(lambda t, F, a, b: t.stack([a, b]))
op("repeat", "m")(lambda t, F, x: x[:512].repeat(2, 1))
op("expand_mul", "mm")(lambda t, F, a, b: a[:, :1].expand(SIDE, SIDE) * b)
op("flip", "m")(lambda t, F, x: x.flip(0))
op("roll", "m")(lambda t, F, x: x.roll(3, 1))
op("tril", "m")(lambda t, F, x: x.tril())
op("pad", "i")(lambda t, F, x: F.pad(x, (1, 1, 1, 1)))
op("slice_setitem", "mm")(lambda t, F, a, b: a.clone().index_put_((t.arange(0, SIDE, 2),),
                                                                  b[::2]))
op("masked_fill", "m")(lambda t, F, x: x.masked_fill(x > 0, 0.0))
op("index_select", "m")(lambda t, F, x: x.index_select(0, t.arange(SIDE).flip(0)))
op("gather", "m")(lambda t, F, x: x.gather(1, t.arange(SIDE).flip(0).expand(SIDE, SIDE)))
op("scatter_add", "mm")(lambda t, F, a, b: a.scatter_add(1, t.arange(SIDE).flip(0)
                                                         .expand(SIDE, SIDE), b))
op("advanced_index", "m")(lambda t, F, x: x[t.arange(SIDE).flip(0)])
op("masked_select", "m")(lambda t, F, x: x.masked_select(x > 0))

op("linear", "mm")(lambda t, F, x, w: F.linear(x, w))
op("gelu", "m")(lambda t, F, x: F.gelu(x))
op("gelu_tanh", "m")(lambda t, F, x: F.gelu(x, approximate="tanh"))
op("silu", "m")(lambda t, F, x: F.silu(x))
op("mish", "m")(lambda t, F, x: F.mish(x))
op("softplus", "m")(lambda t, F, x: F.softplus(x))
op("elu", "m")(lambda t, F, x: F.elu(x))
op("leaky_relu", "m")(lambda t, F, x: F.leaky_relu(x))
op("hardswish", "m")(lambda t, F, x: F.hardswish(x))
op("logsigmoid", "m")(lambda t, F, x: F.logsigmoid(x))
op("dropout", "m")(lambda t, F, x: F.dropout(x, 0.1))
op("layer_norm", "m")(lambda t, F, x: F.layer_norm(x, (SIDE,)))
op("rms_norm", "m")(lambda t, F, x: F.rms_norm(x, (SIDE,)))
op("batch_norm", "i")(lambda t, F, x: F.batch_norm(x, None, None, training=True))
op("group_norm", "i")(lambda t, F, x: F.group_norm(x, 8))
op("instance_norm", "i")(lambda t, F, x: F.instance_norm(x))
op("conv2d", "iw")(lambda t, F, x, w: F.conv2d(x, w, padding=1))
op("conv_transpose2d", "iw")(lambda t, F, x, w: F.conv_transpose2d(x, w, padding=1))
op("max_pool2d", "i")(lambda t, F, x: F.max_pool2d(x, 2))
op("avg_pool2d", "i")(lambda t, F, x: F.avg_pool2d(x, 2))
op("adaptive_avg_pool2d", "i")(lambda t, F, x: F.adaptive_avg_pool2d(x, 7))
op("interpolate_nearest", "i")(lambda t, F, x: F.interpolate(x, scale_factor=2))
op("pixel_shuffle", "i")(lambda t, F, x: F.pixel_shuffle(x, 2))
op("cross_entropy", "mt")(lambda t, F, x, y: F.cross_entropy(x, y))
op("nll_loss", "mt")(lambda t, F, x, y: F.nll_loss(x, y))
op("mse_loss", "mm")(lambda t, F, a, b: F.mse_loss(a, b))
op("l1_loss", "mm")(lambda t, F, a, b: F.l1_loss(a, b))
op("bce_with_logits", "mm")(lambda t, F, a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid()))
op("kl_div", "mm")(lambda t, F, a, b: F.kl_div(a.log_softmax(1), b.softmax(1),
                                              reduction="batchmean"))
op("cosine_similarity", "mm")(lambda t, F, a, b: F.cosine_similarity(a, b))
op("normalize", "m")(lambda t, F, x: F.normalize(x))
op("embedding", "mc")(lambda t, F, w, i: F.embedding(i.long(), w))
op("sdpa", "mmm")(lambda t, F, q, k, v: F.scaled_dot_product_attention(
    q.view(8, 256, SIDE), k.view(8, 256, SIDE), v.view(8, 256, SIDE), is_causal=True))


def _operand(torch: Any, spec: str) -> Any:
    if spec == "v":
        return torch.randn(N)
    if spec == "m":
        return torch.randn(SIDE, SIDE)
    if spec == "p":
        return torch.rand(SIDE, SIDE) + 0.5
    if spec == "u":
        return torch.rand(SIDE, SIDE) * 1.8 - 0.9
    if spec == "i":
        return torch.randn(*IMG)
    if spec == "w":
        return torch.randn(64, 64, 3, 3) * 0.05
    if spec == "t":
        return torch.randint(0, SIDE, (SIDE,))
    if spec == "c":
        return torch.randint(0, SIDE, (SIDE, 16)).float()
    raise ValueError(spec)


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def child(only: list[str] | None) -> dict:
    here = str(Path(__file__).resolve().parent)  # bench/ holds a profile.py: off the path
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(here)]
    import torch  # PyTorch, or ember under `ember run`
    import torch.nn.functional as F

    torch.manual_seed(0)
    results: dict[str, Any] = {}
    for name, specs, fn in OPS:
        if only and name not in only:
            continue
        args = [_operand(torch, s) for s in specs]
        for s, a in zip(specs, args):
            if s not in "tc":  # class indices and embedding rows carry no gradient
                a.requires_grad_()
        try:
            for i in range(2):
                for a in args:
                    a.grad = None
                gc.collect()
                if i == 1:
                    base = _status("VmRSS")
                    with open("/proc/self/clear_refs", "w") as f:
                        f.write("5")
                out = fn(torch, F, *args)
                (out if out.dim() == 0 else out.sum()).backward()
                del out
            results[name] = (_status("VmHWM") - base) / MB
        except Exception as e:  # an op one engine lacks: reported, the sweep goes on
            results[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
        del args
    return results


def run(engines: tuple[str, ...] = ("torch", "ember"), only: list[str] | None = None,
        timeout: float = 1800) -> dict:
    from .runner import engine_env

    env = engine_env(1)
    env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    script = str(Path(__file__).resolve())
    extra = ["--only", ",".join(only)] if only else []
    out = {}
    for engine in engines:
        cmd = ([sys.executable, script, "--child"] if engine == "torch" else
               [sys.executable, "-m", "ember", "run", script, "--child"]) + extra
        res = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True,
                             timeout=timeout)
        line = next((ln for ln in reversed(res.stdout.splitlines()) if ln.startswith("{")), None)
        if line is None:
            raise RuntimeError(f"{engine}: {res.stderr.strip()[-400:]}")
        out[engine] = json.loads(line)
    return out


def render(res: dict) -> str:
    t, e = res.get("torch", {}), res.get("ember", {})
    rows = ["| op (16 MB operands) | PyTorch | ember | ratio | within 1.25x + 16 MB |",
            "|---|---|---|---|---|"]
    over = 0
    for name, _, _ in OPS:
        if name not in t and name not in e:
            continue
        a, b = t.get(name), e.get(name)
        if isinstance(a, float) and isinstance(b, float):
            ok = b <= RATIO * a + SLACK_MB
            over += not ok
            rows.append(f"| `{name}` | {a:,.0f} MB | {b:,.0f} MB | {b / max(a, 1.0):.2f}x | "
                        f"{'yes' if ok else '**no**'} |")
        else:
            rows.append(f"| `{name}` | {a} | {b} | - | - |")
    rows.append(f"\n{len(rows) - 2} ops, {over} above the target.")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", action="store_true")
    p.add_argument("--only", default="", help="comma-separated op names")
    a = p.parse_args(argv)
    only = [s for s in a.only.split(",") if s] or None
    if a.child:
        print(json.dumps(child(only)))
        return 0
    res = run(only=only)
    out = ROOT / ".bench" / "memory_sweep.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(render(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
