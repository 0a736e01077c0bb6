"""``torch.fft`` on ember (issue 32): every transform with PyTorch's n/s/dim/norm arguments,
compared with the installed PyTorch (values, shapes, result dtypes: float32 in, complex64 out,
never complex128; gradients for a random cotangent), gradients also checked by central
differences without PyTorch, second order, the refusals, fftfreq/rfftfreq, fftshift/ifftshift,
``import torch.fft`` under ``ember run``, and the pure-Python core (a subprocess reruns this file).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from helpers import rerun_on_pure_python

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(2032)
R = RNG.standard_normal((4, 6, 5))
C = R + 1j * RNG.standard_normal((4, 6, 5))
NORMS = [None, "ortho", "forward"]
PAIRS = {"float32": "complex64", "float64": "complex128"}


def _np(t):
    return t.detach().resolve_conj().numpy()


def _compare(fn, arr, real_dt):
    """fn on ember and torch: same dtype, shape, values, and gradients for one cotangent."""
    dt = real_dt if arr.dtype.kind == "f" else PAIRS[real_dt]
    te = ember.tensor(arr, dtype=getattr(ember, dt), requires_grad=True)
    tt = torch.tensor(arr, dtype=getattr(torch, dt), requires_grad=True)
    oe, ot = fn(ember, te), fn(torch, tt)
    assert str(oe.dtype) == str(ot.dtype) and tuple(oe.shape) == tuple(ot.shape)
    tol = dict(rtol=1e-4, atol=1e-4) if real_dt == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_np(oe), _np(ot), **tol)
    g = RNG.standard_normal(tuple(ot.shape))
    if ot.is_complex():
        g = g + 1j * RNG.standard_normal(tuple(ot.shape))
    g = g.astype(_np(ot).dtype)
    oe.backward(ember.tensor(g))
    ot.backward(torch.tensor(g))
    assert str(te.grad.dtype) == str(tt.grad.dtype)
    np.testing.assert_allclose(_np(te.grad), _np(tt.grad), **tol)


ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


@pytest.mark.parametrize("real_dt", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_transforms_match_pytorch(name, norm, real_dt):
    inputs = [R] if name in REAL_ONLY else [R, C]
    for arr in inputs:
        for n in (None, 3, 8):
            for dim in (-1, 0, 1):
                _compare(lambda m, x, n=n, dim=dim: getattr(m.fft, name)(x, n=n, dim=dim,
                                                                         norm=norm), arr, real_dt)


N_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn",
       "hfftn", "ihfftn"]
SHAPES = [{}, {"s": (3, 8)}, {"dim": (0, 2)}, {"s": (5, 4), "dim": (2, 0)}, {"s": (-1, 7),
                                                                            "dim": (1, 2)}]


@pytest.mark.parametrize("real_dt", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", N_D)
def test_n_dimensional_transforms_match_pytorch(name, norm, real_dt):
    inputs = [R] if name in REAL_ONLY else [R, C]
    for arr in inputs:
        for kw in SHAPES:
            _compare(lambda m, x, kw=kw: getattr(m.fft, name)(x, norm=norm, **kw), arr, real_dt)


def test_float32_gives_complex64_and_matches_numpy():
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    assert ember.fft.fft(ember.tensor(x)).dtype is ember.complex64
    assert ember.fft.rfft(ember.tensor(x)).dtype is ember.complex64
    assert ember.fft.irfft(ember.fft.rfft(ember.tensor(x))).dtype is ember.float32
    assert ember.fft.fft(ember.arange(4)).dtype is ember.complex64  # integers: the default dtype
    np.testing.assert_allclose(ember.fft.rfftn(ember.tensor(x), norm="ortho").numpy(),
                               np.fft.rfftn(x, norm="ortho"), rtol=1e-5, atol=1e-5)
    y = ember.fft.irfftn(ember.fft.rfftn(ember.tensor(x)), s=x.shape)
    np.testing.assert_allclose(y.numpy(), x, rtol=1e-5, atol=1e-5)


def _central(fn, a, g):
    """d/da of re(sum(conj(g) * fn(a))) by central differences (a real or complex)."""
    def loss(v):
        with ember.no_grad():
            return float(np.real(np.sum(np.conj(g) * fn(ember.tensor(v)).numpy())))
    num = np.zeros_like(a)
    units = (1, 1j) if a.dtype.kind == "c" else (1,)
    for idx in np.ndindex(a.shape):
        for u in units:
            up, dn = a.copy(), a.copy()
            up[idx] += 1e-6 * u
            dn[idx] -= 1e-6 * u
            num[idx] += u * (loss(up) - loss(dn)) / 2e-6
    return num


@pytest.mark.parametrize("fn,complex_in", [
    (lambda x: ember.fft.fft(x, n=5), False), (lambda x: ember.fft.rfft(x, norm="ortho"), False),
    (lambda x: ember.fft.irfft(x, n=7), True), (lambda x: ember.fft.irfft(x, n=6), True),
    (lambda x: ember.fft.hfft(x, norm="forward"), True), (lambda x: ember.fft.ihfft(x), False),
    (lambda x: ember.fft.ifftn(x, s=(3, 5)), True), (lambda x: ember.fft.irfftn(x), True),
    (lambda x: ember.fft.rfft2(x, s=(2, 6)), False),
])
def test_gradients_by_central_differences(fn, complex_in):
    a = RNG.standard_normal((3, 4))
    if complex_in:
        a = a + 1j * RNG.standard_normal((3, 4))
    x = ember.tensor(a, requires_grad=True)
    out = fn(x)
    g = RNG.standard_normal(tuple(out.shape)) + (1j * RNG.standard_normal(tuple(out.shape))
                                                 if out.is_complex() else 0)
    out.backward(ember.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), _central(fn, a, g), rtol=1e-6, atol=1e-7)


def test_second_order_matches_pytorch():
    a = RNG.standard_normal(6)
    res = []
    for m in (ember, torch):
        x = m.tensor(a, requires_grad=True)
        y = m.fft.irfft(m.fft.rfft(x) * m.fft.rfft(x), n=6, norm="ortho")
        loss = (m.fft.fft(x) * m.fft.ifft(x ** 2)).abs().sum() + y.pow(2).sum()
        (g,) = m.autograd.grad(loss, x, create_graph=True)
        g.sin().sum().backward()
        res.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-10)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-10)


@pytest.mark.parametrize("fn", [
    lambda m: m.fft.fft(m.ones(4).half()),
    lambda m: m.fft.rfft(m.ones(4, dtype=m.complex64)),
    lambda m: m.fft.ihfft(m.ones(4, dtype=m.complex64)),
    lambda m: m.fft.fft(m.ones(4), norm="bad"),
    lambda m: m.fft.fft(m.ones(4), n=0),
    lambda m: m.fft.fft(m.ones(4), dim=3),
    lambda m: m.fft.irfft(m.ones(1, dtype=m.complex64)),
    lambda m: m.fft.fft(m.tensor(2.0)),
    lambda m: m.fft.fftn(m.ones(2, 3), dim=(0, 0)),
    lambda m: m.fft.fftn(m.ones(2, 3), s=(2, 2, 2)),
    lambda m: m.fft.fftn(m.ones(2, 3), s=(2, 2), dim=(0,)),
    lambda m: m.fft.fft2(m.ones(3)),
])
def test_refusals_as_pytorch(fn):
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)):
        fn(ember)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies(name):
    for n, d in ((5, 1.0), (6, 0.5), (1, 2.0), (8, 0.1)):
        e, t = getattr(ember.fft, name)(n, d), getattr(torch.fft, name)(n, d)
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    e = getattr(ember.fft, name)(4, dtype=ember.float64, requires_grad=True)
    assert e.dtype is ember.float64 and e.requires_grad


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name):
    for dim in (None, 0, (1, 2), -1):
        _compare(lambda m, x, dim=dim: getattr(m.fft, name)(x, dim=dim), R, "float64")
    assert getattr(ember.fft, name)(ember.arange(6)).tolist() == \
        getattr(torch.fft, name)(torch.arange(6)).tolist()


def test_out_and_numpy_names():
    out = ember.empty(3, dtype=ember.complex64)
    res = ember.fft.rfft(ember.ones(4), out=out)
    assert res is out and out.tolist() == [4, 0, 0]


def test_namespace_and_import_under_ember_run(tmp_path):
    names = {n for n in dir(torch.fft) if not n.startswith("_")}
    assert names - set(dir(ember.fft)) <= {"common_args", "factory_common_args", "torch"}
    script = tmp_path / "spectral.py"
    script.write_text(
        "import torch\nimport torch.fft\nfrom torch.fft import rfft, irfft\n"
        "x = torch.arange(8.0)\nprint(torch.fft.fft(x)[1], irfft(rfft(x), n=8).dtype)\n")
    out = subprocess.run([sys.executable, "-m", "ember", "run", str(script)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    x = torch.arange(8.0)
    assert out.stdout == f"{torch.fft.fft(x)[1]!s} {torch.float32}\n"


STFT_CASES = [
    dict(n_fft=16, window="hann"),
    dict(n_fft=16, hop_length=3, window="hann", normalized=True),
    dict(n_fft=16, win_length=10, window="hamming", hop_length=2),
    dict(n_fft=16, window="hamming", center=False),
    dict(n_fft=15, hop_length=5, window="hann", pad_mode="constant"),
    dict(n_fft=16, window="hann", onesided=False),
    dict(n_fft=12, hop_length=4, window=None, pad_mode="replicate"),
    dict(n_fft=16, win_length=8, window="hann", center=False, align_to_window=True),
]


def _stft_kw(lib, kw, dtype):
    kw = dict(kw)
    name = kw.pop("window")
    if name is not None:
        kw["window"] = getattr(lib, name + "_window")(kw.get("win_length", kw["n_fft"]),
                                                      dtype=dtype)
    return kw


@pytest.mark.filterwarnings("ignore:A window was not provided")
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
@pytest.mark.parametrize("real_dt", ["float32", "float64"])
def test_stft_and_istft_match_pytorch(case, batched, real_dt):
    kw = STFT_CASES[case]
    sig = RNG.standard_normal((2, 70) if batched else (70,))

    def both(lib, x):
        k = _stft_kw(lib, kw, getattr(lib, real_dt))
        spec = lib.stft(x, return_complex=True, **k)
        k.pop("pad_mode", None), k.pop("align_to_window", None)
        if kw.get("align_to_window") or kw.get("pad_mode") == "constant":
            return spec
        back = lib.istft(spec * (1 + 0.5j), length=x.shape[-1] - 3, **k)
        return spec.abs().sum() * 0 + spec + back.sum()

    _compare(both, sig, real_dt)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_stft_of_complex_signals_and_complex_istft(dt):
    sig = RNG.standard_normal((2, 50)) + 1j * RNG.standard_normal((2, 50))

    def both(lib, x):
        w = lib.hann_window(16, dtype=x.real.dtype)
        spec = lib.stft(x, 16, window=w, return_complex=True)
        return lib.istft(spec, 16, window=w, return_complex=True)

    _compare(both, sig, "float32" if dt == "complex64" else "float64")
    x = ember.tensor(sig, dtype=getattr(ember, dt))
    w = ember.hann_window(16)
    back = ember.istft(ember.stft(x, 16, window=w), 16, window=w, return_complex=True, length=50)
    np.testing.assert_allclose(back.numpy(), sig, atol=1e-5)


def test_stft_round_trip_dtypes_and_return_complex_false():
    x = ember.randn(3, 200)
    w = ember.hann_window(64)
    spec = ember.stft(x, 64, hop_length=16, window=w, return_complex=True)
    assert spec.dtype == ember.complex64 and tuple(spec.shape) == (3, 33, 13)
    back = ember.istft(spec, 64, hop_length=16, window=w, length=200)
    assert back.dtype == ember.float32
    np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-5)
    assert x.stft(64, window=w, return_complex=True).shape == ember.stft(
        x, 64, window=w, return_complex=True).shape
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        old = ember.stft(x, 64, window=w, return_complex=False)
    tt = torch.tensor(x.numpy())
    with pytest.warns(UserWarning):
        ref = torch.stft(tt, 64, window=torch.hann_window(64), return_complex=False)
    assert old.dtype == ember.float32 and tuple(old.shape) == tuple(ref.shape)
    np.testing.assert_allclose(old.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("win_length", [16, 10])
def test_stft_and_istft_gradients_reach_the_window(win_length):
    sig = RNG.standard_normal((2, 60))
    win = np.hanning(win_length) + 0.1
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(sig, requires_grad=True)
        w = lib.tensor(win, requires_grad=True)
        spec = lib.stft(x, 16, hop_length=4, win_length=win_length, window=w,
                        return_complex=True)
        back = lib.istft(spec * spec.abs(), 16, hop_length=4, win_length=win_length, window=w)
        (back.square().sum() + spec.abs().sum()).backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-8, atol=1e-8)


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_stft_refusals_as_pytorch():
    calls = [
        lambda lib: lib.stft(lib.ones(100), 16),
        lambda lib: lib.stft(lib.ones(100), 0, return_complex=True),
        lambda lib: lib.stft(lib.ones(100), 16, hop_length=0, return_complex=True),
        lambda lib: lib.stft(lib.ones(100), 16, win_length=20, return_complex=True),
        lambda lib: lib.stft(lib.ones(100), 16, window=lib.ones(5), return_complex=True),
        lambda lib: lib.stft(lib.ones(2, 2, 100), 16, return_complex=True),
        lambda lib: lib.stft(lib.ones(100), 16, return_complex=True, align_to_window=True),
        lambda lib: lib.stft(lib.ones(100, dtype=lib.complex64), 16, onesided=True),
        lambda lib: lib.istft(lib.ones(9, 5), 16),
        lambda lib: lib.istft(lib.ones(9, 5, dtype=lib.complex64), 16, onesided=False),
        lambda lib: lib.istft(lib.ones(9, 5, dtype=lib.complex64), 16, return_complex=True),
        lambda lib: lib.istft(lib.ones(9, 9, dtype=lib.complex64), 16,
                              window=lib.hann_window(16), center=False),
    ]
    for call in calls:
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(RuntimeError):
            call(ember)


@pytest.mark.skipif(os.environ.get("EMBER_PURE_PYTHON") == "1", reason="already the Python core")
def test_this_file_passes_on_the_pure_python_core():
    rerun_on_pure_python(__file__, "not pure_python and not ember_run")
