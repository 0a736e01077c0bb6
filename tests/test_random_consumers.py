"""The consumers of the random stream draw PyTorch's numbers: after the same ``manual_seed``,
``nn.init`` and the layers' initial weights, dropout, RReLU, gumbel_softmax, the samplers and
``DataLoader`` shuffling, ``random_split``, the distributions' samples and the vision transforms
are PyTorch's, and the generator's state after each call is PyTorch's (so the next draw is too).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SEEDS = (0, 3, 42)


def _np(t):
    if isinstance(t, (list, tuple, int, float)):
        return np.asarray(t)
    t = t.detach()
    if "bfloat16" in str(t.dtype):
        t = t.float()
    return np.asarray(t.numpy())


def _same_state():
    assert np.array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())


def _check(fn, seed, *, atol=0.0, rtol=0.0):
    """fn(m) on both libraries after manual_seed(seed): the same values (a list of results, each
    a tensor, list or number), dtypes and shapes, and the same generator state after."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    a, b = fn(ember), fn(torch)
    a = a if isinstance(a, list) else [a]
    b = b if isinstance(b, list) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if hasattr(y, "dtype") and hasattr(x, "dtype"):
            assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
        x, y = _np(x), _np(y)
        assert x.shape == y.shape
        if atol or rtol:
            np.testing.assert_allclose(x, y, atol=atol, rtol=rtol)
        else:
            np.testing.assert_array_equal(x, y)
    _same_state()


def _params(m):
    return list(m.parameters()) + list(m.buffers())


# ---------------------------------------------------------------------------------------------
# nn.init and the layers' initial weights

LAYERS = {
    "Linear": lambda t: t.nn.Linear(5, 7),
    "Linear_nobias": lambda t: t.nn.Linear(5, 7, bias=False),
    "Conv1d": lambda t: t.nn.Conv1d(3, 4, 3),
    "Conv2d": lambda t: t.nn.Conv2d(4, 8, 3, groups=2),
    "Conv3d": lambda t: t.nn.Conv3d(2, 3, 2),
    "ConvTranspose2d": lambda t: t.nn.ConvTranspose2d(3, 5, 3),
    "Embedding": lambda t: t.nn.Embedding(10, 4, padding_idx=1),
    "EmbeddingBag": lambda t: t.nn.EmbeddingBag(10, 4),
    "LSTM": lambda t: t.nn.LSTM(3, 5, num_layers=2, bidirectional=True),
    "LSTM_proj": lambda t: t.nn.LSTM(3, 5, proj_size=2),
    "GRU": lambda t: t.nn.GRU(3, 5),
    "RNN": lambda t: t.nn.RNN(3, 5, bias=False),
    "LSTMCell": lambda t: t.nn.LSTMCell(3, 5),
    "GRUCell": lambda t: t.nn.GRUCell(3, 5),
    "LayerNorm": lambda t: t.nn.LayerNorm(5),
    "BatchNorm2d": lambda t: t.nn.BatchNorm2d(5),
    "MultiheadAttention": lambda t: t.nn.MultiheadAttention(8, 2),
    "MultiheadAttention_kv": lambda t: t.nn.MultiheadAttention(8, 2, kdim=4, vdim=6,
                                                              add_bias_kv=True),
    "TransformerEncoderLayer": lambda t: t.nn.TransformerEncoderLayer(8, 2, 16),
    "TransformerDecoderLayer": lambda t: t.nn.TransformerDecoderLayer(8, 2, 16),
    "Bilinear": lambda t: t.nn.Bilinear(3, 4, 5),
    "Sequential": lambda t: t.nn.Sequential(t.nn.Conv2d(1, 2, 3), t.nn.ReLU(), t.nn.Flatten(),
                                            t.nn.Linear(8, 3)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
@pytest.mark.parametrize("seed", SEEDS)
def test_layer_initial_weights(name, seed):
    # then a draw: the stream continues where PyTorch's does
    _check(lambda t: _params(LAYERS[name](t)) + [t.rand(3)], seed)


def test_lazy_linear_weights():
    def fn(t):
        m = t.nn.LazyLinear(4)
        m(t.ones(2, 3))
        return _params(m)
    _check(fn, 0)


def _gen(t, seed):
    return t.Generator().manual_seed(seed)


INITS = {
    "uniform_": lambda t: t.nn.init.uniform_(t.empty(17, 3), -2, 3),
    "normal_": lambda t: t.nn.init.normal_(t.empty(17, 3), 1, 3),
    "normal_f64_generator": lambda t: t.nn.init.normal_(t.empty(5, 3, dtype=t.float64),
                                                        generator=_gen(t, 3)),
    "xavier_uniform_": lambda t: t.nn.init.xavier_uniform_(t.empty(6, 5), gain=2),
    "xavier_normal_": lambda t: t.nn.init.xavier_normal_(t.empty(6, 5)),
    "kaiming_uniform_": lambda t: t.nn.init.kaiming_uniform_(t.empty(6, 5)),
    "kaiming_normal_": lambda t: t.nn.init.kaiming_normal_(t.empty(6, 5, 3), mode="fan_out",
                                                           nonlinearity="relu"),
    # [a, b] holds most of the mass: normals, redrawn where outside
    "trunc_normal_": lambda t: t.nn.init.trunc_normal_(t.empty(100, 30)),
    "trunc_normal_std": lambda t: t.nn.init.trunc_normal_(t.empty(64, 33), std=0.02),
    "trunc_normal_small": lambda t: t.nn.init.trunc_normal_(t.empty(5)),
    # a narrow window: uniform candidates accepted against the density
    "trunc_normal_narrow": lambda t: t.nn.init.trunc_normal_(t.empty(50, 7), a=1.5, b=2.5),
    "trunc_normal_narrow_f64": lambda t: t.nn.init.trunc_normal_(
        t.empty(50, 7, dtype=t.float64), mean=0.5, a=-0.2, b=0.1),
    "sparse_": lambda t: t.nn.init.sparse_(t.empty(10, 6), 0.3),
    "sparse_generator": lambda t: t.nn.init.sparse_(t.empty(10, 6), 0.3, generator=_gen(t, 5)),
}


@pytest.mark.parametrize("name", sorted(INITS))
@pytest.mark.parametrize("seed", SEEDS)
def test_init(name, seed):
    _check(lambda t: [INITS[name](t), t.rand(3)], seed)


@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2), (64, 128)])
def test_orthogonal(shape):
    # the same normals; the QR agrees within float32 rounding
    _check(lambda t: [t.nn.init.orthogonal_(t.empty(*shape), gain=2), t.rand(3)], 0,
           atol=1e-5)


# ---------------------------------------------------------------------------------------------
# dropout, rrelu, gumbel_softmax


def _x(t, *shape, dtype=None):
    return (t.arange(int(np.prod(shape)), dtype=dtype or t.float32) * 0.25 - 2).reshape(*shape)


def _F(t):
    return t.nn.functional


DROPOUTS = {
    "dropout": lambda t: _F(t).dropout(_x(t, 7, 9), 0.3),
    # 1 / float32(1 - p) differs from float32(1 / (1 - p)) for this p: PyTorch takes the first
    "dropout_p": lambda t: _F(t).dropout(_x(t, 70), 0.021),
    "dropout_f64": lambda t: _F(t).dropout(_x(t, 70, dtype=t.float64), 0.021),
    "dropout_f16": lambda t: _F(t).dropout(_x(t, 70, dtype=t.float16), 0.021),
    "dropout_bf16": lambda t: _F(t).dropout(_x(t, 70, dtype=t.bfloat16), 0.3),
    "dropout_transposed": lambda t: _F(t).dropout(_x(t, 7, 9).t(), 0.5),  # memory order
    "dropout_strided": lambda t: _F(t).dropout(_x(t, 7, 9)[:, ::2], 0.5),
    "dropout_inplace": lambda t: _F(t).dropout(_x(t, 7, 9), 0.5, inplace=True),
    "Dropout": lambda t: t.nn.Dropout(0.2)(_x(t, 4, 5)),
    "dropout1d": lambda t: [_F(t).dropout1d(_x(t, 3, 4, 5), 0.5),
                            _F(t).dropout1d(_x(t, 4, 5), 0.5)],
    "dropout2d": lambda t: _F(t).dropout2d(_x(t, 3, 4, 2, 5), 0.5),
    "dropout3d": lambda t: [_F(t).dropout3d(_x(t, 3, 4, 2, 2, 5), 0.5),
                            _F(t).dropout3d(_x(t, 4, 2, 2, 5), 0.5)],
    "Dropout2d": lambda t: t.nn.Dropout2d(0.4)(_x(t, 2, 6, 3, 3)),
    "alpha_dropout": lambda t: _F(t).alpha_dropout(_x(t, 7, 9), 0.3, True),
    "alpha_dropout_f64": lambda t: _F(t).alpha_dropout(_x(t, 7, 9, dtype=t.float64), 0.3, True),
    "alpha_dropout_f16": lambda t: _F(t).alpha_dropout(_x(t, 7, 9, dtype=t.float16), 0.3, True),
    "alpha_dropout_bf16": lambda t: _F(t).alpha_dropout(_x(t, 7, 9, dtype=t.bfloat16), 0.3,
                                                        True),
    "AlphaDropout": lambda t: t.nn.AlphaDropout(0.2)(_x(t, 7, 9)),
    "feature_alpha_dropout": lambda t: _F(t).feature_alpha_dropout(_x(t, 3, 4, 5), 0.3, True),
    "FeatureAlphaDropout": lambda t: t.nn.FeatureAlphaDropout(0.2)(_x(t, 3, 4, 2, 2)),
    # no draw at p = 1 or for an empty input
    "p_one_and_empty": lambda t: [_F(t).dropout(_x(t, 7, 9), 1.0),
                                  _F(t).alpha_dropout(_x(t, 7, 9), 1.0, True),
                                  _F(t).dropout(_x(t, 0, 9), 0.5),
                                  _F(t).alpha_dropout(_x(t, 0, 9), 0.5, True)],
}


@pytest.mark.parametrize("name", sorted(DROPOUTS))
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.filterwarnings("ignore:dropout")
def test_dropout(name, seed):
    def fn(t):
        r = DROPOUTS[name](t)
        return (r if isinstance(r, list) else [r]) + [t.rand(3)]
    _check(fn, seed)


@pytest.mark.parametrize("alpha", [False, True])
def test_dropout_gradient(alpha):
    def fn(t):
        a = _x(t, 5, 6).requires_grad_()
        y = _F(t).alpha_dropout(a, 0.4, True) if alpha else _F(t).dropout(a, 0.4)
        (y * y).sum().backward()
        return [y, a.grad]
    _check(fn, 1)


def _randn(t, *shape, dtype=None):
    return t.randn(*shape, generator=t.Generator().manual_seed(11), dtype=dtype or t.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("seed", SEEDS)
def test_rrelu_training(dtype, seed):
    # a float64 uniform per element <= 0 only, on bounds rounded to the compute type
    def fn(t):
        a = _randn(t, 40, 30, dtype=getattr(t, dtype)).requires_grad_()
        y = _F(t).rrelu(a, 0.01, 0.7, training=True)
        (y * y).sum().backward()
        return [y, a.grad, t.nn.RReLU()(_randn(t, 5, 7)), _F(t).rrelu_(_randn(t, 5, 7).t(), 0.1,
                                                                      0.3, True), t.rand(3)]
    _check(fn, seed)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", SEEDS)
def test_gumbel_softmax(dtype, seed):
    # the same exponential draws; log and softmax round within an ulp of PyTorch's
    def fn(t):
        x = _randn(t, 50, 20, dtype=getattr(t, dtype))
        return [_F(t).gumbel_softmax(x, tau=0.5), _F(t).gumbel_softmax(x, hard=True, dim=0),
                t.rand(3)]
    _check(fn, seed, atol=1e-6)


def test_attention_dropout():
    # scaled_dot_product_attention (below the tiled path) and the transformer layers drop the
    # attention weights as PyTorch's math path: F.dropout of the softmax
    def fn(t):
        q = t.randn(2, 3, 4, 8)
        enc = t.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, batch_first=True)
        return [t.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.3),
                enc(t.randn(3, 2, 8)), t.rand(3)]
    _check(fn, 0, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# samplers, DataLoader, random_split


def _flat(x):
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            f = _flat(e)
            out += f if isinstance(f, list) else [f]
        return out
    return x.reshape(-1).tolist() if hasattr(x, "reshape") else x


def _D(t):
    return t.utils.data


def _epochs(t, epochs=2, **kw):
    dl = _D(t).DataLoader(_D(t).TensorDataset(t.arange(23)), **kw)
    out = []
    for _ in range(epochs):
        for b in dl:
            out += _flat(b)
        out.append(-1)
    return out


SAMPLERS = {
    "RandomSampler": lambda t: [list(_D(t).RandomSampler(range(10))),
                                list(_D(t).RandomSampler(range(10)))],
    "RandomSampler_generator": lambda t: list(_D(t).RandomSampler(range(10),
                                                                  generator=_gen(t, 3))),
    "RandomSampler_num_samples": lambda t: list(_D(t).RandomSampler(range(10), num_samples=25)),
    # the last permutation is drawn whole even when none of it is kept
    "RandomSampler_num_samples_generator": lambda t: (lambda g: [
        list(_D(t).RandomSampler(range(10), num_samples=20, generator=g)),
        t.rand(2, generator=g)])(_gen(t, 4)),
    "RandomSampler_replacement": lambda t: list(_D(t).RandomSampler(range(10), True, 70)),
    "RandomSampler_replacement_generator": lambda t: (lambda g: [
        list(_D(t).RandomSampler(range(10), True, 70, generator=g)),
        t.rand(2, generator=g)])(_gen(t, 4)),
    "SubsetRandomSampler": lambda t: list(_D(t).SubsetRandomSampler([5, 9, 2, 7, 1])),
    "WeightedRandomSampler": lambda t: list(_D(t).WeightedRandomSampler([0.1, 2, 3, 0, 1.5],
                                                                        70)),
    "WeightedRandomSampler_33": lambda t: list(_D(t).WeightedRandomSampler([1, 2, 3.5], 33)),
    "WeightedRandomSampler_1": lambda t: list(_D(t).WeightedRandomSampler([1, 2, 3.5], 1)),
    "WeightedRandomSampler_no_replacement": lambda t: list(_D(t).WeightedRandomSampler(
        [0.1, 2, 3, 0, 1.5], 3, replacement=False)),
    "BatchSampler": lambda t: list(_D(t).BatchSampler(_D(t).RandomSampler(range(10)), 3, False)),
    "DistributedSampler": lambda t: list(_D(t).DistributedSampler(range(10), num_replicas=2,
                                                                  rank=1)),
    "random_split": lambda t: [list(s) for s in _D(t).random_split(range(10), [3, 7])],
    "random_split_fractions": lambda t: [list(s) for s in _D(t).random_split(range(11),
                                                                             [0.3, 0.3, 0.4])],
    "random_split_generator": lambda t: [list(s) for s in _D(t).random_split(
        range(10), [3, 7], generator=_gen(t, 2))],
    # the workers' base seed is drawn per iterator, then the sampler's epoch seed
    "DataLoader_shuffle": lambda t: _epochs(t, batch_size=4, shuffle=True),
    "DataLoader_sequential": lambda t: _epochs(t, batch_size=4),
    "DataLoader_generator": lambda t: _epochs(t, batch_size=4, shuffle=True,
                                              generator=_gen(t, 9)),
    "DataLoader_drop_last": lambda t: _epochs(t, batch_size=5, shuffle=True, drop_last=True),
    "DataLoader_no_batching": lambda t: _epochs(t, batch_size=None, shuffle=True),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("seed", SEEDS)
def test_samplers(name, seed):
    _check(lambda t: [_flat(SAMPLERS[name](t)), t.rand(3)], seed)


def test_dataloader_draw_order():
    # iter() draws the base seed; the sampler's seed and permutation come at the first next()
    def fn(t):
        it = iter(_D(t).DataLoader(_D(t).TensorDataset(t.arange(10)), batch_size=3,
                                   shuffle=True))
        r = t.rand(2)
        return [r, next(it)[0], t.rand(2)]
    _check(fn, 0)


@pytest.mark.parametrize("persistent", [False, True])
def test_dataloader_workers(persistent):
    # the same batches and stream; each worker's seeds (ember/torch, random, NumPy) as PyTorch's
    def fn(t):
        class DS(_D(t).Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                w = _D(t).get_worker_info()
                return t.tensor([w.seed, int(np.random.randint(0, 2**31)),
                                 t.randint(0, 1000, ()).item()])
        dl = _D(t).DataLoader(DS(), batch_size=1, num_workers=2, persistent_workers=persistent)
        return [t.cat(list(dl)), t.cat(list(dl)), t.tensor(_epochs(t, batch_size=4, shuffle=True,
                                                                   num_workers=2)), t.rand(2)]
    _check(fn, 0)


@pytest.mark.parametrize("weights", [[1.0, -1.0, 2.0], [float("nan"), 1.0], [float("inf"), 1.0],
                                     [0.0, 0.0]])
@pytest.mark.parametrize("n", [1, 2])
def test_multinomial_errors(weights, n):
    msgs = []
    for m in (ember, torch):
        with pytest.raises(RuntimeError) as e:
            m.multinomial(m.tensor(weights), n, True)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# ---------------------------------------------------------------------------------------------
# distributions


def _T(t, v, dtype="float32"):
    return t.tensor(v, dtype=getattr(t, dtype))


_S = (3, 4)

# the same draws and the same arithmetic: bit for bit
DISTS_EXACT = {
    "Normal": lambda t, D: [D.Normal(_T(t, [0., 1.]), _T(t, [1., 2.])).sample(_S),
                            D.Normal(_T(t, [0., 1.]), _T(t, [1., 2.])).rsample(_S),
                            D.Normal(0., 1.).rsample()],
    "Uniform": lambda t, D: [D.Uniform(_T(t, [0., 1.]), _T(t, [1., 3.])).sample(_S)],
    "Bernoulli": lambda t, D: [D.Bernoulli(probs=_T(t, [0.2, 0.7])).sample(_S)],
    "Categorical": lambda t, D: [D.Categorical(probs=_T(t, [0.2, 0.5, 0.3])).sample(_S),
                                 D.Categorical(logits=_T(t, [[0.2, 0.5, 0.3], [1, 2, 3]])).sample(),
                                 D.Categorical(_T(t, [[1, 2, 3.]], "float64")).sample((5,))],
    "OneHotCategorical": lambda t, D: [D.OneHotCategorical(probs=_T(t, [0.2, 0.5, 0.3])).sample(
        _S)],
    "Multinomial": lambda t, D: [D.Multinomial(10, _T(t, [0.2, 0.5, 0.3])).sample(_S)],
    "Exponential": lambda t, D: [D.Exponential(_T(t, [0.5, 2.])).rsample(_S),
                                 D.Exponential(_T(t, [0.5, 2.], "float64")).sample((3,))],
    "Geometric": lambda t, D: [D.Geometric(_T(t, [0.2, 0.7])).sample(_S)],
    "MultivariateNormal": lambda t, D: [D.MultivariateNormal(
        _T(t, [0., 1.]), _T(t, [[2., 0.5], [0.5, 1.]])).rsample(_S)],
    "Poisson": lambda t, D: [D.Poisson(_T(t, [0.5, 20.])).sample(_S),
                             D.Poisson(_T(t, [3., 50.], "float64")).sample((4,))],
    "Binomial": lambda t, D: [D.Binomial(10, _T(t, [0.2, 0.7])).sample((20,)),
                              D.Binomial(100, _T(t, [0.2, 0.7, 0.5])).sample((20,)),
                              D.Binomial(1000, _T(t, [0.3, 0.01, 0.999], "float64")).sample((9,))],
    # Marsaglia-Tsang with PyTorch's float32/float64 arithmetic and cached normals
    "Gamma": lambda t, D: [D.Gamma(_T(t, [0.5, 2., 7.]), _T(t, [1., 3., 1.])).rsample(_S),
                           D.Gamma(_T(t, [0.05, 2.], "float64"), _T(t, [1., 3.], "float64")
                                   ).rsample(_S)],
    "Chi2": lambda t, D: [D.Chi2(_T(t, [1., 5.])).rsample(_S)],
    "Beta": lambda t, D: [D.Beta(_T(t, [0.5, 2.]), _T(t, [1., 3.])).rsample(_S),
                          D.Beta(_T(t, [0.05, 2.]), _T(t, [0.01, 3.])).rsample((20,))],
    "Dirichlet": lambda t, D: [D.Dirichlet(_T(t, [0.5, 2., 3.])).rsample(_S),
                               D.Dirichlet(_T(t, [[0.5, 2., 3.], [0.1, 0.01, 5.]], "float64")
                                           ).rsample((4,))],
    "FisherSnedecor": lambda t, D: [D.FisherSnedecor(_T(t, [3., 5.]), _T(t, [2., 7.])).rsample(
        _S)],
    "NegativeBinomial": lambda t, D: [D.NegativeBinomial(_T(t, [3., 5.]),
                                                         probs=_T(t, [0.2, 0.7])).sample(_S)],
    "MixtureSameFamily": lambda t, D: [D.MixtureSameFamily(
        D.Categorical(_T(t, [0.3, 0.7])), D.Normal(_T(t, [0., 5.]), _T(t, [1., 1.]))).sample(_S)],
}

# the same draws; transcendental functions round within float32 ulps of PyTorch's
DISTS_CLOSE = {
    "Cauchy": lambda t, D: [D.Cauchy(_T(t, [0., 1.]), _T(t, [1., 2.])).rsample(_S)],
    "HalfCauchy": lambda t, D: [D.HalfCauchy(_T(t, [1., 2.])).rsample(_S)],
    "Laplace": lambda t, D: [D.Laplace(_T(t, [0., 1.]), _T(t, [1., 2.])).rsample(_S)],
    "Gumbel": lambda t, D: [D.Gumbel(_T(t, [0., 1.]), _T(t, [1., 2.])).rsample(_S)],
    "LogNormal": lambda t, D: [D.LogNormal(_T(t, [0., 1.]), _T(t, [1., 0.5])).rsample(_S)],
    "StudentT": lambda t, D: [D.StudentT(_T(t, [3., 5.])).rsample(_S)],
    "InverseGamma": lambda t, D: [D.InverseGamma(_T(t, [2., 3.]), _T(t, [1., 2.])).rsample(_S)],
    "Weibull": lambda t, D: [D.Weibull(_T(t, [1., 2.]), _T(t, [1.5, 0.5])).rsample(_S)],
    "Pareto": lambda t, D: [D.Pareto(_T(t, [1., 2.]), _T(t, [1.5, 3.])).rsample(_S)],
    "Kumaraswamy": lambda t, D: [D.Kumaraswamy(_T(t, [1., 2.]), _T(t, [1.5, 0.5])).rsample(_S)],
    "RelaxedBernoulli": lambda t, D: [D.RelaxedBernoulli(_T(t, 0.5), probs=_T(t, [0.2, 0.7])
                                                         ).rsample(_S)],
    "RelaxedOneHotCategorical": lambda t, D: [D.RelaxedOneHotCategorical(
        _T(t, 0.5), probs=_T(t, [0.2, 0.5, 0.3])).rsample(_S)],
    "ContinuousBernoulli": lambda t, D: [D.ContinuousBernoulli(_T(t, [0.2, 0.7])).rsample(_S)],
    "VonMises": lambda t, D: [D.VonMises(_T(t, [0., 1.]), _T(t, [0.01, 50.])).sample((30,))],
    "LKJCholesky": lambda t, D: [D.LKJCholesky(3, _T(t, 2.)).sample(_S)],
    "Wishart": lambda t, D: [D.Wishart(_T(t, [4., 5., 3.]), covariance_matrix=_T(
        t, [[2., 0.5], [0.5, 1.]])).rsample((2,))],
}


@pytest.mark.parametrize("name", sorted(DISTS_EXACT) + sorted(DISTS_CLOSE))
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.filterwarnings("ignore:Singular sample")
def test_distribution_samples(name, seed):
    fn = DISTS_EXACT.get(name) or DISTS_CLOSE[name]
    tol = {} if name in DISTS_EXACT else {"rtol": 1e-5, "atol": 1e-6}
    _check(lambda t: fn(t, t.distributions) + [t.rand(3)], seed, **tol)


# ---------------------------------------------------------------------------------------------
# vision transforms: ember's draws against torchvision's sequence of torch calls (torchvision's
# documented get_params, written out with the installed torch)


def _tv_area_window(h, w, scale, ratio, erase=False):
    import math

    area = h * w
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        a = int(round(math.sqrt(target * aspect)))
        b = int(round(math.sqrt(target / aspect)))
        if erase:  # RandomErasing: h, w = a, b
            if a < h and b < w:
                return a, b
        elif 0 < a <= w and 0 < b <= h:  # RandomResizedCrop: w, h = a, b
            return b, a
    return None


def _tv_resized_crop(h, w, scale, ratio):
    found = _tv_area_window(h, w, scale, ratio)
    assert found is not None
    ch, cw = found
    return (torch.randint(0, h - ch + 1, size=(1,)).item(),
            torch.randint(0, w - cw + 1, size=(1,)).item(), ch, cw)


def test_vision_transforms_draws():
    from ember.vision import transforms as T

    img = ember.zeros(3, 32, 40)
    for seed in (0, 3, 11):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        for _ in range(5):
            assert T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3)) == \
                _tv_resized_crop(32, 40, (0.08, 1.0), (3 / 4, 4 / 3))
            assert T.RandomCrop.get_params(img, (20, 24)) == (
                torch.randint(0, 13, size=(1,)).item(), torch.randint(0, 17, size=(1,)).item(),
                20, 24)
            assert T.RandomRotation.get_params([-30.0, 30.0]) == \
                float(torch.empty(1).uniform_(-30.0, 30.0).item())
            order, b, c, s, h = T.ColorJitter.get_params((0.5, 1.5), None, (0.8, 1.2),
                                                         (-0.1, 0.1))
            assert order.tolist() == torch.randperm(4).tolist()
            assert [b, c, s, h] == [float(torch.empty(1).uniform_(0.5, 1.5)), None,
                                    float(torch.empty(1).uniform_(0.8, 1.2)),
                                    float(torch.empty(1).uniform_(-0.1, 0.1))]
            i, j, eh, ew, v = T.RandomErasing.get_params(img, (0.02, 0.33), (0.3, 3.3))
            found = _tv_area_window(32, 40, (0.02, 0.33), (0.3, 3.3), erase=True)
            assert found == (eh, ew)
            tv = torch.empty([3, eh, ew], dtype=torch.float32).normal_()
            np.testing.assert_array_equal(v.numpy(), tv.numpy())
            assert (i, j) == (torch.randint(0, 32 - eh + 1, size=(1,)).item(),
                              torch.randint(0, 40 - ew + 1, size=(1,)).item())
            flips = [bool(T.RandomHorizontalFlip(0.5)._params(img)["flip"]) for _ in range(4)]
            assert flips == [bool(torch.rand(1) < 0.5) for _ in range(4)]
        _same_state()


def test_dataloader_pin_memory_warning():
    # makemore's loader passes pin_memory=True: PyTorch warns once per iterator on a CPU machine
    import warnings

    msgs = []
    for m in (ember, torch):
        if m is ember and ember.accelerator.is_available():
            pytest.skip("an accelerator is present")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            dl = m.utils.data.DataLoader(m.utils.data.TensorDataset(m.arange(4)), pin_memory=True)
            next(iter(dl))
        msgs.append([str(w.message) for w in seen if "pin_memory" in str(w.message)])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1
