"""The meta device: tensors with shapes, dtypes and strides and no data, compared with PyTorch's
meta tensors (shape, dtype, strides, storage offset and device of each result; the errors)."""

import copy
import resource
import time
import warnings

import numpy as np
import pytest

import ember
from ember import _backend, _meta
from helpers import HAVE_TORCH, torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")


def _ops(m, dev):
    x = m.ones(4, 6, device=dev)
    y = m.ones(6, 5, device=dev)
    v = m.ones(6, device=dev)
    i = m.ones(3, 4, dtype=m.int64, device=dev)
    b = m.ones(4, 6, dtype=m.bool, device=dev)
    img = m.ones(2, 3, 8, 8, device=dev)
    w = m.ones(4, 3, 3, 3, device=dev)
    q = m.ones(2, 3, 5, 8, device=dev)
    F = m.nn.functional
    return {
        "add": lambda: x + 1, "add_t": lambda: x + x, "mul_int": lambda: i * 2,
        "div_int": lambda: i / 2, "t": lambda: x.t(), "t_add": lambda: x.t() + 1,
        "slice": lambda: x[1:, ::2], "select": lambda: x[1], "mm": lambda: x @ y,
        "mv": lambda: x @ v, "bmm": lambda: m.ones(3, 4, 6, device=dev) @ m.ones(3, 6, 2, device=dev),
        "matmul4d": lambda: m.ones(2, 3, 4, 5, device=dev) @ m.ones(2, 3, 5, 6, device=dev),
        "sum": lambda: x.sum(), "sum1": lambda: x.sum(1, keepdim=True), "mean": lambda: x.mean(0),
        "sum_int": lambda: i.sum(), "max": lambda: x.max(), "max_dim": lambda: x.max(1)[1],
        "argmax": lambda: x.argmax(1), "amax": lambda: x.amax(0), "var": lambda: x.var(1),
        "std": lambda: x.std(), "norm": lambda: x.norm(), "logsumexp": lambda: x.logsumexp(1),
        "softmax": lambda: x.softmax(-1), "log_softmax": lambda: F.log_softmax(x, 1),
        "relu": lambda: F.relu(x), "gelu": lambda: F.gelu(x), "sigmoid": lambda: x.sigmoid(),
        "tanh": lambda: x.tanh(), "exp": lambda: x.exp(), "pow": lambda: x ** 2,
        "rsqrt": lambda: x.rsqrt(), "reshape": lambda: x.reshape(3, 8), "view": lambda: x.view(-1),
        "t_reshape": lambda: x.t().reshape(24), "permute": lambda: img.permute(0, 2, 3, 1),
        "transpose": lambda: img.transpose(1, 2), "unsqueeze": lambda: x.unsqueeze(1),
        "squeeze": lambda: m.ones(1, 4, 1, device=dev).squeeze(), "expand": lambda: v.expand(3, 6),
        "flatten": lambda: img.flatten(1), "narrow": lambda: x.narrow(1, 1, 3),
        "unfold": lambda: x.unfold(1, 2, 1), "as_strided": lambda: x.as_strided((2, 2), (1, 2), 1),
        "diagonal": lambda: m.ones(4, 4, device=dev).diagonal(), "cat": lambda: m.cat([x, x], 0),
        "stack": lambda: m.stack([x, x], 1), "split": lambda: x.split(2, 1)[1],
        "chunk": lambda: x.chunk(2)[1], "where": lambda: m.where(b, x, 0.0),
        "masked_fill": lambda: x.masked_fill(b, 0.0), "clamp": lambda: x.clamp(0, 1),
        "index_select": lambda: x.index_select(0, i[0]),
        "gather": lambda: x.gather(1, i[:, :2] * 0), "embedding": lambda: F.embedding(i, y),
        "linear": lambda: F.linear(x, y.t()), "conv2d": lambda: F.conv2d(img, w, padding=1),
        "conv2d_s2": lambda: F.conv2d(img, w, stride=2), "max_pool": lambda: F.max_pool2d(img, 2),
        "avg_pool": lambda: F.avg_pool2d(img, 2), "adaptive": lambda: F.adaptive_avg_pool2d(img, 1),
        "layer_norm": lambda: F.layer_norm(x, (6,)), "group_norm": lambda: F.group_norm(img, 1),
        "batch_norm": lambda: F.batch_norm(img, None, None, training=True),
        "dropout_eval": lambda: F.dropout(x, 0.5, training=False),
        "cross_entropy": lambda: F.cross_entropy(x, i[0] * 0), "mse": lambda: F.mse_loss(x, x),
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q),
        "cumsum": lambda: x.cumsum(1), "sort": lambda: x.sort(1)[1], "topk": lambda: x.topk(2)[0],
        "tril": lambda: x.tril(), "triu": lambda: x.triu(1), "pad": lambda: F.pad(img, (1, 2, 3, 4)),
        "interpolate": lambda: F.interpolate(img, scale_factor=2),
        "einsum": lambda: m.einsum("ij,jk->ik", x, y), "float": lambda: i.float(),
        "half": lambda: x.half(), "contiguous": lambda: x.t().contiguous(),
        "clone_t": lambda: x.t().clone(), "eq": lambda: x == 1, "any": lambda: b.any(),
        "repeat": lambda: x.repeat(2, 1), "roll": lambda: x.roll(1, 0), "flip": lambda: x.flip(0),
        "outer": lambda: m.outer(v, v), "zeros_like_t": lambda: m.zeros_like(x.t()),
        "new_zeros": lambda: x.new_zeros(2), "arange": lambda: m.arange(5, device=dev),
        "addmm": lambda: m.addmm(m.ones(5, device=dev), x, y),
        "baddbmm": lambda: m.baddbmm(m.ones(3, 4, 2, device=dev), m.ones(3, 4, 6, device=dev),
                                     m.ones(3, 6, 2, device=dev)),
        "empty_strided": lambda: m.empty_strided((2, 3), (1, 2), device=dev),
        "cpu_scalar_joins": lambda: x + m.tensor(2.0),
    }


def _describe(r):
    if isinstance(r, (tuple, list)):
        r = r[0]
    return (tuple(r.shape), str(r.dtype).split(".")[-1], tuple(r.stride()), r.storage_offset(),
            str(r.device))


OP_NAMES = list(_ops(ember, "meta"))


@needs_torch
@pytest.mark.parametrize("name", OP_NAMES)
def test_op_on_meta_matches_pytorch(name):
    want = _describe(_ops(torch, "meta")[name]())
    got = _describe(_ops(ember, "meta")[name]())
    assert got == want


def test_meta_tensor_of_ten_billion_elements_allocates_nothing():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    x = ember.empty(100000, 100000, device="meta")
    y = (x @ x.t()).relu().sum(1)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert x.is_meta and y.is_meta and tuple(y.shape) == (100000,)
    assert x.nbytes == 4 * 10**10
    assert after - before < 50_000  # KiB: no 40 GB buffer (nor a page of it) was touched
    assert type(x._data) is _meta.MetaArray and not isinstance(x._data, np.ndarray)


def test_models_build_on_meta_instantly_and_without_memory():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    lin = ember.nn.Linear(10000, 10000, device="meta")
    with ember.device("meta"):  # a GPT-2-small-sized model: 162M parameters
        enc = ember.nn.TransformerEncoder(
            ember.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True), 12)
        emb = ember.nn.Embedding(50257, 768)
        head = ember.nn.Linear(768, 50257, bias=False)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    params = [*lin.parameters(), *enc.parameters(), *emb.parameters(), *head.parameters()]
    assert all(p.is_meta for p in params)
    assert sum(p.numel() for p in params) > 250_000_000
    assert elapsed < 2.0  # no values drawn: kaiming/normal inits skip meta tensors
    assert after - before < 50_000
    out = head(enc(emb(ember.empty(2, 16, dtype=ember.long, device="meta"))))
    assert out.is_meta and tuple(out.shape) == (2, 16, 50257)


@needs_torch
@pytest.mark.parametrize("build", [
    lambda m: m.nn.Linear(5, 3),
    lambda m: m.nn.Conv2d(3, 8, 3, padding=1),
    lambda m: m.nn.LayerNorm(6),
    lambda m: m.nn.Embedding(10, 4),
    lambda m: m.nn.BatchNorm2d(3),
    lambda m: m.nn.TransformerEncoder(m.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2),
], ids=["Linear", "Conv2d", "LayerNorm", "Embedding", "BatchNorm2d", "TransformerEncoder"])
def test_modules_built_on_meta_match_pytorch(build):
    def describe(m):
        with m.device("meta"):
            mod = build(m)
        return [(k, *_describe(v)) for k, v in mod.state_dict().items()]

    assert describe(ember) == describe(torch)


@needs_torch
@pytest.mark.parametrize("case", ["linear", "conv", "encoder"])
def test_meta_forward_and_backward_shapes_match_pytorch(case):
    def run(m):
        m.manual_seed(0)
        with m.device("meta"):
            if case == "linear":
                mod, x = m.nn.Sequential(m.nn.Linear(6, 4), m.nn.GELU()), m.ones(3, 6)
            elif case == "conv":
                mod = m.nn.Sequential(m.nn.Conv2d(3, 4, 3), m.nn.BatchNorm2d(4), m.nn.ReLU(),
                                      m.nn.AdaptiveAvgPool2d(1), m.nn.Flatten())
                x = m.ones(2, 3, 8, 8)
            else:
                mod = m.nn.TransformerEncoder(
                    m.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2)
                x = m.ones(2, 5, 8)
        out = mod(x)
        out.sum().backward()
        return [_describe(out)] + [(k, *_describe(p.grad)) for k, p in mod.named_parameters()]

    assert run(ember) == run(torch)


def test_to_empty_then_reset_parameters():
    lin = ember.nn.Linear(3, 4, device="meta")
    assert lin.to_empty(device="cpu") is lin
    assert lin.weight.device == ember.device("cpu") and lin.bias.device.type == "cpu"
    assert type(lin.weight) is ember.nn.Parameter and lin.weight.requires_grad
    ember.manual_seed(0)
    lin.reset_parameters()
    assert float(lin.weight.abs().sum()) > 0
    assert lin(ember.ones(2, 3)).shape == (2, 4)


def test_load_state_dict_assign_onto_a_meta_model():
    ref = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.LayerNorm(4))
    with ember.device("meta"):
        model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.LayerNorm(4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.load_state_dict(ref.state_dict())  # copying into meta: a no-op, with a warning
    assert any("meta parameter" in str(w.message) and "assign=True" in str(w.message)
               for w in caught)
    assert model[0].weight.is_meta
    model.load_state_dict(ref.state_dict(), assign=True)
    w = model[0].weight
    assert w.device.type == "cpu" and type(w) is ember.nn.Parameter and w.requires_grad
    x = ember.ones(2, 3)
    assert np.array_equal(model(x).detach().numpy(), ref(x).detach().numpy())


def test_module_to_meta_and_deepcopy():
    conv = ember.nn.Conv2d(3, 8, 3).to("meta")
    assert conv.weight.is_meta and type(conv.weight) is ember.nn.Parameter
    assert copy.deepcopy(conv).bias.is_meta
    t = ember.ones(2, 3).t()
    assert t.to("meta").stride() == (1, 3)  # .to("meta") keeps a dense layout, as PyTorch's


def test_device_context_and_default_device():
    with ember.device("meta"):
        assert ember.get_default_device() == ember.device("meta")
        made = [ember.tensor([1, 2]), ember.zeros(2), ember.randn(3), ember.arange(4),
                ember.full((2,), 1.0), ember.nn.Linear(2, 2).weight]
        assert ember.zeros_like(ember.ones(2, device="cpu")).device.type == "cpu"
    assert all(t.is_meta for t in made)
    assert ember.zeros(1).device.type == "cpu" and ember.get_default_device().type == "cpu"
    assert _backend.default_device is None


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m: m.empty(2, 3, device="meta"),
    lambda m: m.empty((), device="meta"),
    lambda m: m.empty(0, device="meta"),
    lambda m: m.ones(2, 3, device="meta", dtype=m.int64),
    lambda m: m.ones(2, 3, device="meta", dtype=m.bool),
    lambda m: m.ones(2, device="meta", dtype=m.float64),
    lambda m: m.ones(2, 3, device="meta", requires_grad=True),
    lambda m: m.ones(2, 3, device="meta", requires_grad=True).sum(),
    lambda m: m.nn.Parameter(m.ones(2, device="meta")),
])
def test_printing_matches_pytorch(make):
    assert repr(make(ember)) == repr(make(torch))


def test_meta_tensor_metadata():
    x = ember.empty(2, 3, device="meta")
    assert x.is_meta and not ember.ones(1).is_meta
    assert x.device == ember.device("meta") and str(x.device) == "meta"
    assert x.data_ptr() == 0 and x.is_contiguous() and not x.t().is_contiguous()
    assert x.t()[1:].storage_offset() == 1
    assert x.element_size() == 4 and x.numel() == 6


@needs_torch
@pytest.mark.parametrize("action", [
    lambda m, x: x.item(), lambda m, x: x.sum().item(), lambda m, x: bool(x.sum()),
    lambda m, x: float(x.sum()), lambda m, x: x.numpy(), lambda m, x: x.tolist(),
    lambda m, x: x.cpu(), lambda m, x: x.to("cpu"), lambda m, x: m.nonzero(x),
    lambda m, x: x[x > 0], lambda m, x: m.masked_select(x, x > 0), lambda m, x: x.unique(),
    lambda m, x: x + m.ones(2, 3), lambda m, x: m.ones(2, 3).copy_(x),
])
def test_errors_match_pytorch(action):
    def outcome(m):
        try:
            action(m, m.ones(2, 3, device="meta"))
        except Exception as e:  # noqa: BLE001 - the class is compared
            return type(e).__name__
        return "ok"

    want = outcome(torch)
    assert want != "ok"
    assert outcome(ember) == want


def test_allowed_mixes_and_in_place_ops():
    x = ember.ones(2, 3, device="meta")
    assert (x + ember.tensor(1.0)).is_meta  # a 0-d CPU tensor joins, as in PyTorch
    assert x.copy_(ember.ones(2, 3)) is x  # copying into meta: a no-op
    p = ember.nn.Parameter(ember.empty(3, 4, device="meta"))
    with ember.no_grad():
        assert p.uniform_(-1, 1) is p and p.normal_() is p and p.zero_() is p
        ember.nn.init.trunc_normal_(p)
        ember.nn.init.orthogonal_(p)
    assert p.is_meta
    y = ember.ones(4, device="meta", requires_grad=True)
    (y * 2).sum().backward()
    assert y.grad.is_meta and tuple(y.grad.shape) == (4,)


def test_meta_array_refuses_to_hand_out_data():
    a = _meta.MetaArray((2, 3), np.float32)
    with pytest.raises(NotImplementedError, match="no data"):
        np.asarray(a)
    with pytest.raises(NotImplementedError, match="data-dependent"):
        np.nonzero(a)
    assert not (a < 0).any() and (a > 0).all()  # value checks inside ops pass (valid data)
    with pytest.raises(RuntimeError, match="meta"):
        bool(a.sum())
