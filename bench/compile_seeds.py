"""The seeds' training loops written as users write them, compiled and eager (issue 30).

    python -m bench.compile_seeds [--n N] [--rounds R]

Each loop is the seed's own step: ``model = torch.compile(model)`` on a plain ``nn.Sequential``
(the loss outside the compiled module), then ``opt.zero_grad(); loss = loss_fn(model(x), y);
loss.backward(); opt.step()`` on one fixed batch (data loading is left out); the scalar seed
compiles its function ``w * x ** 2 + 1``. The last column compiles the benchmark's way instead
(``bench/workloads``): model and loss in one function, ``torch.compile(lambda x, y:
loss_fn(model(x), y))``. Four runs per loop in one process, interleaved: PyTorch eager, ember
eager, ember compiled (module) and ember compiled (function); best of ``R`` rounds of ``N``
steps, CPU time of this thread per step (the machine may be shared). The ratios are PyTorch's
time over ember's. The compile columns are ``ember._compile.stats["compile_seconds"]`` over the
warm-up steps of each compiled run (its traced calls: two eager runs under the recorder,
generating code and building or loading its C; the kernel cache as this process finds it:
``bench/compile_time.py`` measures cold and warm caches apart).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import ember  # noqa: E402
import ember._compile  # noqa: E402

try:
    import torch
except ImportError:  # ember alone: the PyTorch column is left empty
    torch = None


def scalar(lib: object, compiled: bool | str) -> Callable[[], None]:
    x = lib.tensor(2.0, requires_grad=True)
    w = lib.tensor(3.0, requires_grad=True)

    def f(w: object, x: object) -> object:
        return w * x ** 2 + 1

    if compiled:
        f = lib.compile(f)

    def step() -> None:
        y = f(w, x)
        y.backward()
        x.grad = None
        w.grad = None

    return step


def _loop(lib: object, compiled: bool | str, model: object, opt: object, loss_fn: object,
          x: object, y: object) -> Callable[[], None]:
    if compiled == "function":  # the benchmark's way: model and loss compiled together
        forward = lib.compile(lambda x, y: loss_fn(model(x), y))
    else:
        if compiled:
            model = lib.compile(model)

        def forward(x: object, y: object) -> object:
            return loss_fn(model(x), y)

    def step() -> None:
        opt.zero_grad()
        loss = forward(x, y)
        loss.backward()
        opt.step()

    return step


def linear_regression(lib: object, compiled: bool | str) -> Callable[[], None]:
    lib.manual_seed(0)
    x = lib.rand(200, 1)
    y = 3 * x + 2 + 0.1 * lib.randn(200, 1)
    model = lib.nn.Linear(1, 1)
    return _loop(lib, compiled, model, lib.optim.SGD(model.parameters(), lr=0.5),
                 lib.nn.MSELoss(), x, y)


def classifier(lib: object, compiled: bool | str) -> Callable[[], None]:
    lib.manual_seed(0)
    x = lib.randn(64, 20)
    y = (x[:, 0] + x[:, 1] > 0).long()
    nn = lib.nn
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2))
    return _loop(lib, compiled, model, lib.optim.Adam(model.parameters(), lr=1e-3),
                 nn.CrossEntropyLoss(), x, y)


def sine_regression(lib: object, compiled: bool | str) -> Callable[[], None]:
    lib.manual_seed(0)
    x = lib.rand(32, 1) * 4 - 2
    y = lib.sin(2 * x)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 1))
    return _loop(lib, compiled, model, lib.optim.SGD(model.parameters(), lr=0.02),
                 nn.MSELoss(), x, y)


def _time(step: Callable[[], None], n: int) -> float:
    t0 = time.thread_time()
    for _ in range(n):
        step()
    return (time.thread_time() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="steps per round")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    if torch is not None:
        torch.set_num_threads(1)
    print("| loop | PyTorch eager us | ember eager us | ember compiled us | compiled (function) "
          "us | eager ratio | compiled ratio | compiled (function) ratio | compile ms "
          "(module, function) |")
    print("|---|---|---|---|---|---|---|---|---|")
    stats = ember._compile.stats
    for make in (scalar, linear_regression, classifier, sine_regression):
        runs = {"ember eager": make(ember, False), "ember compiled": make(ember, True),
                "function": make(ember, "function")}
        if torch is not None:
            runs["torch"] = make(torch, False)
        compile_ms = {}
        for k, step in runs.items():  # warm up: the compiled ones trace here
            before = stats["compile_seconds"]
            for _ in range(5):
                step()
            compile_ms[k] = 1e3 * (stats["compile_seconds"] - before)
        best = {k: float("inf") for k in runs}
        for _ in range(a.rounds):
            for k, step in runs.items():
                best[k] = min(best[k], _time(step, a.n))
        pt = best.get("torch")
        e, c, f = best["ember eager"], best["ember compiled"], best["function"]
        er, cr, fr = (f"{pt / v:.2f}x" for v in (e, c, f)) if pt else ("", "", "")
        print(f"| {make.__name__} | {f'{pt:.1f}' if pt else ''} | {e:.1f} | {c:.1f} | {f:.1f} | "
              f"{er} | {cr} | {fr} | {compile_ms['ember compiled']:.1f}, "
              f"{compile_ms['function']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
