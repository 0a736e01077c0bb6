"""The BLAS floor of the GEMM-bound workloads: the time NumPy's BLAS needs for one training step's
matrix products alone (forward and backward), float32, with preallocated outputs.

``python -m bench.floor mlp cnn gpt resnet18`` prints ``{name: {"ms": ..., "gflop": ...}}`` as JSON. The
runner runs it in the same environment (thread variables) as the workloads.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

# One GEMM of a training step: (label, batch, m, k, n, grad of A needed, grad of B needed).
# C[b] = A[b] @ B[b] with A (m, k), B (k, n); backward: dA = dC @ B^T, dB = A^T @ dC.
Gemm = tuple[str, int, int, int, int, bool, bool]


def linear(label: str, rows: int, fan_in: int, fan_out: int, input_grad: bool = True) -> Gemm:
    """y = x @ W^T: x (rows, fan_in), W (fan_out, fan_in)."""
    return (label, 1, rows, fan_in, fan_out, input_grad, True)


def conv2d(label: str, n: int, c_in: int, h_out: int, w_out: int, c_out: int, k: int,
           input_grad: bool = True) -> Gemm:
    """A convolution lowered to one GEMM (im2col): (n*h_out*w_out, c_in*k*k) @ (c_in*k*k, c_out)."""
    return (label, 1, n * h_out * w_out, c_in * k * k, c_out, input_grad, True)


def _gpt() -> list[Gemm]:
    B, T, C, H, V, L = 16, 64, 128, 4, 65, 4
    hd = C // H
    layer = [
        linear("qkv", B * T, C, 3 * C),
        ("q@k^T", B * H, T, hd, T, True, True),
        ("att@v", B * H, T, T, hd, True, True),
        linear("proj", B * T, C, C),
        linear("fc", B * T, C, 4 * C),
        linear("fc2", B * T, 4 * C, C),
    ]
    return layer * L + [linear("lm_head", B * T, C, V)]


def _resnet18(n: int = 32) -> list[Gemm]:
    """torchvision's resnet18(num_classes=10) on n x 3 x 32 x 32: the stem (7x7 stride 2, then
    max pooling to 8x8), four stages of two BasicBlocks (8, 4, 2, 1 pixels), 1x1 downsamples."""
    convs = [conv2d("conv1", n, 3, 16, 16, 64, 7, input_grad=False)]
    c_in, hw = 64, 8
    for stage, c in enumerate((64, 128, 256, 512)):
        out = hw if stage == 0 else hw // 2
        convs.append(conv2d(f"layer{stage + 1}.0.conv1", n, c_in, out, out, c, 3))
        convs.append(conv2d(f"layer{stage + 1}.0.conv2", n, c, out, out, c, 3))
        if stage:
            convs.append(conv2d(f"layer{stage + 1}.0.downsample", n, c_in, out, out, c, 1))
        convs += [conv2d(f"layer{stage + 1}.1.conv{i}", n, c, out, out, c, 3) for i in (1, 2)]
        c_in, hw = c, out
    return convs + [linear("fc", n, 512, 10)]


STEPS: dict[str, list[Gemm]] = {
    "mlp": [
        linear("fc1", 128, 784, 512, input_grad=False),
        linear("fc2", 128, 512, 512),
        linear("fc3", 128, 512, 10),
    ],
    "cnn": [
        conv2d("conv1", 64, 1, 24, 24, 16, 5, input_grad=False),
        conv2d("conv2", 64, 16, 8, 8, 32, 5),
        linear("fc1", 64, 32 * 4 * 4, 128),
        linear("fc2", 64, 128, 10),
    ],
    "gpt": _gpt(),
    "resnet18": _resnet18(),
}


def _products(spec: list[Gemm], rng: np.random.Generator) -> list[tuple]:
    """(a, b, out) triples for every product of a step, transposes as the views backward uses."""
    made = []
    f32 = np.float32
    for _, b, m, k, n, da, db in spec:
        lead = (b,) if b > 1 else ()
        A = rng.standard_normal((*lead, m, k), dtype=f32)
        Bm = rng.standard_normal((*lead, k, n), dtype=f32)
        dC = rng.standard_normal((*lead, m, n), dtype=f32)
        made.append((A, Bm, np.empty((*lead, m, n), f32)))
        if da:
            made.append((dC, Bm.swapaxes(-1, -2), np.empty((*lead, m, k), f32)))
        if db:
            made.append((A.swapaxes(-1, -2), dC, np.empty((*lead, k, n), f32)))
    return made


def gflop(spec: list[Gemm]) -> float:
    total = 0
    for _, b, m, k, n, da, db in spec:
        total += 2 * b * m * k * n * (1 + da + db)
    return total / 1e9


def measure(name: str, min_time: float = 0.5, min_reps: int = 10, max_time: float = 4.0) -> dict:
    """Median seconds over repetitions of one step's products (after a warm-up): at least
    ``min_reps`` and ``min_time`` seconds, but no more than ``max_time`` once 3 are in."""
    prods = _products(STEPS[name], np.random.default_rng(0))
    matmul = np.matmul
    for _ in range(2):
        for a, b, out in prods:
            matmul(a, b, out=out)
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        for a, b, out in prods:
            matmul(a, b, out=out)
        times.append(time.perf_counter() - t0)
        if len(times) >= 500 or (len(times) >= 3 and time.perf_counter() - start > max_time):
            break
    times.sort()
    return {"ms": 1e3 * times[len(times) // 2], "ms_min": 1e3 * times[0],
            "gflop": gflop(STEPS[name]), "products": len(prods)}


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(STEPS)
    print(json.dumps({n: measure(n) for n in names}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
