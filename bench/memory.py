"""``python -m bench --memory``: each op's (and a few training steps') peak memory, PyTorch beside
ember, every case in a fresh process.

How a case is measured: its forward+backward runs twice; before the second run the process
collects garbage, reads its resident set (``VmRSS``), resets the kernel's high-water mark
(``/proc/self/clear_refs`` <- ``5``) and, after the run, reads the mark (``VmHWM``); the peak is
the mark minus the resident set before. Both engines run with ``MALLOC_MMAP_THRESHOLD_=131072``,
so freed blocks of 128 KiB and up go back to the system at once and are not reused unseen (which
also turns off ember's own allocator tuning for the measurement). PyTorch runs the case script
as-is; ember runs it under ``ember run`` (its ``import torch`` is ember). Linux only.

``python -m bench.memory --child CASE`` is the case process itself (prints one JSON line).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- BEGIN memory results (written by python -m bench --memory --write-doc) -->"
END = "<!-- END memory results -->"
MB = 1024 * 1024
RATIO, SLACK_MB = 1.25, 16.0  # the issue's target: ember's peak <= 1.25 x PyTorch's + 16 MB

# ---------------------------------------------------------------------------------------------
# the cases: each takes (torch, F) and returns the step to measure (a closure over its inputs)

CASES: dict[str, tuple[str, Callable[[Any, Any], Callable[[], None]]]] = {}


def case(name: str, title: str) -> Callable:
    def register(fn: Callable) -> Callable:
        CASES[name] = (title, fn)
        return fn
    return register


LEAVES: list = []  # every tensor whose .grad the case process clears before it measures


def _leaf(torch: Any, *shape: int) -> Any:
    t = torch.randn(*shape).requires_grad_()
    LEAVES.append(t)
    return t


def _params(model: Any) -> Any:
    LEAVES.extend(model.parameters())
    return model


def _backward(out: Any, *leaves: Any) -> None:
    out.sum().backward() if out.dim() else out.backward()


def _classifier_step(F: Any, model: Any, opt: Any, x: Any, y: Any) -> Callable[[], None]:
    """One training step of a classifier: zero the gradients, cross-entropy, backward, update."""
    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return step


@case("pdist", "`torch.pdist(x)`, x 1024x128")
def _pdist(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 1024, 128)
    return lambda: _backward(torch.pdist(x), x)


@case("pdist_p1", "`torch.pdist(x, p=1)`, x 1024x128")
def _pdist1(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 1024, 128)
    return lambda: _backward(torch.pdist(x, p=1), x)


@case("cdist_sq", "`torch.cdist(a, b) ** 2`, a, b 4x1024x64")
def _cdist(torch: Any, F: Any) -> Callable:
    a, b = _leaf(torch, 4, 1024, 64), _leaf(torch, 4, 1024, 64)
    return lambda: _backward(torch.cdist(a, b) ** 2, a, b)


@case("cdist_p1", "`torch.cdist(a, b, p=1)`, a, b 4x1024x64")
def _cdist1(torch: Any, F: Any) -> Callable:
    a, b = _leaf(torch, 4, 1024, 64), _leaf(torch, 4, 1024, 64)
    return lambda: _backward(torch.cdist(a, b, p=1), a, b)


@case("cdist_p3", "`torch.cdist(a, b, p=3)`, a, b 2x512x64")
def _cdist3(torch: Any, F: Any) -> Callable:
    a, b = _leaf(torch, 2, 512, 64), _leaf(torch, 2, 512, 64)
    return lambda: _backward(torch.cdist(a, b, p=3), a, b)


@case("pairwise_distance", "`F.pairwise_distance`, 2^24 elements (16384x1024)")
def _pairwise(torch: Any, F: Any) -> Callable:
    a, b = _leaf(torch, 16384, 1024), _leaf(torch, 16384, 1024)
    return lambda: _backward(F.pairwise_distance(a, b), a, b)


@case("cosine_similarity", "`F.cosine_similarity`, 2^24 elements (16384x1024)")
def _cosine(torch: Any, F: Any) -> Callable:
    a, b = _leaf(torch, 16384, 1024), _leaf(torch, 16384, 1024)
    return lambda: _backward(F.cosine_similarity(a, b), a, b)


@case("sdpa_causal", "`F.scaled_dot_product_attention(..., is_causal=True)`, 4x8x1024x64")
def _sdpa(torch: Any, F: Any) -> Callable:
    q, k, v = (_leaf(torch, 4, 8, 1024, 64) for _ in range(3))
    return lambda: _backward(F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)


@case("conv2d", "`conv2d` 64->64 3x3 on 32x64x56x56")
def _conv(torch: Any, F: Any) -> Callable:
    x, w = _leaf(torch, 32, 64, 56, 56), _leaf(torch, 64, 64, 3, 3)
    return lambda: _backward(F.conv2d(x, w, padding=1), x, w)


def _bag(torch: Any, F: Any, mode: str) -> Callable:
    w = _leaf(torch, 50_000, 512)
    idx = torch.randint(0, 50_000, (4096, 32))
    return lambda: _backward(F.embedding_bag(idx, w, mode=mode), w)


@case("embedding_bag_mean", "`embedding_bag(mode=\"mean\")`, 50k x 512 table, 4096 bags of 32")
def _bag_mean(torch: Any, F: Any) -> Callable:
    return _bag(torch, F, "mean")


@case("embedding_bag_sum", "`embedding_bag(mode=\"sum\")`, 50k x 512 table, 4096 bags of 32")
def _bag_sum(torch: Any, F: Any) -> Callable:
    return _bag(torch, F, "sum")


@case("embedding_bag_max", "`embedding_bag(mode=\"max\")`, 50k x 512 table, 4096 bags of 32")
def _bag_max(torch: Any, F: Any) -> Callable:
    return _bag(torch, F, "max")


@case("index_select", "`index_select(0, idx)`, 100k x 256 source, 200k indices")
def _index_select(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 100_000, 256)
    idx = torch.randint(0, 100_000, (200_000,))
    return lambda: _backward(x.index_select(0, idx), x)


@case("gather", "`gather(1, idx)`, 4096 x 4096 source, 4096 x 1024 indices")
def _gather(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 4096, 4096)
    idx = torch.randint(0, 4096, (4096, 1024))
    return lambda: _backward(x.gather(1, idx), x)


@case("take", "`take(x, idx)`, 2^24 source, 2^22 indices")
def _take(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 4096, 4096)
    idx = torch.randint(0, 4096 * 4096, (1 << 22,))
    return lambda: _backward(torch.take(x, idx), x)


@case("multi_margin_loss", "`multi_margin_loss`, 4096 x 1000")
def _mml(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 4096, 1000)
    t = torch.randint(0, 1000, (4096,))
    return lambda: _backward(F.multi_margin_loss(x, t), x)


def _regression(torch: Any, loss: Callable) -> Callable:
    x = _leaf(torch, 1 << 25)
    t = torch.randn(1 << 25)
    return lambda: _backward(loss(x, t), x)


@case("mse_loss", "`mse_loss`, 2^25 elements")
def _mse(torch: Any, F: Any) -> Callable:
    return _regression(torch, F.mse_loss)


@case("l1_loss", "`l1_loss`, 2^25 elements")
def _l1(torch: Any, F: Any) -> Callable:
    return _regression(torch, F.l1_loss)


@case("smooth_l1_loss", "`smooth_l1_loss`, 2^25 elements")
def _sl1(torch: Any, F: Any) -> Callable:
    return _regression(torch, F.smooth_l1_loss)


@case("huber_loss", "`huber_loss`, 2^25 elements")
def _huber(torch: Any, F: Any) -> Callable:
    return _regression(torch, F.huber_loss)


@case("embedding", "`embedding`, 50k x 512 table, 64x512 indices")
def _embedding(torch: Any, F: Any) -> Callable:
    w = _leaf(torch, 50_000, 512)
    idx = torch.randint(0, 50_000, (64, 512))
    return lambda: _backward(F.embedding(idx, w), w)


@case("cnn_step", "a CNN training step (3 conv+BN+ReLU blocks, SGD momentum, batch 64, 32x32)")
def _cnn(torch: Any, F: Any) -> Callable:
    nn = torch.nn
    layers: list = []
    for cin, cout in ((3, 32), (32, 64), (64, 128)):
        layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                   nn.MaxPool2d(2)]
    model = _params(nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 4 * 4, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
    return _classifier_step(F, model, opt, x, y)


@case("mlp_step", "an MLP training step (784-512-512-10, batch 128, AdamW)")
def _mlp(torch: Any, F: Any) -> Callable:
    nn = torch.nn
    model = _params(nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 10)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))
    return _classifier_step(F, model, opt, x, y)


@case("resnet18_step", "a ResNet-18 training step (torchvision's, batch 32, 32x32, SGD momentum)")
def _resnet18(torch: Any, F: Any) -> Callable:
    if not hasattr(torch, "__ember_version__"):  # torchvision's compiled ops cannot load here
        import types
        sys.modules.setdefault("torchvision._meta_registrations",
                               types.ModuleType("torchvision._meta_registrations"))
    import torchvision  # (ember.vision under ember run)

    model = _params(torchvision.models.resnet18(num_classes=10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    return _classifier_step(F, model, opt, x, y)


@case("layer_norm", "`nn.LayerNorm(768)` on 64x1024x768")
def _ln(torch: Any, F: Any) -> Callable:
    m = _params(torch.nn.LayerNorm(768))
    x = _leaf(torch, 64, 1024, 768)
    return lambda: _backward(m(x), x, *m.parameters())


@case("group_norm", "`F.group_norm(x, 32)` on 32x256x32x32")
def _gn(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 32, 256, 32, 32)
    w, b = _leaf(torch, 256), _leaf(torch, 256)
    return lambda: _backward(F.group_norm(x, 32, w, b), x, w, b)


@case("batch_norm", "`nn.BatchNorm2d(256)` (training) on 32x256x32x32")
def _bn(torch: Any, F: Any) -> Callable:
    m = _params(torch.nn.BatchNorm2d(256))
    x = _leaf(torch, 32, 256, 32, 32)
    return lambda: _backward(m(x), x, *m.parameters())


@case("gelu_tanh", "`gelu(x) * tanh(x)`, 2^24 elements")
def _gelu(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 1 << 24)
    return lambda: _backward(F.gelu(x) * torch.tanh(x), x)


@case("checkpoint_seq", "`checkpoint_sequential` over 16 Linear+GELU, 4096x1024")
def _ckpt(torch: Any, F: Any) -> Callable:
    from torch.utils.checkpoint import checkpoint_sequential  # (ember's under ember run)
    nn = torch.nn
    model = _params(nn.Sequential(
        *[m for _ in range(16) for m in (nn.Linear(1024, 1024), nn.GELU())]))
    x = _leaf(torch, 4096, 1024)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        _backward(checkpoint_sequential(model, 4, x, use_reentrant=False), x)
    return step


@case("gpt_step", "a GPT training step (4 blocks, d 256, T 256, batch 16, SDPA, AdamW)")
def _gpt(torch: Any, F: Any) -> Callable:
    nn = torch.nn
    d, heads, T, B, vocab = 256, 4, 256, 16, 65

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: Any) -> Any:
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (t.view(B, T, heads, d // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, d))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(4)])
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx: Any, tgt: Any) -> Any:
            x = self.tok(idx) + self.pos(torch.arange(T))
            logits = self.head(self.ln_f(self.blocks(x)))
            return F.cross_entropy(logits.view(B * T, vocab), tgt.view(B * T))

    model = _params(GPT())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx, tgt = torch.randint(0, vocab, (B, T)), torch.randint(0, vocab, (B, T))

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(idx, tgt).backward()
        opt.step()
    return step


@case("attention_by_hand", "hand-written causal attention (matmul, masked_fill, softmax, matmul), "
      "4x8x1024x64")
def _attn(torch: Any, F: Any) -> Callable:
    q, k, v = (_leaf(torch, 4, 8, 1024, 64) for _ in range(3))
    mask = torch.ones(1024, 1024, dtype=torch.bool).triu(1)

    def step() -> None:
        s = (q @ k.transpose(-2, -1)) * 0.125
        p = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
        _backward(p @ v, q, k, v)
    return step


@case("cross_entropy", "`cross_entropy`, 4096 x 8192 logits")
def _ce(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 4096, 8192)
    t = torch.randint(0, 8192, (4096,))
    return lambda: _backward(F.cross_entropy(x, t), x)


@case("unfold", "`F.unfold` 3x3 on 16x64x56x56")
def _unfold(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 16, 64, 56, 56)
    return lambda: _backward(F.unfold(x, 3, padding=1), x)


@case("fold", "`F.fold` 3x3 to 56x56 from 16x576x3136")
def _fold(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 16, 576, 3136)
    return lambda: _backward(F.fold(x, (56, 56), 3, padding=1), x)


@case("interpolate", "`F.interpolate(bilinear, x2)` on 16x64x128x128")
def _interp(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 16, 64, 128, 128)
    return lambda: _backward(F.interpolate(x, scale_factor=2, mode="bilinear"), x)


@case("grid_sample", "`F.grid_sample` bilinear, 16x64x128x128, 128x128 grid")
def _grid(torch: Any, F: Any) -> Callable:
    x = _leaf(torch, 16, 64, 128, 128)
    g = (torch.rand(16, 128, 128, 2) * 2 - 1).requires_grad_()
    return lambda: _backward(F.grid_sample(x, g, align_corners=False), x, g)


# The issue's sixteen, in its order (the default set); the rest run with --all or --only.
ISSUE = ["pdist", "cdist_sq", "sdpa_causal", "conv2d", "embedding_bag_mean", "index_select",
         "multi_margin_loss", "mse_loss", "embedding", "cnn_step", "layer_norm", "gelu_tanh",
         "checkpoint_seq", "gpt_step", "attention_by_hand", "cross_entropy"]


# ---------------------------------------------------------------------------------------------
# the case process


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def child(name: str, runs: int = 2) -> dict:
    here = str(Path(__file__).resolve().parent)  # bench/ holds a profile.py: off the path
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(here)]
    import torch  # PyTorch, or ember under `ember run`
    import torch.nn.functional as F

    torch.manual_seed(0)
    step = CASES[name][1](torch, F)
    times = []
    base = 0
    for i in range(runs):
        for t in LEAVES:  # the previous run's gradients go before the resident set is read
            t.grad = None
        gc.collect()
        if i == runs - 1:
            base = _status("VmRSS")
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset VmHWM to the current resident set
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    peak = _status("VmHWM") - base
    return {"case": name, "peak_mb": peak / MB, "base_mb": base / MB, "seconds": times[-1]}


# ---------------------------------------------------------------------------------------------
# the runner


def run_case(engine: str, name: str, timeout: float) -> dict:
    from .runner import engine_env

    env = engine_env(1)
    env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    script = str(Path(__file__).resolve())
    if engine == "torch":
        cmd = [sys.executable, script, "--child", name]
    else:
        cmd = [sys.executable, "-m", "ember", "run", script, "--child", name]
    try:
        res = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    for line in reversed(res.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-2:]
    return {"error": " | ".join(tail) or f"exit code {res.returncode}"}


def _cell(r: dict | None, key: str = "peak_mb") -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "error"
    return f"{r[key]:,.0f} MB"


def render(results: dict) -> str:
    rows = ["| case (float32) | PyTorch peak | ember peak | ratio | within 1.25x + 16 MB |"
            " PyTorch s | ember s |",
            "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        t, e = r.get("torch"), r.get("ember")
        ratio, ok = "-", "-"
        if t and e and "error" not in t and "error" not in e:
            ratio = f"{e['peak_mb'] / max(t['peak_mb'], 1.0):.2f}x"
            ok = "yes" if e["peak_mb"] <= RATIO * t["peak_mb"] + SLACK_MB else "**no**"

        def secs(x: dict | None) -> str:
            return f"{x['seconds']:.3f}" if x and "error" not in x else "-"

        rows.append(f"| {CASES[name][0]} | {_cell(t)} | {_cell(e)} | {ratio} | {ok} | "
                    f"{secs(t)} | {secs(e)} |")
    return "\n".join(rows) + "\n"


def write_doc(table: str, cpu: str) -> None:
    block = f"{BEGIN}\nMeasured on {cpu}.\n\n{table}{END}\n"
    text = DOC.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n## Peak memory (issue 28)\n\n" + block
    DOC.write_text(text)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         "unknown CPU")
    except OSError:
        model = "unknown CPU"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} cores, 1 thread per engine"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench --memory", description=__doc__.split("\n")[0])
    p.add_argument("--only", action="append", default=[], metavar="CASE",
                   help="run only these cases (repeatable or comma-separated): " + ", ".join(CASES))
    p.add_argument("--all", action="store_true", help="every case (default: the issue's sixteen)")
    p.add_argument("--engines", default="torch,ember", help="comma-separated: torch,ember")
    p.add_argument("--timeout", type=float, default=600, help="seconds per process")
    p.add_argument("--json", default=str(ROOT / ".bench" / "memory.json"),
                   help="where the raw results go")
    p.add_argument("--write-doc", action="store_true",
                   help="write the table into docs/benchmarks.md (between its markers)")
    p.add_argument("--child", metavar="CASE", help=argparse.SUPPRESS)
    opts = p.parse_args(argv)
    if opts.child:
        print(json.dumps(child(opts.child)), flush=True)
        return 0
    names = [n for item in opts.only for n in item.split(",") if n] or (
        list(CASES) if opts.all else ISSUE)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    engines = [e for e in ("torch", "ember") if e in opts.engines.split(",")]
    results: dict = {}
    for name in names:
        results[name] = {e: run_case(e, name, opts.timeout) for e in engines}
        r = results[name]
        print(f"{name:22s} " + "  ".join(f"{e} {_cell(r[e])}" for e in engines)
              + "".join(f"  ({e}: {r[e]['error']})" for e in engines if "error" in r[e]),
              flush=True)
    table = render(results)
    print("\n" + table)
    out = Path(opts.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cpu": _cpu(), "results": results}, indent=1))
    if opts.write_doc:
        write_doc(table, _cpu())
    return 0


if __name__ == "__main__":
    sys.exit(main())
