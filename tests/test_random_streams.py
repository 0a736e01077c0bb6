"""PyTorch's CPU random streams: after the same seed, ember draws PyTorch's numbers.

Each test runs the same draw on ember and on the installed PyTorch and compares values (bit for
bit; the float32 Box-Muller too) and the generator's state after the call (so the stream
position is right for the next draw).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader

torch = pytest.importorskip("torch")

SEEDS = (0, 1, 42, 2**40 + 7)
SIZES = (0, 1, 15, 16, 17, 1000)
FLOATS = ("float32", "float64", "float16", "bfloat16")


def _np(t):
    t = t.detach()
    if t.dtype == torch.bfloat16 or str(getattr(t, "dtype", "")) == "ember.bfloat16":
        t = t.float()
    return np.asarray(t.numpy())


def _same_state():
    assert np.array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())


def _check(fn, seed, *, exact=True):
    """fn(m) on both libraries after manual_seed(seed); same values, same state after."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    a, b = fn(ember), fn(torch)
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    for x, y in zip(a, b):
        assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
        assert tuple(x.shape) == tuple(y.shape)
        if exact:
            np.testing.assert_array_equal(_np(x), _np(y))
        else:
            # 4 float32 ulps of the value, or of the standard normal scaled by std (cancellation
            # near zero after a mean is added)
            np.testing.assert_allclose(_np(x), _np(y), rtol=4 * 2.0**-23, atol=4 * 2.0**-22)
    _same_state()


@pytest.mark.parametrize("seed", SEEDS)
def test_state_bytes_after_seed(seed):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    _same_state()
    assert ember.initial_seed() == torch.initial_seed() == seed


def test_new_generator_and_negative_seed():
    g, h = ember.Generator(), torch.Generator()
    assert g.initial_seed() == h.initial_seed()
    np.testing.assert_array_equal(g.get_state().numpy(), h.get_state().numpy())
    np.testing.assert_array_equal(_np(ember.rand(7, generator=g)), _np(torch.rand(7, generator=h)))
    assert ember.manual_seed(-1).initial_seed() == torch.manual_seed(-1).initial_seed()
    np.testing.assert_array_equal(_np(ember.rand(3)), _np(torch.rand(3)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_randn(seed, n, dtype):
    _check(lambda m: m.rand(n, dtype=getattr(m, dtype)), seed)
    _check(lambda m: m.randn(n, dtype=getattr(m, dtype)), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_randn_large(seed):
    """The NumPy path (kernels off): bit for bit up to EXACT_NORMALS, past it NumPy's float32
    transcendentals within 4 ulps (the documented tolerance)."""
    from ember.ops._mt19937 import EXACT_NORMALS

    with _kernels_loader.disabled():
        _check(lambda m: m.randn(EXACT_NORMALS - 5), seed)  # bit for bit up to EXACT_NORMALS
        _check(lambda m: m.randn(64, 33, dtype=m.float64), seed)
        _check(lambda m: m.empty(EXACT_NORMALS + 16).normal_(0.5, 2.0), seed, exact=False)
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        a, b = _np(ember.randn(EXACT_NORMALS + 17)), _np(torch.randn(EXACT_NORMALS + 17))
    ulps = np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))
    assert ulps.max() <= 4 and (ulps == 0).mean() > 0.8
    np.testing.assert_array_equal(_np(ember.rand(5)), _np(torch.rand(5)))  # same position after
    a, b = _np(ember.randn(EXACT_NORMALS + 16, dtype=ember.float64)), _np(
        torch.randn(EXACT_NORMALS + 16, dtype=torch.float64))
    np.testing.assert_allclose(a, b, rtol=1e-15, atol=1e-15)
    _same_state()


@pytest.mark.skipif(_kernels_loader.active is None, reason="eager kernels not built")
@pytest.mark.parametrize("seed", (0, 2**40 + 7))
def test_randn_large_is_pytorchs_bit_for_bit_with_the_kernel(seed):
    """The Box-Muller kernel (ember/_kernels.c box_muller16): PyTorch's float32 and float64
    normals at every size (float64: the C library's log/cos/sin, as PyTorch's), mean/std by one
    fma as PyTorch's, the same at 1 and 2 threads."""
    from ember.ops._mt19937 import EXACT_NORMALS

    _check(lambda m: m.randn(EXACT_NORMALS + 17), seed)
    _check(lambda m: m.empty(3_000_017).normal_(0.5, 0.02), seed)
    _check(lambda m: m.randn(8, 3, 224, 224), seed)
    _check(lambda m: m.randn(EXACT_NORMALS + 17, dtype=m.float64), seed)
    _check(lambda m: m.empty(1_000_003, dtype=m.float64).normal_(-3.0, 7.5), seed)
    before = ember.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            ember.set_num_threads(n)
            ember.manual_seed(seed)
            outs.append(_np(ember.randn(1 << 22)))
            outs.append(_np(ember.randn(1 << 20, dtype=ember.float64)))
    finally:
        ember.set_num_threads(before)
    assert outs[0].tobytes() == outs[2].tobytes() and outs[1].tobytes() == outs[3].tobytes()


@pytest.mark.parametrize("seed", (0, 7))
def test_interleaved_calls_and_normal_cache(seed):
    def fn(m):
        return (m.randn(3), m.rand(2), m.randn(5, dtype=m.float64), m.randn(17), m.randn(1),
                m.randint(0, 5, (4,)), m.randn(2, 3))
    _check(fn, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_randint_ranges_and_dtypes(seed):
    _check(lambda m: m.randint(10, (1000,)), seed)
    _check(lambda m: m.randint(-5, 5, (17,)), seed)
    _check(lambda m: m.randint(0, 2**33, (16,)), seed)
    _check(lambda m: m.randint(-2**63, 2**63 - 1, (16,)), seed)
    for dt in ("int8", "uint8", "int16", "int32", "bool", "float32", "float16", "float64"):
        hi = 2 if dt == "bool" else 100
        _check(lambda m, hi=hi, dt=dt: m.randint(0, hi, (15,), dtype=getattr(m, dt)), seed)
    _check(lambda m: m.randint_like(m.zeros(4, 5), 3, 9), seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", ("int64", "int32", "int16", "int8", "uint8", "bool", "float32",
                                "float64", "float16", "bfloat16"))
def test_random_(seed, dt):
    _check(lambda m: m.empty(33, dtype=getattr(m, dt)).random_(), seed)
    if dt != "bool":
        _check(lambda m: m.empty(5, dtype=getattr(m, dt)).random_(3, 50), seed)
        _check(lambda m: m.empty(5, dtype=getattr(m, dt)).random_(40), seed)
        _check(lambda m: m.empty(5, dtype=getattr(m, dt)).random_(7, None), seed)
    if dt == "int64":
        _check(lambda m: m.empty(5, dtype=m.int64).random_(-2**63, None), seed)
        _check(lambda m: m.empty(5, dtype=m.int64).random_(-2**40, 2**50), seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", (0, 1, 2, 10, 1000, 20000))
def test_randperm(seed, n):
    _check(lambda m: m.randperm(n), seed)
    _check(lambda m: m.randperm(n, dtype=m.float32), seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_bounds(seed, dtype):
    for a, b in ((-1.3, 2.7), (0.1, 0.7), (-1.25, 2.5), (5.0, 5.0)):
        _check(lambda m, a=a, b=b: m.empty(2000, dtype=getattr(m, dtype)).uniform_(a, b), seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_(seed, n, dtype):
    _check(lambda m: m.empty(n, dtype=getattr(m, dtype)).normal_(0.3, 1.7), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_normal_overloads(seed):
    def mean(m):
        return m.arange(20.0)

    def std(m):
        return m.tensor(np.linspace(0.5, 2.0, 20, dtype=np.float32))

    _check(lambda m: m.normal(mean(m), std(m)), seed)
    _check(lambda m: m.normal(mean(m), 2.0), seed)
    _check(lambda m: m.normal(1.0, std(m)), seed)
    _check(lambda m: m.normal(mean(m)[:5], std(m)[:5]), seed)
    _check(lambda m: m.normal(1.0, 2.0, (3, 7)), seed)
    _check(lambda m: m.normal(1.0, 2.0, (20,), dtype=m.float64), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_non_contiguous_outputs(seed):
    _check(lambda m: m.empty(5, 8).t().uniform_(), seed)
    _check(lambda m: m.empty(6, 8).t().normal_(), seed)  # strided: the scalar path
    _check(lambda m: m.empty(4, 6, 3).permute(2, 0, 1).random_(0, 100), seed)
    _check(lambda m: m.empty(10, 4)[:, 1:3].bernoulli_(0.4), seed)
    _check(lambda m: m.randn_like(m.empty(8, 5).t()), seed)
    _check(lambda m: m.rand_like(m.empty(8, 5).t()), seed)
    _check(lambda m: m.randint_like(m.empty(8, 5).t(), 10), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_like_functions(seed):
    _check(lambda m: m.rand_like(m.zeros(3, 9)), seed)
    _check(lambda m: m.randn_like(m.zeros(3, 9)), seed)
    _check(lambda m: m.randn_like(m.zeros(2, 3, dtype=m.float64)), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_bernoulli(seed):
    _check(lambda m: m.empty(1000).bernoulli_(0.37), seed)
    _check(lambda m: m.empty(100, dtype=m.int64).bernoulli_(0.5), seed)
    _check(lambda m: m.bernoulli(m.full((1000,), 0.3)), seed)
    _check(lambda m: m.bernoulli(m.tensor(np.linspace(0, 1, 17))), seed)
    _check(lambda m: m.bernoulli(m.full((9,), 0.3, dtype=m.float16)), seed)
    _check(lambda m: m.bernoulli(m.zeros(50), 0.25), seed)
    _check(lambda m: m.zeros(4, 6).bernoulli_(m.tensor(np.linspace(0, 1, 6, dtype=np.float32))), seed)
    _check(lambda m: m.zeros(40).bernoulli_(m.full((40,), 0.5, dtype=m.float64)), seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_other_distributions(seed, dtype):
    def e(m, n=1000):
        return m.empty(n, dtype=getattr(m, dtype))

    _check(lambda m: e(m).exponential_(2.5), seed)
    _check(lambda m: e(m).geometric_(0.3), seed)
    _check(lambda m: e(m).cauchy_(0.5, 3.0), seed)
    _check(lambda m: e(m).log_normal_(1.0, 2.0), seed)
    _check(lambda m: e(m, 7).log_normal_(), seed)
    _check(lambda m: (e(m, 3).log_normal_(), m.randn(3)), seed)  # the shared normal cache


@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial(seed):
    p = [0.1, 0.2, 0.0, 0.3, 0.4]
    _check(lambda m: m.multinomial(m.tensor(p), 20, replacement=True), seed)
    _check(lambda m: m.multinomial(m.tensor(p), 3), seed)
    _check(lambda m: m.multinomial(m.tensor(p), 1), seed)
    _check(lambda m: m.multinomial(m.tensor(p), 1, True), seed)
    _check(lambda m: m.multinomial(m.rand(4, 30), 7), seed)
    _check(lambda m: m.multinomial(m.rand(4, 30, dtype=m.float64), 9, True), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_poisson(seed):
    rates = [0.5, 3.0, 0.0, 12.0, 100.0, 2.5, 1e4, 9.99, 10.0]
    _check(lambda m: m.poisson(m.tensor(rates * 20)), seed)
    _check(lambda m: m.poisson(m.tensor(rates, dtype=m.float64).reshape(3, 3)), seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_objects_leave_default_alone(seed):
    g, h = ember.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    ember.manual_seed(99)
    torch.manual_seed(99)
    np.testing.assert_array_equal(_np(ember.randn(40, generator=g)),
                                  _np(torch.randn(40, generator=h)))
    np.testing.assert_array_equal(_np(ember.randperm(30, generator=g)),
                                  _np(torch.randperm(30, generator=h)))
    np.testing.assert_array_equal(_np(ember.empty(9).normal_(generator=g)),
                                  _np(torch.empty(9).normal_(generator=h)))
    np.testing.assert_array_equal(g.get_state().numpy(), h.get_state().numpy())
    _same_state()  # the default generators did not move


@pytest.mark.parametrize("seed", SEEDS)
def test_state_round_trips_both_ways(seed):
    torch.manual_seed(seed)
    torch.randn(5)  # a cached normal in the state
    torch.rand(700)  # past one twist
    st = torch.get_rng_state()
    ember.set_rng_state(ember.tensor(st.numpy()))
    _same_state()
    np.testing.assert_array_equal(_np(ember.randn(3)), _np(torch.randn(3)))
    np.testing.assert_array_equal(_np(ember.rand(20)), _np(torch.rand(20)))
    ember.manual_seed(seed + 1)
    ember.randn(1)
    ember.rand(623)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy()))
    np.testing.assert_array_equal(_np(ember.randn(7)), _np(torch.randn(7)))
    g = ember.Generator().manual_seed(seed)
    h = torch.Generator()
    h.set_state(torch.from_numpy(g.get_state().numpy()))
    np.testing.assert_array_equal(_np(ember.rand(4, generator=g)), _np(torch.rand(4, generator=h)))


def test_state_errors():
    with pytest.raises(RuntimeError, match="5056"):
        ember.set_rng_state(ember.zeros(10, dtype=ember.uint8))
    with pytest.raises(TypeError):
        ember.set_rng_state(ember.zeros(5056))
    st = ember.get_rng_state()
    st[8:12] = 0  # left = 0
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        ember.set_rng_state(st)


def test_fork_rng():
    ember.manual_seed(3)
    torch.manual_seed(3)
    with ember.random.fork_rng():
        ember.rand(10)
    with torch.random.fork_rng():
        torch.rand(10)
    np.testing.assert_array_equal(_np(ember.rand(5)), _np(torch.rand(5)))
    _same_state()


def test_in_place_on_a_leaf_does_not_draw():
    ember.manual_seed(0)
    before = ember.get_rng_state()
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        w.normal_()
    assert ember.equal(before, ember.get_rng_state())


def test_reused_bit_generators_start_fresh():
    """Generators reuse collected ones' bit generators (an epoch's RandomSampler makes one): a
    new Generator still starts at the default seed's stream, its state bytes PyTorch's."""
    import gc

    used = ember.Generator().manual_seed(5)
    ember.rand(100, generator=used)
    del used
    gc.collect()
    g, h = ember.Generator(), torch.Generator()
    np.testing.assert_array_equal(g.get_state().numpy(), h.get_state().numpy())
    np.testing.assert_array_equal(_np(ember.randn(9, generator=g)), _np(torch.randn(9, generator=h)))


@pytest.mark.parametrize("seed", (0, 7, 2**32 - 1, 2**32 + 3, 2**64 - 1))
def test_fast_seeding_is_init_genrand(seed):
    from ember.ops import _mt19937

    a, b = np.random.MT19937(0), np.random.MT19937(0)
    _mt19937.seed_words(a, seed)
    _mt19937.set_key(b, _mt19937.seeded_key(seed), _mt19937.N)
    np.testing.assert_array_equal(a.state["state"]["key"], b.state["state"]["key"])
    assert a.state["state"]["pos"] == b.state["state"]["pos"] == _mt19937.N
    np.testing.assert_array_equal(a.random_raw(700), b.random_raw(700))


@pytest.mark.parametrize("seed", SEEDS)
def test_int64_draw_is_a_0d_random_(seed):
    """The samplers' epoch seed: int(empty((), dtype=int64).random_()), drawn without a tensor."""
    from ember.ops.random import int64_draw

    g = ember.Generator().manual_seed(seed)
    h = torch.Generator().manual_seed(seed)
    for _ in range(3):
        assert int64_draw(g) == int(torch.empty((), dtype=torch.int64).random_(generator=h))
    ember.manual_seed(seed)
    first = int64_draw()
    ember.manual_seed(seed)
    assert first == int(ember.empty((), dtype=ember.int64).random_())
