"""float32 <-> bfloat16/float16 casts as an eager kernel (``_kernels_loader.half_cast``; issue
29, third slice): bit for bit ml_dtypes' and NumPy's casts (round to nearest even, subnormals,
overflow to inf, their NaNs), used by ``.to()`` and autocast's casts and the half ops' float32
arithmetic (ops/_promote.py), which give the same results with the kernels on and off.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _bf16() -> np.dtype:
    return ember.bfloat16.np if hasattr(ember.bfloat16, "np") else np.dtype("bfloat16")


def _bits32() -> np.ndarray:
    """float32 bit patterns: random ones, and each exponent with the mantissas around the
    rounding points of both half formats (ties, ties +- 1, the top bits), both signs."""
    rng = np.random.default_rng(70)
    ex = np.arange(256, dtype=np.uint32) << 23
    near = [ex + d for d in (0, 1, 0x7fffff, 0x1000, 0xfff, 0x1001, 0x3000, 0x2000, 0x1fff,
                             0x8000, 0x7fff, 0x8001, 0x18000, 0x10000, 0x7fe000, 0x7ff000)]
    special = np.array([0x477fe000, 0x477fefff, 0x477ff000, 0x38800000, 0x387fffff, 0x33000000,
                        0x33000001, 0x32ffffff, 0x7fc00000, 0x7f800001, 0x7fa00000, 0x7fffffff,
                        0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 1], np.uint32)
    u = np.concatenate([rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32),
                        *near, special])
    return np.concatenate([u, u | np.uint32(0x80000000)])


@needs_kernels
@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_half_casts_are_numpys_bit_for_bit(half: str) -> None:
    dt = _bf16() if half == "bfloat16" else np.dtype(np.float16)
    f = _bits32().view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (NumPy warns of the overflows and NaNs)
        ref = f.astype(dt)
    got = L.half_cast(f, dt)
    assert got.dtype == dt and got.shape == f.shape
    np.testing.assert_array_equal(got.view(np.uint16), ref.view(np.uint16))
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dt).reshape(256, 256)
    back = L.half_cast(h, np.float32)
    assert back.dtype == np.float32 and back.shape == (256, 256)
    np.testing.assert_array_equal(back.view(np.uint32), h.astype(np.float32).view(np.uint32))


@needs_kernels
def test_half_cast_refuses_what_it_does_not_take() -> None:
    x = np.ones((4, 6), np.float32)
    assert L.half_cast(x[:, ::2], np.float16) is None  # strided
    assert L.half_cast(x, np.float64) is None
    assert L.half_cast(x.astype(np.float64), np.float16) is None
    assert L.half_cast(x.astype(np.float16), np.float64) is None
    assert L.half_cast(np.ones(0, np.float32), np.float16) is None
    with L.disabled():
        assert L.half_cast(x, np.float16) is None


@needs_kernels
@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_tensor_casts_take_the_kernel_and_match_torch(half: str, monkeypatch) -> None:
    calls = []
    real = L.half_cast
    monkeypatch.setattr(L, "half_cast",
                        lambda *a: (lambda r: calls.append(r is not None) or r)(real(*a)))
    rng = np.random.default_rng(71)
    x = (rng.standard_normal((300, 70)) * 10.0 ** rng.integers(-8, 6, (300, 70))).astype(
        np.float32)
    x[0, :4] = [np.inf, -np.inf, 7e4, -1e-40]
    t = ember.tensor(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no overflow warning: PyTorch's casts give none)
        h = t.to(getattr(ember, half))
        back = h.float()
    assert calls == [True, True]
    assert h.dtype == getattr(ember, half) and back.dtype == ember.float32
    if HAVE_TORCH:
        th = torch.tensor(x).to(getattr(torch, half))
        np.testing.assert_array_equal(back.numpy().view(np.uint32),
                                      th.float().numpy().view(np.uint32))


@needs_kernels
def test_autocast_step_is_the_same_with_the_kernels_on_and_off(monkeypatch) -> None:
    """also in backward: the half ops' float32 gradients rounded to their inputs' dtype, and
    autocast's casts' gradients widened back to float32, by the kernel (not the engine's
    astype)"""
    seen = []
    real = L.half_cast
    monkeypatch.setattr(L, "half_cast", lambda a, dt: (lambda r: seen.append(
        (a.dtype.itemsize, r is not None)) or r)(real(a, dt)))

    def run():
        ember.manual_seed(3)
        net = ember.nn.Sequential(ember.nn.Linear(64, 128), ember.nn.ReLU(),
                                  ember.nn.Linear(128, 10))
        x = ember.randn(32, 64)
        y = ember.randint(0, 10, (32,))
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out = net(x)
            loss = ember.nn.functional.cross_entropy(out, y)
        seen.clear()
        loss.backward()
        return [out.detach().float().numpy(), loss.detach().numpy()] + [
            p.grad.numpy() for p in net.parameters()]
    with L.enabled():
        on = run()
    assert (4, True) in seen and (2, True) in seen  # float32 -> half and half -> float32
    with L.disabled():
        off = run()
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


@needs_kernels
@pytest.mark.parametrize("how", ["cast", "opmath"])
def test_half_gradients_are_cast_by_the_kernel(how: str, monkeypatch) -> None:
    """a cast's gradient back to a half input (ToCopyBackward0), and a half op's float32
    gradient rounded to its half input: the kernel's one pass, the engine's astype's values"""
    x = np.random.default_rng(72).standard_normal(1000).astype(np.float32)

    def run():
        a = ember.tensor(x).to(ember.bfloat16).requires_grad_()
        y = (a.float() * 3).sum() if how == "cast" else ember.sigmoid(a).sum()
        seen.clear()  # (the backward's casts only)
        y.backward()
        return a.grad
    seen = []
    real = L.half_cast
    monkeypatch.setattr(L, "half_cast", lambda a, dt: (lambda r: seen.append(
        (a.dtype.itemsize, r is not None)) or r)(real(a, dt)))
    with L.enabled():
        on = run()
    assert (4, True) in seen
    with L.disabled():
        off = run()
    assert on.dtype == off.dtype == ember.bfloat16
    np.testing.assert_array_equal(on.float().numpy(), off.float().numpy())
    if HAVE_TORCH:
        t = torch.tensor(x).to(torch.bfloat16).requires_grad_()
        ((t.float() * 3).sum() if how == "cast" else torch.sigmoid(t).sum()).backward()
        np.testing.assert_array_equal(on.float().numpy(), t.grad.float().numpy())


# -- half_round: the cast to half and back in one pass (autocast's weights and weight gradients)


@needs_kernels
@pytest.mark.parametrize("half", ["bfloat16", "bfloat16 portable", "float16"])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_half_round_is_the_two_pass_cast_bit_for_bit(half: str, in_place: bool,
                                                      threads: int) -> None:
    """the kernel's half bits and float32 values are half_cast's there and back, on random bits
    and the special ones (NaN payloads of both signs, infinities, -0.0, ties to even either
    way, float32 and half subnormals, values that overflow the half format), in place and not,
    split over one thread and two; bfloat16 by the AVX-512 loop (where the CPU has it) and the
    portable one"""
    dt = np.dtype(np.float16) if half == "float16" else _bf16()
    mode = {"bfloat16": 0, "bfloat16 portable": 4, "float16": 2}[half]
    f = _bits32().view(np.float32)
    f = np.concatenate([f, np.array([-0.0, 0.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 65520.0,
                                     -65520.0, 65519.996, 3.4e38, 2.0**-133, 2.0**-25],
                                    np.float32)])
    ref_half = L.half_cast(f, dt)
    ref_back = L.half_cast(ref_half, np.float32)
    half_out = np.empty(f.shape, np.uint16)
    src = f.copy()
    wide = src if in_place else np.full(f.shape, 7.0, np.float32)
    prev = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        L.active.half_round(src, half_out, wide, mode)
    finally:
        ember.set_num_threads(prev)
    np.testing.assert_array_equal(half_out, ref_half.view(np.uint16))
    np.testing.assert_array_equal(wide.view(np.uint32), ref_back.view(np.uint32))
    if not in_place:
        np.testing.assert_array_equal(src.view(np.uint32), f.view(np.uint32))


@needs_kernels
@pytest.mark.parametrize("mode", [0, 4, 2])
def test_half_round_at_every_alignment_and_length(mode: int) -> None:
    """the vector loop's head (to the half output's 64-byte line), body and tail: views that
    start at each of 40 offsets, lengths around the 32-element blocks"""
    dt = np.dtype(np.float16) if mode == 2 else _bf16()
    f = _bits32().view(np.float32)[-4096:].copy()
    for off in range(40):
        for n in (0, 1, 31, 32, 33, 95, 200):
            x = f[off:off + n]
            ref = L.half_cast(x, dt) if n else np.empty(0, dt)
            back = L.half_cast(ref, np.float32) if n else np.empty(0, np.float32)
            h = np.empty(4096, np.uint16)[off:off + n]
            w = np.full(4096, 3.0, np.float32)[off:off + n]
            L.active.half_round(x, h, w, mode)
            np.testing.assert_array_equal(h, ref.view(np.uint16))
            np.testing.assert_array_equal(w.view(np.uint32), back.view(np.uint32))


@needs_kernels
def test_half_round_refuses_bad_buffers() -> None:
    x = np.ones(100, np.float32)
    h = np.empty(100, np.uint16)
    with pytest.raises(ValueError, match="mode 0, 2 or 4"):
        L.active.half_round(x, h, x, 1)
    with pytest.raises(ValueError, match="as many"):
        L.active.half_round(x, h[:50], x, 0)
    with pytest.raises(ValueError, match="not overlap"):
        L.active.half_round(x[:99], h[:99], x[1:], 0)
    with pytest.raises(ValueError, match="half must not overlap"):
        L.active.half_round(x, x.view(np.uint16)[:100], np.empty(100, np.float32), 0)


@needs_kernels
def test_half_round_keeps_the_values_for_the_cast_back() -> None:
    """the loader's half_round: the half array returned, the gradient rounded in place, and the
    next half_cast of that half array to float32 returns it (the same bits as a new cast),
    once; small arrays are left to half_cast"""
    dt = _bf16()
    rng = np.random.default_rng(73)
    g = rng.standard_normal((512, 256)).astype(np.float32)
    ref = g.astype(dt)
    L.drop_rounded()
    h = L.half_round(g, dt)
    assert h.dtype == dt and h.shape == g.shape
    np.testing.assert_array_equal(h.view(np.uint16), ref.view(np.uint16))
    np.testing.assert_array_equal(g, ref.astype(np.float32))
    assert L.half_cast(h, np.float32) is g  # kept: no pass
    back = L.half_cast(h, np.float32)  # taken once: a new cast after that
    assert back is not g
    np.testing.assert_array_equal(back, g)
    assert L.half_round(np.ones(100, np.float32), dt) is None
    assert L.half_round(g.astype(np.float64), dt) is None
    assert L.half_round(np.ones((512, 256), np.float32)[:, ::2], dt) is None


def _autocast_step(width: int, twice: bool) -> list:
    ember.manual_seed(4)
    net = ember.nn.Sequential(ember.nn.Linear(width, 2 * width), ember.nn.ReLU(),
                              ember.nn.Linear(2 * width, width))
    x = ember.randn(64, width)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = net(x)
        if twice:  # the second layer again: its cached bfloat16 weight gets two gradients
            out = net[2](net[1](out.float() @ ember.ones(width, 2 * width) / width))
        loss = out.float().pow(2).mean()
    loss.backward()
    return [out.detach().float().numpy(), loss.detach().numpy()] + [
        p.grad.numpy() for p in net.parameters()]


@needs_kernels
@pytest.mark.parametrize("twice", [False, True])
def test_autocast_step_with_half_round_is_the_two_pass_step(twice: bool, monkeypatch) -> None:
    """autocast's weight casts and weight gradients through half_round (large weights) give the
    two-pass results bit for bit, with a layer used twice (the engine sums two gradients of
    the cast weight: never in place into a kept array)"""
    rounds = []
    real = L.half_round
    monkeypatch.setattr(L, "half_round", lambda a, dt: (lambda r: rounds.append(
        r is not None) or r)(real(a, dt)))
    fused = _autocast_step(256, twice)
    assert rounds and all(rounds)
    assert not L._ROUNDED or twice  # taken, or dropped at autocast's exit
    monkeypatch.setattr(L, "ROUND_MIN", 1 << 40)
    rounds.clear()
    plain = _autocast_step(256, twice)
    assert not any(rounds)
    for a, b in zip(fused, plain):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@needs_kernels
def test_half_round_in_place_only_for_ops_whose_gradients_are_new_arrays(monkeypatch) -> None:
    """the weight gradient is rounded in place only where the op marks its backward's gradients
    as its own new arrays (linear): other half ops on a cast weight take the two passes; both
    give the engine's values"""
    rounds = []
    real = L.half_round
    monkeypatch.setattr(L, "half_round", lambda a, dt: rounds.append(a.shape) or real(a, dt))
    rng = np.random.default_rng(74)
    w32 = rng.standard_normal((384, 256)).astype(np.float32)
    x32 = rng.standard_normal((16, 256)).astype(np.float32)

    def run(how: str) -> np.ndarray:
        w = ember.tensor(w32, requires_grad=True)
        wb = w.to(ember.bfloat16)
        if how == "linear":
            y = ember.nn.functional.linear(ember.tensor(x32).to(ember.bfloat16), wb)
        else:
            y = ember.sigmoid(wb) * 3
        y.float().sum().backward()
        return w.grad.numpy()

    for how in ("linear", "sigmoid"):
        rounds.clear()
        got = run(how)
        assert rounds == ([(384, 256)] if how == "linear" else [])
        with L.disabled():
            ref = run(how)
        np.testing.assert_array_equal(got, ref)


@needs_kernels
@pytest.mark.parametrize("op", ["matmul", "conv2d"])
def test_autocast_keeps_rounded_values_only_for_ops_that_take_them(op: str,
                                                                   monkeypatch) -> None:
    """matmul widens its half operands by half_cast, so it takes the float32 values autocast's
    casts keep (none left over; the results are the two-pass ones bit for bit); convolution
    multiplies bfloat16 arrays, so its casts keep nothing, and so does matmul where the CPU
    multiplies bfloat16 itself (bf16_gemm)"""
    direct = L.bf16_gemm_ready(ember.bfloat16.np)
    rng = np.random.default_rng(75)
    if op == "matmul":
        a32, b32 = (rng.standard_normal((256, 512)).astype(np.float32),
                    rng.standard_normal((512, 384)).astype(np.float32))
    else:
        a32, b32 = (rng.standard_normal((2, 16, 48, 48)).astype(np.float32),
                    rng.standard_normal((16, 16, 3, 3)).astype(np.float32))

    def run() -> list:
        a = ember.tensor(a32, requires_grad=True)
        b = ember.tensor(b32, requires_grad=True)
        with ember.autocast("cpu", dtype=ember.bfloat16):
            y = a @ b if op == "matmul" else ember.nn.functional.conv2d(a, b)
            assert y.dtype == ember.bfloat16
            kept = len(L._ROUNDED)
        y.float().sum().backward()
        return [kept, y.detach().float().numpy(), a.grad.numpy(), b.grad.numpy()]

    keeps = []
    real = L._keep
    monkeypatch.setattr(L, "_keep", lambda h, w: keeps.append(h.shape) or real(h, w))
    fused = run()
    assert fused[0] == 0  # taken by the op, or never kept
    assert keeps == ([(256, 512), (512, 384)] if op == "matmul" and not direct else [])
    monkeypatch.setattr(L, "ROUND_MIN", 1 << 40)
    plain = run()
    for x, y in zip(fused[1:], plain[1:]):
        np.testing.assert_array_equal(x, y)
