"""Complex tensors (issue 32, first slice): the complex64/complex128 dtypes and their promotion,
printing, creation and views (complex, polar, view_as_real/view_as_complex, real/imag, conj),
abs/angle/sgn, and the elementwise, reduction, matmul and shape ops on complex tensors, each
compared with the installed PyTorch: values, result dtypes (float32 inputs never give
complex128), and gradients by PyTorch's convention (the conjugate Wirtinger derivative), the
latter also checked by central differences, independent of PyTorch. Every case runs with the
native core and with EMBER_PURE_PYTHON=1 (a subprocess runs this file again).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import ember
from helpers import rerun_on_pure_python

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(32)


def _cz(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _np(t):
    return t.detach().resolve_conj().numpy() if hasattr(t, "resolve_conj") else t.detach().numpy()


# -- dtypes and promotion ----------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]


@pytest.mark.parametrize("a", DTYPES)
def test_result_type_of_tensors_zero_dim_tensors_and_complex_scalars_matches_pytorch(a):
    for b in DTYPES:
        for m in (ember, torch):
            x, y = m.ones(2, dtype=getattr(m, a)), m.ones((), dtype=getattr(m, b))
            if m is ember:
                got = (ember.result_type(x, y), ember.result_type(x, 1j),
                       ember.result_type(y, 1j), ember.promote_types(x.dtype, y.dtype))
            else:
                want = (torch.result_type(x, y), torch.result_type(x, 1j),
                        torch.result_type(y, 1j), torch.promote_types(x.dtype, y.dtype))
        assert [str(d) for d in got] == [str(d) for d in want], (a, b)


def test_python_complex_numbers_and_arithmetic_keep_the_precision():
    for m in (ember, torch):
        f32, f64 = m.ones(2), m.ones(2, dtype=m.float64)
        got = [m.tensor(1 + 2j).dtype, m.tensor([1, 2j]).dtype, (f32 * 1j).dtype,
               (f64 * 1j).dtype, (m.arange(3) * 1j).dtype, (f32 + m.tensor(1j)).dtype,
               m.tensor([1j], dtype=m.complex128).dtype, (1j - f32).dtype, (f32 / 2j).dtype]
        if m is ember:
            mine = [str(d) for d in got]
        else:
            assert mine == [str(d) for d in got]
    assert mine[:3] == ["torch.complex64"] * 3  # float32 in, complex64 out: no silent upcast


def test_default_dtype_float64_makes_complex128():
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor(1j).dtype is ember.complex128
        assert (ember.ones(2, dtype=ember.float32) * 1j).dtype is ember.complex64
        assert repr(ember.tensor([1j], dtype=ember.complex128)) == "tensor([0.+1.j])"
    finally:
        ember.set_default_dtype(prev)


def test_dtype_flags_finfo_and_complex32_name():
    z = ember.tensor([1 + 2j])
    assert z.is_complex() and ember.is_complex(z) and z.dtype.is_complex
    assert not z.is_floating_point() and not ember.ones(1).is_complex()
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    for name in ("complex64", "complex128"):
        e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        assert (e.eps, e.max, e.tiny, e.bits, e.dtype) == (t.eps, t.max, t.tiny, t.bits, t.dtype)
    with pytest.raises(TypeError, match="torch.complex32"):
        ember.zeros(2, dtype=ember.chalf)
    with pytest.raises(TypeError, match="torch.complex32"):
        ember.complex(ember.ones(2).half(), ember.ones(2).half())


def test_to_and_back_warn_as_pytorch_and_keep_the_real_part():
    x = ember.tensor([1.5, -2.0], requires_grad=True)
    z = x.to(ember.complex64)
    assert z.dtype is ember.complex64 and z.grad_fn is not None
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r = (z * (1 + 1j)).to(ember.float32)
    assert r.tolist() == [1.5, -2.0]
    r.sum().backward()
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's ComplexWarning never reaches the user
        (ember.tensor([1.0], requires_grad=True).to(ember.complex64) * 1j).abs().sum().backward()


# -- printing ----------------------------------------------------------------------------------

PRINTED = [
    lambda m: m.tensor([1 + 2j, 3 - 1j]),
    lambda m: m.tensor([1 + 2j], dtype=m.complex128),
    lambda m: m.tensor(1.5 + 2j),
    lambda m: m.tensor([[1.2345 + 2j, 3 - 1e-5j], [1e5, 0]]),
    lambda m: m.tensor([1e10 + 2j, 1j]),
    lambda m: m.tensor([float("nan") + 1j, float("inf") * 1j, -0.5]),
    lambda m: m.arange(40.0) * (1 + 1j),
    lambda m: m.arange(2000.0).reshape(40, 50) * (0.25 - 1j),
    lambda m: m.tensor([1 + 2j], requires_grad=True),
    lambda m: m.tensor([1 + 2j], requires_grad=True) * 2,
    lambda m: m.zeros(0, dtype=m.complex64),
]


@pytest.mark.parametrize("i", range(len(PRINTED)))
def test_printing_as_pytorch(i):
    assert repr(PRINTED[i](ember)) == repr(PRINTED[i](torch))


# -- creation and views ------------------------------------------------------------------------

def test_views_share_memory_and_have_pytorchs_shapes():
    z = ember.tensor([1 + 2j, 3 - 4j])
    r = ember.view_as_real(z)
    assert r.dtype is ember.float32 and tuple(r.shape) == (2, 2)
    r[0, 1] = 7.0
    assert z.tolist() == [1 + 7j, 3 - 4j]
    z.real.mul_(2)
    z.imag[1] = 0.5
    assert z.tolist() == [2 + 7j, 6 + 0.5j]
    c = ember.view_as_complex(r)
    c[0] = 1j
    assert z.tolist()[0] == 1j and c.dtype is ember.complex64
    z.real = ember.tensor([5.0, 6.0])
    assert z.real.tolist() == [5.0, 6.0]
    zt = ember.tensor(_cz(3, 4)).t()  # a strided complex tensor
    assert np.array_equal(ember.view_as_real(zt).numpy(), torch.view_as_real(
        torch.tensor(zt.numpy())).numpy())


@pytest.mark.parametrize("fn", [
    lambda m: m.view_as_complex(m.ones(2, 3)),
    lambda m: m.view_as_complex(m.ones(2, 2).t()),
    lambda m: m.view_as_complex(m.ones(2, 2).long()),
    lambda m: m.view_as_real(m.ones(2)),
    lambda m: m.ones(2).imag,
    lambda m: m.complex(m.ones(2), m.ones(2).double()),
    lambda m: m.complex(m.ones(2).long(), m.ones(2).long()),
    lambda m: m.sign(m.tensor([1j])),
    lambda m: m.erf(m.tensor([1j])),
    lambda m: m.lgamma(m.tensor([1j])) if m is torch else m.special.gammaln(m.tensor([1j])),
])
def test_refusals_as_pytorch(fn):
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)):
        fn(ember)


def test_conj_is_eager_and_documented_so():
    z = ember.tensor([1 + 2j], requires_grad=True)
    c = z.conj()
    assert c.tolist() == [1 - 2j] and not c.is_conj() and c.resolve_conj() is c
    assert ember.conj_physical(z).tolist() == [1 - 2j] and ember.tensor([1.0]).conj().tolist() == [1.0]
    w = ember.tensor([1 + 2j])
    w.conj_physical_()
    assert w.tolist() == [1 - 2j]
    a = ember.tensor(_cz(2, 3))
    assert np.array_equal(a.mH.numpy(), a.numpy().conj().T) and np.array_equal(
        a.adjoint().numpy(), a.numpy().conj().T) and np.array_equal(a.H.numpy(), a.numpy().conj().T)


# -- the op table: forward, dtype and gradients against PyTorch --------------------------------

A, B, S, M, V, R = _cz(3, 4), _cz(3, 4), _cz(4), _cz(4, 5), _cz(5), RNG.standard_normal((3, 4))
UNARY = ("exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh "
         "tanh asinh acosh atanh sigmoid reciprocal abs angle sgn neg square sinc").split()
CASES = {f"{n}": (lambda m, x, n=n: getattr(m, n)(x), (A,), ()) for n in UNARY}
CASES.update({
    "conj": (lambda m, x: m.conj(x) * 1, (A,), ()),
    "conj_physical": (lambda m, x: m.conj_physical(x), (A,), ()),
    "real": (lambda m, x: x.real * 1, (A,), ()),
    "imag": (lambda m, x: x.imag * 1, (A,), ()),
    "view_as_real": (lambda m, x: m.view_as_real(x) * 1, (A,), ()),
    "view_as_complex": (lambda m, x: m.view_as_complex(x), (R[:, :2].copy(),), (0,)),
    "complex": (lambda m, x, y: m.complex(x, y), (R, 2 * R), (0, 1)),
    "polar": (lambda m, x, y: m.polar(x, y), (R, 2 * R), (0, 1)),
    "rpow": (lambda m, x: 2 ** x, (A,), ()),
    "rdiv": (lambda m, x: 2 / x, (A,), ()),
    "rsub": (lambda m, x: (1 + 1j) - x, (A,), ()),
    "pow_tensor": (lambda m, x, y: x ** y, (A, B), ()),
    "sum": (lambda m, x: x.sum(), (A,), ()),
    "sum_dim": (lambda m, x: x.sum(1), (A,), ()),
    "mean": (lambda m, x: x.mean(0), (A,), ()),
    "prod": (lambda m, x: x.prod(1), (A,), ()),
    "prod_all": (lambda m, x: x.prod(), (A,), ()),
    "cumsum": (lambda m, x: x.cumsum(1), (A,), ()),
    "cumprod": (lambda m, x: x.cumprod(1), (A,), ()),
    "var": (lambda m, x: x.var(), (A,), ()),
    "std_dim": (lambda m, x: x.std(0), (A,), ()),
    "vector_norm": (lambda m, x: m.linalg.vector_norm(x), (A,), ()),
    "logsumexp": (lambda m, x: m.logsumexp(x, 1), (A,), ()),
    "logsumexp_shifted": (lambda m, x: m.logsumexp(x + 300, (0, 1), keepdim=True), (A,), ()),
    "cross": (lambda m, x, y: m.linalg.cross(x, y), (A[:, :3], B[:, :3]), ()),
    "vecdot": (lambda m, x, y: m.linalg.vecdot(x, y), (A, B), ()),
    "cov": (lambda m, x: m.cov(x), (A,), ()),
    "cov_weighted": (lambda m, x: m.cov(x, fweights=m.tensor([1, 2, 1, 3]),
                                        aweights=m.tensor([0.5, 1.0, 0.7, 0.9], dtype=x.real.dtype)),
                     (A,), ()),
    "corrcoef": (lambda m, x: m.corrcoef(x), (A,), ()),
    "norm_1": (lambda m, x: m.linalg.vector_norm(x, 1, dim=1), (A,), ()),
    "matmul": (lambda m, x, y: x @ y, (A, M), ()),
    "mm": (lambda m, x, y: m.mm(x, y), (A, M), ()),
    "mv": (lambda m, x, y: m.mv(x, y), (M, V), ()),
    "bmm": (lambda m, x, y: m.bmm(x, y), (_cz(2, 3, 4), _cz(2, 4, 5)), ()),
    "matmul_batched": (lambda m, x, y: x @ y, (_cz(2, 3, 4), M), ()),
    "einsum": (lambda m, x, y: m.einsum("ij,jk->ik", x, y), (A, M), ()),
    "dot": (lambda m, x, y: m.dot(x, y), (S, _cz(4)), ()),
    "vdot": (lambda m, x, y: m.vdot(x, y), (S, _cz(4)), ()),
    "outer": (lambda m, x, y: m.outer(x, y), (S, V), ()),
    "linear": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), (A, _cz(5, 4), V), ()),
    "cat": (lambda m, x, y: m.cat([x, y]), (A, B), ()),
    "stack": (lambda m, x, y: m.stack([x, y], 1), (A, B), ()),
    "reshape": (lambda m, x: x.reshape(4, 3), (A,), ()),
    "transpose_mH": (lambda m, x: x.mH * 1, (A,), ()),
    "index": (lambda m, x: x[1:, [0, 2]], (A,), ()),
    "where": (lambda m, x, y: m.where(m.tensor([True, False, True, False]), x, y), (A, B), ()),
    "flip_roll": (lambda m, x: x.flip(0).roll(1, 1), (A,), ()),
    "gather": (lambda m, x: x.gather(1, m.tensor([[0, 1], [2, 3], [1, 1]])), (A,), ()),
    "masked_fill": (lambda m, x: x.masked_fill(m.tensor([True, False, True, False]), 0), (A,), ()),
    "pad": (lambda m, x: m.nn.functional.pad(x, (1, 1)), (A,), ()),
    "addcmul": (lambda m, x, y: m.addcmul(x, x, y, value=2), (A, B), ()),
    "lerp": (lambda m, x, y: m.lerp(x, y, 0.3), (A, B), ()),
    "abs_loss": (lambda m, x, y: m.nn.functional.mse_loss(x.abs(), y.abs()), (A, B), ()),
    "modulus_squared": (lambda m, x: (x * x.conj()).real.sum(), (A,), ()),
    "real_to_complex": (lambda m, x: x.to(m.complex64 if x.dtype == m.float32 else m.complex128)
                        * (1 + 2j), (R,), (0,)),
    "unbind_chunk": (lambda m, x: m.unbind(x)[1] * m.chunk(x, 2, 1)[0][0, 0], (A,), ()),
    "index_select_scatter_add": (lambda m, x: m.zeros(3, 4, dtype=x.dtype).scatter_add(
        1, m.tensor([[0, 1, 2, 3]] * 3), x).index_select(1, m.tensor([0, 2])), (A,), ()),
})
for _op in ("add", "sub", "mul", "div", "pow"):
    CASES[_op] = (lambda m, x, y, op=_op: getattr(m, op)(x, y), (A, B), ())
    CASES[_op + "_broadcast"] = (lambda m, x, y, op=_op: getattr(m, op)(x, y), (A, S), ())
    CASES[_op + "_real_other"] = (lambda m, x, y, op=_op: getattr(m, op)(x, y), (A, R), (1,))
    CASES[_op + "_real_first"] = (lambda m, x, y, op=_op: getattr(m, op)(y, x), (A, R), (1,))
    CASES[_op + "_complex_number"] = (lambda m, x, op=_op: getattr(m, op)(x, 1.5 - 2j), (A,), ())
    CASES[_op + "_float_number"] = (lambda m, x, op=_op: getattr(m, op)(x, 1.5), (A,), ())
    CASES[_op + "_real_by_complex_number"] = (
        lambda m, x, op=_op: getattr(m, op)(x, 1.5 - 2j), (R,), (0,))
CASES["softsign"] = (lambda m, x: m.nn.functional.softsign(x), (A,), ())
CASES["tanhshrink"] = (lambda m, x: m.nn.functional.tanhshrink(x), (A,), ())
CASES["rms_norm"] = (lambda m, x: m.nn.functional.rms_norm(x, (4,)), (A,), ())
CASES["rms_norm_weight_eps"] = (lambda m, x, w: m.nn.functional.rms_norm(x, (3, 4), w, 1e-3),
                                (A, B), ())
CASES["ldexp"] = (lambda m, x: m.ldexp(x, m.tensor([[1, 2, 0, 3]])), (A,), ())
CASES["float_power"] = (lambda m, x: m.float_power(x, 2) + m.float_power(x, 0.5 - 1j), (A,), ())
CASES["logcumsumexp"] = (lambda m, x: m.logcumsumexp(x * 3, 1), (A,), ())
CASES["Softsign_Tanhshrink_modules"] = (lambda m, x: m.nn.Tanhshrink()(m.nn.Softsign()(x)),
                                        (A,), ())


def _leaves(m, arrays, real, cdt):
    rdt = {"complex64": "float32", "complex128": "float64"}[cdt]
    return [m.tensor(a.real if i in real else a, dtype=getattr(m, rdt if i in real else cdt),
                     requires_grad=True) for i, a in enumerate(arrays)]


def _cotangent(out):
    g = RNG.standard_normal(tuple(out.shape)) + (1j * RNG.standard_normal(tuple(out.shape))
                                                 if out.is_complex() else 0)
    return g.astype(_np(out).dtype)


@pytest.mark.parametrize("cdt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_pytorch_values_dtypes_and_gradients(name, cdt):
    fn, arrays, real = CASES[name]
    te = _leaves(ember, arrays, real, cdt)
    tt = _leaves(torch, arrays, real, cdt)
    oe, ot = fn(ember, *te), fn(torch, *tt)
    assert str(oe.dtype) == str(ot.dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if cdt == "complex64" else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(oe), _np(ot), **tol)
    g = _cotangent(ot)
    oe.backward(ember.tensor(g))
    ot.backward(torch.tensor(g))
    for a, b in zip(te, tt):
        assert str(a.grad.dtype) == str(b.grad.dtype)
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), **tol)


# -- gradients by central differences, without PyTorch -----------------------------------------

def _check_wirtinger(fn, *arrays):
    """PyTorch's convention: for the real loss L = re(sum(conj(g) * fn(z))), z.grad must be
    dL/dx + i dL/dy (x, y: z's real and imaginary parts), measured by central differences."""
    leaves = [ember.tensor(a, dtype=ember.complex128, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    g = _cotangent(out)
    out.backward(ember.tensor(g))

    def loss(vals):
        with ember.no_grad():
            o = fn(*[ember.tensor(v) for v in vals]).numpy()
        return float(np.real(np.sum(np.conj(g) * o)))

    eps = 1e-6
    for k, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            for unit in (1, 1j):
                up = [v.copy() for v in arrays]
                dn = [v.copy() for v in arrays]
                up[k][idx] += eps * unit
                dn[k][idx] -= eps * unit
                num[idx] += unit * (loss(up) - loss(dn)) / (2 * eps)
        np.testing.assert_allclose(leaves[k].grad.numpy(), num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,n", [
    (lambda z: z * z.exp(), 1), (lambda a, b: a / b, 2), (lambda z: z.abs(), 1),
    (lambda z: z.angle(), 1), (lambda z: z.sgn(), 1), (lambda z: z.conj() * z.sin(), 1),
    (lambda a, b: a @ b, 2), (lambda z: z.sqrt().log(), 1), (lambda z: z.tanh().sigmoid(), 1),
    (lambda z: z.prod(1), 1), (lambda z: ember.vdot(z[0], z[1]), 1),
    (lambda z: ember.view_as_real(z).pow(3).sum(-1), 1),
    (lambda z: ember.polar(z.real.abs() + 0.5, z.imag), 1),  # (r < 0: PyTorch uses sgn(out))
])
def test_gradients_by_central_differences(fn, n):
    arrays = [_cz(2, 2) + 0.1 for _ in range(n)]
    _check_wirtinger(fn, *arrays)


def test_second_order_through_complex_ops():
    for m in (ember, torch):
        z = m.tensor([0.3 + 0.4j, -1 + 0.2j], dtype=m.complex128, requires_grad=True)
        w = m.tensor([1 - 1j, 2 + 0.5j], dtype=m.complex128)
        loss = ((z * w).exp() * z.conj()).abs().sum()
        (g,) = m.autograd.grad(loss, z, create_graph=True)
        (g.abs() ** 2).sum().backward()
        if m is ember:
            mine = (g.detach().numpy(), z.grad.numpy())
    np.testing.assert_allclose(mine[0], g.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(mine[1], z.grad.numpy(), rtol=1e-10)


def test_optimizer_step_descends_on_a_complex_parameter():
    w = ember.nn.Parameter(ember.tensor([1 + 1j, -2 + 0.5j]))
    opt = ember.optim.SGD([w], lr=0.1)
    target = ember.tensor([0.5 - 1j, 1 + 1j])
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = (w - target).abs().pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 * losses[0] and w.dtype is ember.complex64


# -- checkpoints -------------------------------------------------------------------------------

def test_pt_checkpoints_of_complex_tensors_both_ways(tmp_path):
    z = torch.tensor([[1 + 2j, 3 - 4j]])
    torch.save({"z": z, "w": z.to(torch.complex128).t()}, tmp_path / "t.pt")
    for weights_only in (True, False):
        d = ember.load(tmp_path / "t.pt", weights_only=weights_only)
        assert d["z"].dtype is ember.complex64 and d["w"].dtype is ember.complex128
        assert d["z"].tolist() == z.tolist() and d["w"].tolist() == z.t().tolist()
    e = ember.tensor([[1 + 2j], [3 - 4j]], dtype=ember.complex128)
    ember.save({"e": e, "f": e.to(ember.complex64).t()}, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt")
    assert back["e"].dtype == torch.complex128 and back["e"].tolist() == e.tolist()
    assert back["f"].dtype == torch.complex64 and back["f"].tolist() == e.t().tolist()


def test_safetensors_complex64_both_ways_and_complex128_refused_as_the_format_does(tmp_path):
    stt = pytest.importorskip("safetensors.torch")
    from ember.utils import safetensors as est

    stt.save_file({"z": torch.tensor([1 + 2j, 3 - 4j])}, tmp_path / "a.safetensors")
    z = est.load_file(tmp_path / "a.safetensors")["z"]
    assert z.dtype is ember.complex64 and z.tolist() == [1 + 2j, 3 - 4j]
    est.save_file({"z": ember.tensor([[1 + 2j], [3 - 4j]])}, tmp_path / "b.safetensors")
    assert stt.load_file(tmp_path / "b.safetensors")["z"].tolist() == [[1 + 2j], [3 - 4j]]
    with pytest.raises(Exception, match="complex128"):  # no C128 in the format (torch: KeyError)
        est.save_file({"z": ember.tensor([1j], dtype=ember.complex128)}, tmp_path / "c.st")


# -- both cores ---------------------------------------------------------------------------------

@pytest.mark.skipif(os.environ.get("EMBER_PURE_PYTHON") == "1", reason="already the Python core")
def test_this_file_passes_on_the_pure_python_core():
    rerun_on_pure_python(__file__)


def test_inplace_write_into_a_complex_tensor_is_recorded():
    """out[:, :m] = spectral_product (an FNO layer's pattern) carries the gradient, as PyTorch's."""
    got = []
    for m in (ember, torch):
        ec = m.complex(m.tensor([1.0, 2.0]), m.tensor([0.5, -1.0])).requires_grad_()
        out = m.zeros(4, dtype=m.cfloat)
        out[:2] = ec * 2
        assert out.requires_grad
        out.abs().sum().backward()
        got.append(m.view_as_real(ec.grad).numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)


@pytest.mark.parametrize("name,kw", [("Adam", {}), ("AdamW", {"amsgrad": True}),
                                     ("RMSprop", {"centered": True, "momentum": 0.5}),
                                     ("Adagrad", {}), ("Adamax", {}), ("NAdam", {}),
                                     ("SGD", {"momentum": 0.9, "nesterov": True})])
def test_optimizers_step_complex_parameters_as_real_pairs(name, kw):
    """PyTorch updates a complex parameter, its gradient and state as pairs of reals (Adam's
    second moment is re^2 and im^2, not g * g); the state stays complex."""
    out = []
    for m in (ember, torch):
        p = m.nn.Parameter(m.complex(m.tensor([1.0, -2.0, 0.5]), m.tensor([0.3, 0.2, -1.0])))
        c = m.complex(m.tensor([0.1, 0.7, -0.4]), m.tensor([1.1, -0.6, 0.35]))
        opt = getattr(m.optim, name)([p], lr=0.05, **kw)
        for _ in range(5):
            opt.zero_grad()
            (((p - c).abs() ** 2) * m.tensor([1.0, 2.0, 3.0])).sum().backward()
            opt.step()
        assert all(v.dtype == p.dtype for v in opt.state[p].values() if v.dim())
        out.append(m.view_as_real(p.detach()).numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)


# -- gradcheck on complex inputs and outputs ---------------------------------------------------


def _custom_functions(lib):
    """name -> (autograd.Function, whether its backward is right), written for ``lib``."""
    F = lib.autograd.Function

    def make(fwd, bwd, save=True):
        def forward(ctx, z):
            if save:
                ctx.save_for_backward(z)
            return fwd(z)

        def backward(ctx, g):
            return bwd(g, *(ctx.saved_tensors if save else ()))

        return type("Custom", (F,), {"forward": staticmethod(forward),
                                     "backward": staticmethod(backward)})

    sq = lambda z: z * z  # noqa: E731
    abs2 = lambda z: (z * z.conj()).real  # noqa: E731
    r2c = lambda x: x * (1 + 2j)  # noqa: E731
    return {
        # z -> z^2 with the holomorphic derivative 2z, not conjugated: wrong
        "square_unconjugated": (make(sq, lambda g, z: g * 2 * z), False),
        "square": (make(sq, lambda g, z: g * (2 * z).conj()), True),
        # |z|^2 (real output) whose backward drops the imaginary part of z: wrong
        "abs2_real_part_only": (make(abs2, lambda g, z: (g * 2 * z.real).to(z.dtype)), False),
        "abs2": (make(abs2, lambda g, z: g * 2 * z), True),
        # real input, complex output: the gradient is Re(conj(c) g), not Re(c g)
        "real_to_complex_unconjugated": (make(r2c, lambda g: (g * (1 + 2j)).real, False), False),
        "real_to_complex": (make(r2c, lambda g: (g * (1 - 2j)).real, False), True),
    }


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("name", sorted(_custom_functions(ember)))
def test_gradcheck_checks_complex_gradients_as_pytorch(name, fast_mode):
    """gradcheck perturbs real and imaginary parts: a backward that returns the holomorphic
    derivative, or drops an imaginary part, fails on both libraries; a right one passes."""
    results = []
    for lib in (ember, torch):
        fn, right = _custom_functions(lib)[name]
        if name.startswith("real"):
            x = lib.tensor([0.3, -1.2], dtype=lib.float64, requires_grad=True)
        else:
            x = lib.tensor([0.3 + 0.7j, -1.1 + 0.2j, 0.5 - 0.9j], dtype=lib.complex128,
                           requires_grad=True)
        results.append(lib.autograd.gradcheck(fn.apply, (x,), raise_exception=False,
                                              fast_mode=fast_mode))
    assert results == [right, right]


def test_gradcheck_complex_failure_message_and_builtin_ops_pass():
    fn, _ = _custom_functions(ember)["square_unconjugated"]
    z = ember.tensor([0.3 + 0.7j, -1.1 + 0.2j], dtype=ember.complex128, requires_grad=True)
    with pytest.raises(RuntimeError, match="Wirtinger"):  # GradcheckError
        ember.autograd.gradcheck(fn.apply, (z,))
    w = ember.tensor([[0.5 - 0.2j, 1.0 + 0.1j], [0.3j, -0.7 + 0.4j]], dtype=ember.complex128,
                     requires_grad=True)
    for f, args in ((lambda a: a * a.sin(), (z,)), (lambda a: a.abs(), (z,)),
                    (lambda a: a.angle(), (z,)), (lambda a, b: (a @ b, (a * b).real), (w, w)),
                    (lambda a: ember.fft.fft(a), (z,)), (lambda a: ember.linalg.inv(a), (w,))):
        assert ember.autograd.gradcheck(f, args)
        assert ember.autograd.gradcheck(f, args, fast_mode=True)
        assert ember.autograd.gradgradcheck(f, args)


SECOND_ORDER_OPS = {
    "sgn": (lambda L, a, b: a.sgn() * b, 2),
    "cross": (lambda L, a, b: L.linalg.cross(a, b), 2),
    "pow_tensor_exponent": (lambda L, a, b: a ** b, 2),
    "logsumexp": (lambda L, a, b: L.logsumexp(a * b, 1), 2),
    "matmul": (lambda L, a, b: a @ b.mT, 2),
    "matmul_batched_shared": (lambda L, a, b: a[None].expand(2, 2, 3) @ b.mT, 2),
    "abs_angle": (lambda L, a, b: a.abs() * b.angle(), 2),
    "softsign": (lambda L, a, b: L.nn.functional.softsign(a) * b, 2),
    "tanhshrink": (lambda L, a, b: L.nn.functional.tanhshrink(a * b), 2),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER_OPS))
def test_second_order_of_complex_ops_matches_pytorch(name):
    """Gradients of gradients (create_graph) equal PyTorch's, and gradgradcheck passes: the
    products inside a backward are recorded with the complex rule, sgn's |z| is a function of z."""
    fn, n = SECOND_ORDER_OPS[name]
    arrays = [_cz(2, 3) + 0.3 for _ in range(n)]
    results = []
    for lib in (ember, torch):
        xs = [lib.tensor(a, dtype=lib.complex128, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        w = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)) + 0.5j,
                       dtype=out.dtype)
        gs = lib.autograd.grad((out * w).sum().real, xs, create_graph=True)
        sum((g.abs() ** 2).sum() for g in gs).backward()
        results.append([_np(x.grad) for x in xs] + [_np(g) for g in gs])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-8, atol=1e-10)
    xs = [ember.tensor(a, dtype=ember.complex128, requires_grad=True) for a in arrays]
    assert ember.autograd.gradgradcheck(lambda *a: fn(ember, *a), xs)


@pytest.mark.parametrize("cdt", ["complex64", "complex128"])
def test_silu_softsign_tanhshrink_compute_on_complex_as_pytorch(cdt):
    """PyTorch defines these three activations on complex tensors (every other one refuses):
    softsign and tanhshrink as composites (their gradients and node names are the division's and
    the subtraction's, |z|'s gradient 0 at 0), silu forward only (RuntimeError when autograd
    would record it, computed under no_grad or without requires_grad)."""
    z = np.array([1 + 2j, -0.5 + 0.3j, 0j, 3 - 1j, -4 + 0.1j, 25 - 30j])
    tol = dict(rtol=1e-5, atol=1e-6) if cdt == "complex64" else dict(rtol=1e-12, atol=1e-14)
    out = {}
    for lib in (ember, torch):
        F, dt = lib.nn.functional, getattr(lib, cdt)
        x = lib.tensor(z, dtype=dt)
        r = [F.silu(x), F.softsign(x), F.tanhshrink(x), lib.nn.SiLU()(x),
             F.silu(x.clone(), inplace=True), lib.nn.SiLU(inplace=True)(x.clone())]
        xg = lib.tensor(z, dtype=dt, requires_grad=True)
        with lib.no_grad():
            r.append(F.silu(xg))
        with pytest.raises(RuntimeError, match="silu does not support automatic differentiation"):
            F.silu(xg)
        names = []
        for f in (F.softsign, F.tanhshrink):
            y = f(xg)
            names.append(type(y.grad_fn).__name__)
            r.append(lib.autograd.grad((y * (0.3 - 1.1j)).abs().sum(), xg)[0])
        out[lib] = ([str(t.dtype) for t in r], names, [_np(t) for t in r])
    assert out[ember][:2] == out[torch][:2]
    assert out[ember][1] == ["DivBackward0", "SubBackward0"]
    for e, t in zip(out[ember][2], out[torch][2]):
        np.testing.assert_allclose(e, t, **tol)


@pytest.mark.parametrize("cdt", ["complex128", "float64", "int64"])
def test_python_complex_numbers_keep_double_precision_in_arithmetic(cdt):
    """A Python complex is a double-precision number: with a complex128 (or float64, int64)
    tensor it is not rounded to complex64 first (it was: 0.3 became 0.30000001192...), and a
    real tensor times a complex number differentiates to the real part, as PyTorch."""
    c = 0.3 - 1.1j
    out = []
    for lib in (ember, torch):
        x = lib.tensor([1.5, -2.0, 0.25]).to(getattr(lib, cdt))
        r = [x * c, c * x, x + c, c - x, x / c, c / (x + 5), (x + 5) ** c, c ** x,
             lib.add(x, 1j), lib.mul(x, c)]
        g = None
        if cdt == "float64":
            xg = lib.tensor([1.5, -2.0, 0.25], dtype=lib.float64, requires_grad=True)
            g = lib.autograd.grad(((xg * c) ** 2 + c / xg).abs().sum(), xg)[0]
            r.append(g)
        out.append(([str(t.dtype) for t in r], [_np(t) for t in r]))
    assert out[0][0] == out[1][0]
    for e, t in zip(out[0][1], out[1][1]):  # (an int64 tensor's results are complex64)
        tol = (1e-14, 1e-15) if e.dtype.itemsize > 8 or e.dtype == np.float64 else (1e-6, 1e-7)
        np.testing.assert_allclose(e, t, rtol=tol[0], atol=tol[1])


COV_CASES = {  # name -> (data dtype, fweights dtype or None, aweights dtype or None, correction)
    "f64_aw32": ("float64", None, "float32", 1), "f32_aw64": ("float32", None, "float64", 1),
    "f64_fw_aw32": ("float64", "int64", "float32", 2),
    "c64_aw64": ("complex64", None, "float64", 1),
    "c128_aw32": ("complex128", None, "float32", 1), "int_aw64": ("int64", None, "float64", 1),
    "int_fw32": ("int64", "int32", None, 1), "f16_aw32": ("float16", None, "float32", 1),
    "f64_aw32_c0": ("float64", "int64", "float32", 0), "one_row": ("float64", None, "float32", 1),
}


@pytest.mark.parametrize("name", sorted(COV_CASES))
def test_cov_weights_keep_their_dtypes_as_pytorch(name):
    """cov promotes its result with the weights' dtypes and computes the norm in theirs, as
    PyTorch (float32 data with float64 aweights is float64; float64 data with float32 aweights
    normalises by a float32 sum), squeezes a single variable to a 0-d result."""
    xd, fd, ad, corr = COV_CASES[name]
    x = np.array([[1.5, 2, 3, 4, -1], [2, 1, 5, 3, 0.5], [0, 1, -2, 3, 7]])
    x = x[:1] if name == "one_row" else x
    out = []
    for lib in (ember, torch):
        t = lib.tensor(x.astype(np.int64) if xd == "int64" else x).to(getattr(lib, xd))
        t = t * (1 + 0.5j) if t.is_complex() else t
        kw = {} if fd is None else {"fweights": lib.tensor([1, 2, 1, 3, 1], dtype=getattr(lib, fd))}
        if ad is not None:
            kw["aweights"] = lib.tensor([0.5, 1.0, 0.7, 0.9, 0.3], dtype=getattr(lib, ad))
        r = lib.cov(t, correction=corr, **kw)
        out.append((str(r.dtype), tuple(r.shape), r.numpy()))
    assert out[0][:2] == out[1][:2]
    # float32 weights: their sums round differently (NumPy's and PyTorch's summation orders)
    tol = 1e-6 if out[1][2].dtype in (np.float64, np.complex128) else 2e-3
    np.testing.assert_allclose(out[0][2], out[1][2], rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", [
    {"fweights": [1.0, 2, 1, 3]}, {"aweights": [1, 2, 1, 3]}, {"fweights": [[1, 2, 1, 3]]},
    {"fweights": [1, 2, 1]}, {"aweights": [0.5, -1.0, 1, 1]}, {"fweights": [0, 0, 0, 0]},
    {"fweights": [True, True, False, True]},
])
def test_cov_refuses_weights_as_pytorch(kw):
    for lib in (torch, ember):
        args = {k: lib.tensor(v) for k, v in kw.items()}
        with pytest.raises(RuntimeError,
                           match="cov\\(\\): (expected|.*cannot be negative|weights)"):
            lib.cov(lib.tensor([[1.0, 2, 3, 4], [2, 1, 5, 3]]), **args)


def test_isreal_ldexp_and_vander_of_complex_tensors_are_pytorchs():
    """isreal tests the imaginary part (it was True everywhere); ldexp with a negative exponent
    and vander keep complex values (they were cast to float32 / int64)."""
    got, want = ([lib.ldexp(lib.tensor([1 + 1j, 2j]), lib.tensor([-2, 3])),
                  lib.vander(lib.tensor([1 + 2j, 0.5 - 1j]), 3)] for lib in (ember, torch))
    for e, t in zip(got, want):
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    for dt in ("complex64", "complex128"):
        got, want = (lib.isreal(lib.tensor([1 + 0j, 1j, -0.0j, 2 - 1e-30j], dtype=getattr(lib, dt)))
                     for lib in (ember, torch))
        assert got.tolist() == want.tolist() == [True, False, True, False]



def test_complex_logcumsumexp_keeps_imaginary_parts_unwrapped_as_pytorch():
    """PyTorch accumulates complex logcumsumexp pairwise (hi + log1p(exp(lo - hi))), so an
    imaginary part beyond pi is kept, and a -inf start does not turn into nan."""
    v = [-np.inf + 0j, 1 + 1j, 0.5 + 4j, 3 - 5j]
    got, want = (lib.logcumsumexp(lib.tensor(v, dtype=lib.complex128), 0) for lib in (ember, torch))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_logaddexp_of_complex_tensors_as_pytorch():
    """logaddexp on complex: the operand with the larger real part plus log1p(exp(other - it))
    (imaginary parts not wrapped), the same infinity twice gives it back; gradients are the
    conjugate derivatives (checked against torch and by gradcheck)."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(8) + 1j * rng.standard_normal(8)) * 3
    b = (rng.standard_normal(8) + 1j * rng.standard_normal(8)) * 3
    a[0] = b[0] = complex(-np.inf, 0)
    a[1] = complex(np.inf, 1)
    w = np.arange(8) + 1j
    got = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        o = lib.logaddexp(x, y)
        (o[2:] * lib.tensor(w[2:])).sum().real.backward()
        got.append((o.detach().numpy(), x.grad.numpy()[2:], y.grad.numpy()[2:]))
        assert type(o.grad_fn).__name__ == "LogaddexpBackward0"
    for e, t in zip(*got):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)
    x = ember.tensor(a[2:], requires_grad=True)
    y = ember.tensor(b[2:], requires_grad=True)
    assert ember.autograd.gradcheck(ember.logaddexp, (x, y))


def _complex_conv(lib, case, x, w, b, x3, w3):
    """(output, inputs) of one complex convolution case on ``lib``."""
    F = lib.nn.functional
    xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
    x3t, w3t = (lib.tensor(a, requires_grad=True) for a in (x3, w3))
    if case == "conv1d":
        return F.conv1d(xt[:, :, 0], wt[:, :, 0], bt, padding=1), (xt, wt, bt)
    if case == "conv2d":
        return F.conv2d(xt, wt, bt, stride=2, padding=1), (xt, wt, bt)
    if case == "conv2d_groups":
        return F.conv2d(xt, wt[:2, :2], groups=2), (xt, wt)
    if case == "conv_transpose2d":
        return F.conv_transpose2d(xt, wt.transpose(0, 1)[:, :3], None, stride=2), (xt, wt)
    if case == "conv3d":
        return F.conv3d(x3t, w3t, padding=1), (x3t, w3t)
    return F.conv_transpose3d(x3t, w3t.transpose(0, 1)), (x3t, w3t)


@pytest.mark.parametrize("case", ["conv1d", "conv2d", "conv2d_groups", "conv_transpose2d",
                                  "conv3d", "conv_transpose3d"])
def test_complex_convolutions_match_pytorchs_gradients(case):
    """Convolutions are holomorphic in each operand: their gradients are the conjugate rule's
    (ember's real rule had given unconjugated ones); values and gradients against torch."""
    rng = np.random.default_rng(9)

    def c(*shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    arrays = (c(2, 4, 6, 6), c(3, 4, 3, 3), c(3), c(1, 2, 3, 4, 4), c(2, 2, 2, 3, 3))
    got, g = [], None
    for lib in (ember, torch):
        out, ins = _complex_conv(lib, case, *arrays)
        if g is None:
            g = c(*tuple(out.shape))
        (out * lib.tensor(g)).sum().real.backward()
        got.append([out.detach().numpy()] + [t.grad.numpy() for t in ins])
    for e, t in zip(*got):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-10)


def test_complex_conv2d_gradcheck_and_embedding_refusal():
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((1, 2, 4, 4)) + 1j * rng.standard_normal((1, 2, 4, 4)),
                     requires_grad=True)
    w = ember.tensor(rng.standard_normal((2, 2, 3, 3)) + 1j * rng.standard_normal((2, 2, 3, 3)),
                     requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: ember.nn.functional.conv2d(a, b, padding=1),
                                    (x, w))
    # PyTorch records no complex embedding: a weight that requires grad is refused, as there
    for lib in (ember, torch):
        weight = lib.ones(3, 2, dtype=lib.complex64, requires_grad=True)
        with pytest.raises(RuntimeError, match="complex dtype"):
            lib.nn.functional.embedding(lib.tensor([0, 2]), weight)
        with lib.no_grad():
            assert lib.nn.functional.embedding(lib.tensor([0, 2]), weight).shape == (2, 2)


# Complex gradients of ~60 ops against PyTorch's, one random cotangent each (what found the
# unconjugated convolution rule): values and every input's gradient.
_SW = np.random.default_rng(0)


def _swc(*s):
    return _SW.standard_normal(s) + 1j * _SW.standard_normal(s)


A, B, C, v, u = _swc(3, 4), _swc(4, 5), _swc(3, 5), _swc(4), _swc(3)
Bt, Bt2 = _swc(2, 3, 4), _swc(2, 4, 5)
_GRAD_SWEEP = {
 "addmm": (lambda m, a, b, cc: m.addmm(cc, a, b, beta=0.5, alpha=2), (A, B, C)),
 "addmv": (lambda m, a, x, y: m.addmv(y, a, x), (A, v, u)),
 "addr": (lambda m, x, y, a: m.addr(a, x, y), (u, v, A)),
 "baddbmm": (lambda m, x, y: m.baddbmm(m.zeros(2,3,5, dtype=x.dtype), x, y), (Bt, Bt2)),
 "bmm": (lambda m, x, y: m.bmm(x, y), (Bt, Bt2)),
 "matmul_batched": (lambda m, x, y: x @ y, (Bt, B)),
 "mv": (lambda m, a, x: m.mv(a, x), (A, v)),
 "dot": (lambda m, x, y: m.dot(x, y), (v, v[::-1].copy())),
 "vdot": (lambda m, x, y: m.vdot(x, y), (v, v[::-1].copy())),
 "outer": (lambda m, x, y: m.outer(x, y), (u, v)),
 "inner": (lambda m, x, y: m.inner(x, y), (A, A)),
 "tensordot": (lambda m, x, y: m.tensordot(x, y, dims=1), (A, B)),
 "einsum": (lambda m, x, y: m.einsum("ij,jk->ik", x, y), (A, B)),
 "kron": (lambda m, x, y: m.kron(x, y), (A, A)),
 "trace": (lambda m, x: m.trace(x), (_swc(4,4),)),
 "diag": (lambda m, x: m.diag(x), (_swc(4,4),)),
 "cumsum": (lambda m, x: m.cumsum(x, 0), (A,)),
 "cumprod": (lambda m, x: m.cumprod(x, 1), (A,)),
 "prod": (lambda m, x: m.prod(x, 1), (A,)),
 "linear_bias": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), (A, _swc(5,4), _swc(5))),
 "conv1d_F_pad": (lambda m, x: m.nn.functional.pad(x, (1, 2)), (A,)),
 "unfold": (lambda m, x: m.nn.functional.unfold(x, 2), (_swc(1,2,4,4),)),
 "fold": (lambda m, x: m.nn.functional.fold(x, (3, 3), 2), (_swc(1, 8, 4),)),
 "pixel_shuffle": (lambda m, x: m.nn.functional.pixel_shuffle(x, 2), (_swc(1,4,2,2),)),
 "chain_matmul": (lambda m, x, y, z: m.linalg.multi_dot([x, y, z]), (A, B, _swc(5,2))),
 "matrix_power": (lambda m, x: m.linalg.matrix_power(x, 3), (_swc(3,3),)),
 "var": (lambda m, x: m.var(x, 0), (A,)),
 "norm": (lambda m, x: m.linalg.norm(x), (A,)),
 "vector_norm3": (lambda m, x: m.linalg.vector_norm(x, 3), (A,)),
 "matrix_norm_fro": (lambda m, x: m.linalg.matrix_norm(x), (A,)),
 "normalize": (lambda m, x: m.nn.functional.normalize(x, dim=1), (A,)),
 "cosine_emb_sum": (lambda m, x: (x * x.conj()).real.sum(), (A,)),
 "scatter_add": (lambda m, x, y: m.zeros(3, 4, dtype=x.dtype).scatter_add(0, m.tensor([[0,1,2,0]]*3), y), (A, A)),
 "index_add": (lambda m, x, y: x.index_add(0, m.tensor([0, 2]), y), (A, _swc(2,4))),
 "masked_scatter": (lambda m, x, y: x.masked_scatter(m.tensor([[True, False]*2]*3), y), (A, _swc(12))),
 "roll_flip": (lambda m, x: m.flip(m.roll(x, 1, 0), [1]), (A,)),
 "gather": (lambda m, x: m.gather(x, 1, m.tensor([[0, 3]]*3)), (A,)),
 "take_along": (lambda m, x: m.take_along_dim(x, m.tensor([[0, 3]]*3), 1), (A,)),
 "std": (lambda m, x: m.std(x), (A,)),
 "mean": (lambda m, x: m.mean(x, 1), (A,)),
 "sum_sq": (lambda m, x: (x ** 2).sum(), (A,)),
 "pow_tensor": (lambda m, x, y: x ** y, (A, A)),
 "div": (lambda m, x, y: x / y, (A, A)),
 "reciprocal": (lambda m, x: x.reciprocal(), (A,)),
 "rsqrt": (lambda m, x: x.rsqrt(), (A,)),
 "sinc": (lambda m, x: m.sinc(x), (A,)),
 "angle": (lambda m, x: x.angle(), (A,)),
 "polar_abs": (lambda m, x: m.polar(x.abs(), x.angle()), (A,)),
 "lerp": (lambda m, x, y: m.lerp(x, y, 0.3), (A, A)),
 "addcmul": (lambda m, x, y, z: m.addcmul(x, y, z, value=0.5), (A, A, A)),
 "addcdiv": (lambda m, x, y, z: m.addcdiv(x, y, z, value=0.5), (A, A, A)),
 "fft_mix": (lambda m, x: m.fft.ifft(m.fft.fft(x) * 2), (A,)),
 "softmax_real": (lambda m, x: m.softmax(x.real, 0) * x, (A,)),
 "where": (lambda m, x, y: m.where(m.tensor([[True, False, True, False]]*3), x, y), (A, A)),
 "expand_sum": (lambda m, x: x[:, None].expand(3, 2, 4).sum(1), (A,)),
 "sdpa_like": (lambda m, q, k: (q @ k.mT) @ q, (A, A)),
 "cholesky_solve_dummy": (lambda m, x: m.linalg.det(x @ x.mT.conj() + m.eye(3)), (A,)),
}

A2, S2, V2 = _swc(3, 4), _swc(4, 4), _swc(6)
_GRAD_SWEEP.update({
 "index_put": (lambda m, x, y: x.index_put((m.tensor([0, 2]),), y), (A2, _swc(2,4))),
 "index_put_acc": (lambda m, x, y: x.index_put((m.tensor([0, 0]),), y, accumulate=True), (A2, _swc(2,4))),
 "setitem": (lambda m, x, y: (lambda z: (z.__setitem__((slice(0,2),), y), z)[1])(x * 1), (A2, _swc(2,4))),
 "put": (lambda m, x, y: x.put(m.tensor([0, 5]), y), (A2, _swc(2))),
 "masked_fill_tensor": (lambda m, x, y: x.masked_fill(m.tensor([[True, False, True, False]]*3), y), (A2, _swc(1)[0:1].reshape(()))),
 "diag_embed": (lambda m, x: m.diag_embed(x), (A2,)),
 "tril_triu": (lambda m, x: m.tril(x) + m.triu(x, 1) * 2, (S2,)),
 "diagonal": (lambda m, x: m.diagonal(x, 1), (S2,)),
 "repeat_tile": (lambda m, x: x.repeat(2, 1) + m.tile(x, (2, 1)), (A2,)),
 "cat_stack": (lambda m, x, y: m.cat([x, y]) @ m.stack([x, y], 1).reshape(8, 3)[:4], (A2, A2)),
 "split_chunk": (lambda m, x: m.split(x, 2, 1)[1] * x.chunk(2, 0)[0][:2, :2].sum(), (A2,)),
 "narrow_unfold": (lambda m, x: x.narrow(1, 1, 2).sum() * x.unfold(1, 2, 1), (A2,)),
 "movedim": (lambda m, x: m.movedim(x.reshape(3, 2, 2), 0, -1), (A2,)),
 "sum_dims": (lambda m, x: x.reshape(3, 2, 2).sum((0, 2)), (A2,)),
 "mean_keep": (lambda m, x: x.mean(1, keepdim=True) * x, (A2,)),
 "prod_all": (lambda m, x: x.prod(), (A2,)),
 "var_corr": (lambda m, x: m.var(x, 1, correction=0), (A2,)),
 "std_mean": (lambda m, x: m.std_mean(x, 0)[0] + m.std_mean(x, 0)[1].abs(), (A2,)),
 "cumsum_flip": (lambda m, x: m.cumsum(x.flip(1), 1), (A2,)),
 "norm_p1": (lambda m, x: m.linalg.vector_norm(x, 1), (A2,)),
 "norm_inf": (lambda m, x: m.linalg.vector_norm(x, float("inf")), (A2,)),
 "matrix_norm_nuc": (lambda m, x: m.linalg.matrix_norm(x, "nuc"), (S2,)),
 "matrix_norm_2": (lambda m, x: m.linalg.matrix_norm(x, 2), (S2,)),
 "cond": (lambda m, x: m.linalg.cond(x), (S2,)),
 "det_inv": (lambda m, x: m.linalg.det(m.linalg.inv(x)), (S2,)),
 "fft2": (lambda m, x: m.fft.fft2(x), (A2,)),
 "ifftn": (lambda m, x: m.fft.ifftn(x, norm="ortho"), (A2,)),
 "fftshift": (lambda m, x: m.fft.fftshift(m.fft.fft(x)), (V2,)),
 "hfft": (lambda m, x: m.fft.hfft(x), (V2,)),
 "irfft": (lambda m, x: m.fft.irfft(x, 10), (V2,)),
 "view_as_real": (lambda m, x: m.view_as_real(x) * 2, (A2,)),
 "real_imag": (lambda m, x: x.real * x.imag, (A2,)),
 "conj_mul": (lambda m, x: x.conj() * x, (A2,)),
 "abs_angle": (lambda m, x: x.abs() + x.angle(), (A2,)),
 "exp_log": (lambda m, x: m.log(m.exp(x) + 1), (A2,)),
 "trig": (lambda m, x: m.sin(x) * m.cos(x) + m.tan(x * 0.1), (A2,)),
 "hyper": (lambda m, x: m.tanh(x) + m.sinh(x) * m.cosh(x * 0.5), (A2,)),
 "inv_trig": (lambda m, x: m.asin(x * 0.3) + m.acos(x * 0.2) + m.atan(x * 0.4), (A2,)),
 "sqrt_rsqrt": (lambda m, x: m.sqrt(x) + m.rsqrt(x), (A2,)),
 "pow_scalar": (lambda m, x: x ** 2.5 + x ** (1 + 1j), (A2,)),
 "rpow": (lambda m, x: (1.5 + 0.5j) ** x, (A2,)),
 "sigmoid": (lambda m, x: m.sigmoid(x), (A2,)),
 "einsum_batch": (lambda m, x, y: m.einsum("bij,bjk->bik", x, y), (_swc(2,3,4), _swc(2,4,2))),
 "matmul_vec": (lambda m, x, y: x @ y, (A2, _swc(4))),
 "tensordot2": (lambda m, x, y: m.tensordot(x, y, dims=([1], [0])), (A2, _swc(4, 3))),
 "roll": (lambda m, x: m.roll(x, (1, 2), (0, 1)), (A2,)),
 "expand_as": (lambda m, x, y: x[:1].expand_as(y) * y, (A2, A2)),
 "where_scalar": (lambda m, x: m.where(x.real > 0, x, 0.5j), (A2,)),
 "sgn": (lambda m, x: m.sgn(x), (A2,)),
 "polar": (lambda m, r, t: m.polar(r.real.abs(), t.real), (A2, A2)),
 "complex_fn": (lambda m, r, t: m.complex(r.real, t.imag), (A2, A2)),
 "stft": (lambda m, x: m.stft(x.real, 4, return_complex=True, window=m.hann_window(4, dtype=m.float64)), (_swc(16),)),
 "index_select": (lambda m, x: m.index_select(x, 1, m.tensor([3, 0])), (A2,)),
 "take": (lambda m, x: m.take(x, m.tensor([0, 7, 11])), (A2,)),
 "cummax_abs": (lambda m, x: m.cumsum(x, 0) * m.cumprod(x, 0), (A2,)),
 "logsumexp": (lambda m, x: m.logsumexp(x, 1), (A2,)),
 "linalg_solve": (lambda m, a, b: m.linalg.solve(a, b), (S2, _swc(4, 2))),
 "pinv": (lambda m, a: m.linalg.pinv(a), (A2,)),
 "svdvals": (lambda m, a: m.linalg.svdvals(a), (A2,)),
 "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a + a.mH), (S2,)),
 "qr": (lambda m, a: m.linalg.qr(a)[1], (A2.T.copy(),)),
})


@pytest.mark.parametrize("name", sorted(_GRAD_SWEEP))
def test_complex_gradients_sweep_against_pytorch(name):
    f, arrays = _GRAD_SWEEP[name]
    got = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        o = f(lib, *ts)
        g = np.random.default_rng(3).standard_normal(tuple(o.shape)) \
            + 1j * np.random.default_rng(4).standard_normal(tuple(o.shape))
        if o.is_complex():
            (o * lib.tensor(g)).sum().real.backward()
        else:
            (o * lib.tensor(g.real)).sum().backward()
        got.append([o.detach().resolve_conj().numpy()] + [
            None if t.grad is None else t.grad.resolve_conj().numpy() for t in ts])
    for e, t in zip(*got):
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_allclose(e, t, rtol=1e-8, atol=1e-8)


def test_complex_bilinear_refuses_autograd_as_pytorch():
    for lib in (ember, torch):
        x, y = lib.ones(3, 4, dtype=lib.complex64), lib.ones(3, 2, dtype=lib.complex64)
        w = lib.ones(5, 4, 2, dtype=lib.complex64)
        assert tuple(lib.nn.functional.bilinear(x, y, w).shape) == (3, 5)
        with pytest.raises(RuntimeError, match="complex dtype"):
            lib.nn.functional.bilinear(x.requires_grad_(), y, w)


def test_complex_nan_to_num_as_pytorch():
    """Each part replaced (NaN -> nan, +-inf -> the real dtype's extremes or the given values);
    PyTorch records no gradient for it (refused when the input requires grad)."""
    vals = [complex("nan+1j"), complex("inf+nanj"), complex("-inf-infj"), 2 - 3j]
    for dt in ("complex64", "complex128"):
        for kw in ({}, {"nan": 2.0, "posinf": 5.0, "neginf": -5.0}):
            got = ember.nan_to_num(ember.tensor(vals, dtype=getattr(ember, dt)), **kw)
            want = torch.nan_to_num(torch.tensor(vals, dtype=getattr(torch, dt)), **kw)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="complex dtype"):
            lib.nan_to_num(lib.tensor(vals, requires_grad=True))
