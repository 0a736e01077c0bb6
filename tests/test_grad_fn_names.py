"""``type(out.grad_fn).__name__`` is PyTorch's for the same call, over the op table.

Scripts and tutorials print ``grad_fn`` (``<MulBackward0 object at ...>``) and some code
branches on its name, so each op's node is named as PyTorch names it. Cases whose op class lives
in a file another maintainer owns and still has the wrong name are xfail (non-strict) with the
reason "name in lead's file"; /work/notes/names_for_lead.md lists the renames.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

A = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32) + 0.1
B = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
SQ = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
IMG = np.random.default_rng(3).standard_normal((2, 3, 6, 6)).astype(np.float32)
W = np.random.default_rng(4).standard_normal((5, 3, 3, 3)).astype(np.float32)
IDX = np.array([2, 0, 1])

# name -> fn(m, F, x, y, s, img, w) using module m (ember or torch) and functional F
CASES = {
    # elementwise
    "add": lambda m, F, x, y, s, i, w: x + y,
    "add_scalar": lambda m, F, x, y, s, i, w: x + 2,
    "sub": lambda m, F, x, y, s, i, w: x - y,
    "rsub_scalar": lambda m, F, x, y, s, i, w: 2 - x,
    "mul": lambda m, F, x, y, s, i, w: x * y,
    "mul_scalar": lambda m, F, x, y, s, i, w: x * 2,
    "div": lambda m, F, x, y, s, i, w: x / y,
    "div_scalar": lambda m, F, x, y, s, i, w: x / 2,
    "rdiv_scalar": lambda m, F, x, y, s, i, w: 2 / x,
    "neg": lambda m, F, x, y, s, i, w: -x,
    "pow_scalar": lambda m, F, x, y, s, i, w: x ** 2,
    "pow_tensor": lambda m, F, x, y, s, i, w: x.abs() ** y,
    "rpow": lambda m, F, x, y, s, i, w: 2 ** x,
    "exp": lambda m, F, x, y, s, i, w: x.exp(),
    "exp2": lambda m, F, x, y, s, i, w: x.exp2(),
    "expm1": lambda m, F, x, y, s, i, w: x.expm1(),
    "log": lambda m, F, x, y, s, i, w: x.abs().log(),
    "log2": lambda m, F, x, y, s, i, w: x.abs().log2(),
    "log10": lambda m, F, x, y, s, i, w: x.abs().log10(),
    "log1p": lambda m, F, x, y, s, i, w: x.abs().log1p(),
    "sqrt": lambda m, F, x, y, s, i, w: x.abs().sqrt(),
    "rsqrt": lambda m, F, x, y, s, i, w: x.abs().rsqrt(),
    "reciprocal": lambda m, F, x, y, s, i, w: x.reciprocal(),
    "sin": lambda m, F, x, y, s, i, w: x.sin(),
    "cos": lambda m, F, x, y, s, i, w: x.cos(),
    "tan": lambda m, F, x, y, s, i, w: x.tan(),
    "asin": lambda m, F, x, y, s, i, w: (x * 0.1).asin(),
    "acos": lambda m, F, x, y, s, i, w: (x * 0.1).acos(),
    "atan": lambda m, F, x, y, s, i, w: x.atan(),
    "atan2": lambda m, F, x, y, s, i, w: m.atan2(x, y),
    "sinh": lambda m, F, x, y, s, i, w: x.sinh(),
    "cosh": lambda m, F, x, y, s, i, w: x.cosh(),
    "tanh": lambda m, F, x, y, s, i, w: x.tanh(),
    "asinh": lambda m, F, x, y, s, i, w: x.asinh(),
    "acosh": lambda m, F, x, y, s, i, w: (x.abs() + 1).acosh(),
    "atanh": lambda m, F, x, y, s, i, w: (x * 0.1).atanh(),
    "sigmoid": lambda m, F, x, y, s, i, w: x.sigmoid(),
    "relu": lambda m, F, x, y, s, i, w: x.relu(),
    "abs": lambda m, F, x, y, s, i, w: x.abs(),
    "erf": lambda m, F, x, y, s, i, w: x.erf(),
    "erfc": lambda m, F, x, y, s, i, w: x.erfc(),
    "erfinv": lambda m, F, x, y, s, i, w: (x * 0.1).erfinv(),
    "square": lambda m, F, x, y, s, i, w: x.square(),
    "frac": lambda m, F, x, y, s, i, w: x.frac(),
    "floor": lambda m, F, x, y, s, i, w: x.floor(),
    "ceil": lambda m, F, x, y, s, i, w: x.ceil(),
    "round": lambda m, F, x, y, s, i, w: x.round(),
    "trunc": lambda m, F, x, y, s, i, w: x.trunc(),
    "sign": lambda m, F, x, y, s, i, w: x.sign(),
    "maximum": lambda m, F, x, y, s, i, w: m.maximum(x, y),
    "minimum": lambda m, F, x, y, s, i, w: m.minimum(x, y),
    "fmax": lambda m, F, x, y, s, i, w: m.fmax(x, y),
    "clamp": lambda m, F, x, y, s, i, w: x.clamp(-0.5, 0.5),
    "clamp_min": lambda m, F, x, y, s, i, w: x.clamp(min=0.1),
    "where": lambda m, F, x, y, s, i, w: m.where(x > 0, x, y),
    "lerp": lambda m, F, x, y, s, i, w: m.lerp(x, y, 0.3),
    "logaddexp": lambda m, F, x, y, s, i, w: m.logaddexp(x, y),
    "hypot": lambda m, F, x, y, s, i, w: m.hypot(x, y),
    "xlogy": lambda m, F, x, y, s, i, w: m.xlogy(x, y.abs()),
    "remainder": lambda m, F, x, y, s, i, w: m.remainder(x, 0.7),
    "fmod": lambda m, F, x, y, s, i, w: m.fmod(x, 0.7),
    "addcmul": lambda m, F, x, y, s, i, w: m.addcmul(x, x, y),
    "addcdiv": lambda m, F, x, y, s, i, w: m.addcdiv(x, x, y),
    "lgamma": lambda m, F, x, y, s, i, w: x.abs().lgamma(),
    "digamma": lambda m, F, x, y, s, i, w: x.abs().digamma(),
    "polygamma": lambda m, F, x, y, s, i, w: x.abs().polygamma(1),
    "logit": lambda m, F, x, y, s, i, w: (x.sigmoid()).logit(),
    "sinc": lambda m, F, x, y, s, i, w: x.sinc(),
    "copysign": lambda m, F, x, y, s, i, w: m.copysign(x, y),
    "float_cast": lambda m, F, x, y, s, i, w: x.double(),
    "clone": lambda m, F, x, y, s, i, w: x.clone(),
    "nan_to_num": lambda m, F, x, y, s, i, w: x.nan_to_num(),
    # reductions
    "sum": lambda m, F, x, y, s, i, w: x.sum(),
    "sum_dim": lambda m, F, x, y, s, i, w: x.sum(1),
    "mean": lambda m, F, x, y, s, i, w: x.mean(),
    "mean_dim": lambda m, F, x, y, s, i, w: x.mean(0),
    "prod": lambda m, F, x, y, s, i, w: x.prod(),
    "prod_dim": lambda m, F, x, y, s, i, w: x.prod(1),
    "max": lambda m, F, x, y, s, i, w: x.max(),
    "max_dim": lambda m, F, x, y, s, i, w: x.max(1)[0],
    "min": lambda m, F, x, y, s, i, w: x.min(),
    "min_dim": lambda m, F, x, y, s, i, w: x.min(0)[0],
    "amax": lambda m, F, x, y, s, i, w: x.amax(1),
    "amin": lambda m, F, x, y, s, i, w: x.amin(1),
    "var": lambda m, F, x, y, s, i, w: x.var(),
    "var_dim": lambda m, F, x, y, s, i, w: x.var(1),
    "std": lambda m, F, x, y, s, i, w: x.std(),
    "std_dim": lambda m, F, x, y, s, i, w: x.std(1),
    "norm": lambda m, F, x, y, s, i, w: x.norm(),
    "norm_dim": lambda m, F, x, y, s, i, w: x.norm(dim=1),
    "vector_norm": lambda m, F, x, y, s, i, w: m.linalg.vector_norm(x),
    "logsumexp": lambda m, F, x, y, s, i, w: x.logsumexp(1),
    "cumsum": lambda m, F, x, y, s, i, w: x.cumsum(1),
    "cumprod": lambda m, F, x, y, s, i, w: x.cumprod(1),
    "cummax": lambda m, F, x, y, s, i, w: x.cummax(1)[0],
    "median": lambda m, F, x, y, s, i, w: x.median(),
    "median_dim": lambda m, F, x, y, s, i, w: x.median(1)[0],
    "nansum": lambda m, F, x, y, s, i, w: x.nansum(),
    "nanmean": lambda m, F, x, y, s, i, w: x.nanmean(),
    "softmax": lambda m, F, x, y, s, i, w: x.softmax(1),
    "log_softmax": lambda m, F, x, y, s, i, w: x.log_softmax(1),
    "kthvalue": lambda m, F, x, y, s, i, w: x.kthvalue(2, 1)[0],
    "mode": lambda m, F, x, y, s, i, w: x.mode(1)[0],
    "topk": lambda m, F, x, y, s, i, w: x.topk(2, 1)[0],
    "sort": lambda m, F, x, y, s, i, w: x.sort(1)[0],
    # linear algebra
    "matmul": lambda m, F, x, y, s, i, w: x @ y.t(),
    "mm": lambda m, F, x, y, s, i, w: m.mm(x, y.t()),
    "bmm": lambda m, F, x, y, s, i, w: m.bmm(x[None], y.t()[None]),
    "mv": lambda m, F, x, y, s, i, w: m.mv(x, y[0]),
    "dot": lambda m, F, x, y, s, i, w: m.dot(x[0], y[0]),
    "outer": lambda m, F, x, y, s, i, w: m.outer(x[0], y[0]),
    "einsum": lambda m, F, x, y, s, i, w: m.einsum("ij,kj->ik", x, y),
    "addmm": lambda m, F, x, y, s, i, w: m.addmm(x[:, :3], x, y.t()),
    "matmul_batched": lambda m, F, x, y, s, i, w: x[None] @ y.t()[None],
    "det": lambda m, F, x, y, s, i, w: s.det(),
    "inverse": lambda m, F, x, y, s, i, w: s.inverse(),
    "trace": lambda m, F, x, y, s, i, w: s.trace(),
    "tril": lambda m, F, x, y, s, i, w: s.tril(),
    "triu": lambda m, F, x, y, s, i, w: s.triu(),
    "diag": lambda m, F, x, y, s, i, w: s.diag(),
    "diagonal": lambda m, F, x, y, s, i, w: s.diagonal(),
    "cholesky": lambda m, F, x, y, s, i, w: m.linalg.cholesky(s @ s.t()),
    "slogdet": lambda m, F, x, y, s, i, w: m.linalg.slogdet(s)[1],
    "linalg_inv": lambda m, F, x, y, s, i, w: m.linalg.inv(s),
    "linalg_solve": lambda m, F, x, y, s, i, w: m.linalg.solve(s, s[0]),
    "cross": lambda m, F, x, y, s, i, w: m.linalg.cross(x[:, :3], y[:, :3]),
    "kron": lambda m, F, x, y, s, i, w: m.kron(x, y),
    # shape
    "view": lambda m, F, x, y, s, i, w: x.view(4, 3),
    "reshape": lambda m, F, x, y, s, i, w: x.reshape(12),
    "reshape_noncontig": lambda m, F, x, y, s, i, w: x.t().reshape(12),
    "flatten": lambda m, F, x, y, s, i, w: x.flatten(),
    "squeeze": lambda m, F, x, y, s, i, w: x[None].squeeze(),
    "squeeze_dim": lambda m, F, x, y, s, i, w: x[None].squeeze(0),
    "unsqueeze": lambda m, F, x, y, s, i, w: x.unsqueeze(0),
    "expand": lambda m, F, x, y, s, i, w: x[None].expand(2, 3, 4),
    "permute": lambda m, F, x, y, s, i, w: x.permute(1, 0),
    "transpose": lambda m, F, x, y, s, i, w: x.transpose(0, 1),
    "t": lambda m, F, x, y, s, i, w: x.t(),
    "T": lambda m, F, x, y, s, i, w: x.T,
    "mT": lambda m, F, x, y, s, i, w: x.mT,
    "cat": lambda m, F, x, y, s, i, w: m.cat([x, y]),
    "stack": lambda m, F, x, y, s, i, w: m.stack([x, y]),
    "split": lambda m, F, x, y, s, i, w: x.split(2, 1)[0],
    "split_sizes": lambda m, F, x, y, s, i, w: x.split([1, 3], 1)[0],
    "chunk": lambda m, F, x, y, s, i, w: x.chunk(2, 1)[0],
    "unbind": lambda m, F, x, y, s, i, w: x.unbind(0)[0],
    "flip": lambda m, F, x, y, s, i, w: x.flip(0),
    "roll": lambda m, F, x, y, s, i, w: x.roll(1, 0),
    "repeat": lambda m, F, x, y, s, i, w: x.repeat(2, 1),
    "repeat_interleave": lambda m, F, x, y, s, i, w: x.repeat_interleave(2, 0),
    "tile": lambda m, F, x, y, s, i, w: x.tile(2),
    "narrow": lambda m, F, x, y, s, i, w: x.narrow(1, 1, 2),
    "select": lambda m, F, x, y, s, i, w: x.select(0, 1),
    "unfold": lambda m, F, x, y, s, i, w: x.unfold(1, 2, 1),
    "contiguous_t": lambda m, F, x, y, s, i, w: x.t().contiguous(),
    "movedim": lambda m, F, x, y, s, i, w: x.movedim(0, 1),
    "broadcast_to": lambda m, F, x, y, s, i, w: x.broadcast_to((2, 3, 4)),
    "rot90": lambda m, F, x, y, s, i, w: x.rot90(),
    # indexing
    "index_int": lambda m, F, x, y, s, i, w: x[0],
    "index_int_int": lambda m, F, x, y, s, i, w: x[0, 1],
    "index_slice": lambda m, F, x, y, s, i, w: x[1:],
    "index_slice_dim1": lambda m, F, x, y, s, i, w: x[:, 1:3],
    "index_step": lambda m, F, x, y, s, i, w: x[::2],
    "index_none": lambda m, F, x, y, s, i, w: x[None],
    "index_ellipsis": lambda m, F, x, y, s, i, w: x[..., 0],
    "index_tensor": lambda m, F, x, y, s, i, w: x[m.tensor([2, 0])],
    "index_mask": lambda m, F, x, y, s, i, w: x[x > 0],
    "gather": lambda m, F, x, y, s, i, w: x.gather(1, m.zeros(3, 2, dtype=m.int64)),
    "index_select": lambda m, F, x, y, s, i, w: x.index_select(0, m.tensor([2, 0])),
    "masked_fill": lambda m, F, x, y, s, i, w: x.masked_fill(x > 0, 0.0),
    "masked_select": lambda m, F, x, y, s, i, w: x.masked_select(x > 0),
    "scatter": lambda m, F, x, y, s, i, w: x.scatter(1, m.zeros(3, 1, dtype=m.int64), 1.0),
    "scatter_add": lambda m, F, x, y, s, i, w: x.scatter_add(1, m.zeros(3, 4, dtype=m.int64), y),
    "index_add": lambda m, F, x, y, s, i, w: x.index_add(0, m.tensor([0, 1, 0]), y),
    "take_along_dim": lambda m, F, x, y, s, i, w: m.take_along_dim(x, m.zeros(3, 1, dtype=m.int64), 1),
    # activations and nn
    "F.relu": lambda m, F, x, y, s, i, w: F.relu(x),
    "F.leaky_relu": lambda m, F, x, y, s, i, w: F.leaky_relu(x),
    "F.elu": lambda m, F, x, y, s, i, w: F.elu(x),
    "F.selu": lambda m, F, x, y, s, i, w: F.selu(x),
    "F.celu": lambda m, F, x, y, s, i, w: F.celu(x),
    "F.gelu": lambda m, F, x, y, s, i, w: F.gelu(x),
    "F.gelu_tanh": lambda m, F, x, y, s, i, w: F.gelu(x, approximate="tanh"),
    "F.silu": lambda m, F, x, y, s, i, w: F.silu(x),
    "F.mish": lambda m, F, x, y, s, i, w: F.mish(x),
    "F.softplus": lambda m, F, x, y, s, i, w: F.softplus(x),
    "F.softsign": lambda m, F, x, y, s, i, w: F.softsign(x),
    "F.hardtanh": lambda m, F, x, y, s, i, w: F.hardtanh(x),
    "F.relu6": lambda m, F, x, y, s, i, w: F.relu6(x),
    "F.hardswish": lambda m, F, x, y, s, i, w: F.hardswish(x),
    "F.hardsigmoid": lambda m, F, x, y, s, i, w: F.hardsigmoid(x),
    "F.logsigmoid": lambda m, F, x, y, s, i, w: F.logsigmoid(x),
    "F.glu": lambda m, F, x, y, s, i, w: F.glu(x),
    "F.softmax": lambda m, F, x, y, s, i, w: F.softmax(x, 1),
    "F.log_softmax": lambda m, F, x, y, s, i, w: F.log_softmax(x, 1),
    "F.threshold": lambda m, F, x, y, s, i, w: F.threshold(x, 0.1, 2.0),
    "F.hardshrink": lambda m, F, x, y, s, i, w: F.hardshrink(x),
    "F.softshrink": lambda m, F, x, y, s, i, w: F.softshrink(x),
    "F.tanhshrink": lambda m, F, x, y, s, i, w: F.tanhshrink(x),
    "F.linear": lambda m, F, x, y, s, i, w: F.linear(x, y),
    "F.linear_bias": lambda m, F, x, y, s, i, w: F.linear(x, y, y[0, :3]),
    "F.dropout_eval": lambda m, F, x, y, s, i, w: F.dropout(x, 0.5, training=False),
    "F.normalize": lambda m, F, x, y, s, i, w: F.normalize(x),
    "F.pad": lambda m, F, x, y, s, i, w: F.pad(x, (1, 1)),
    "F.embedding": lambda m, F, x, y, s, i, w: F.embedding(m.tensor([0, 2]), x),
    "F.mse_loss": lambda m, F, x, y, s, i, w: F.mse_loss(x, y),
    "F.l1_loss": lambda m, F, x, y, s, i, w: F.l1_loss(x, y),
    "F.smooth_l1_loss": lambda m, F, x, y, s, i, w: F.smooth_l1_loss(x, y),
    "F.huber_loss": lambda m, F, x, y, s, i, w: F.huber_loss(x, y),
    "F.cross_entropy": lambda m, F, x, y, s, i, w: F.cross_entropy(x, m.tensor([0, 1, 3])),
    "F.nll_loss": lambda m, F, x, y, s, i, w: F.nll_loss(x, m.tensor([0, 1, 3])),
    "F.bce": lambda m, F, x, y, s, i, w: F.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
    "F.bce_logits": lambda m, F, x, y, s, i, w: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
    "F.kl_div": lambda m, F, x, y, s, i, w: F.kl_div(x, y.softmax(1), reduction="batchmean"),
    "F.layer_norm": lambda m, F, x, y, s, i, w: F.layer_norm(x, (4,)),
    "F.group_norm": lambda m, F, x, y, s, i, w: F.group_norm(i, 3),
    "F.batch_norm": lambda m, F, x, y, s, i, w: F.batch_norm(i, None, None, training=True),
    "F.conv2d": lambda m, F, x, y, s, i, w: F.conv2d(i, w),
    "F.max_pool2d": lambda m, F, x, y, s, i, w: F.max_pool2d(i, 2),
    "F.avg_pool2d": lambda m, F, x, y, s, i, w: F.avg_pool2d(i, 2),
    "F.adaptive_avg_pool2d": lambda m, F, x, y, s, i, w: F.adaptive_avg_pool2d(i, 1),
    "F.sdpa": lambda m, F, x, y, s, i, w: F.scaled_dot_product_attention(i, i, i),
    "F.cosine_similarity": lambda m, F, x, y, s, i, w: F.cosine_similarity(x, y),
    "F.pairwise_distance": lambda m, F, x, y, s, i, w: F.pairwise_distance(x, y),
    "F.one_hot_mul": lambda m, F, x, y, s, i, w: F.one_hot(m.tensor([0, 1, 3]), 4) * x,
    # new composites
    "cdist": lambda m, F, x, y, s, i, w: m.cdist(x, y),
    "quantile": lambda m, F, x, y, s, i, w: m.quantile(x, 0.5),
    "where_method": lambda m, F, x, y, s, i, w: x.where(x > 0, y),
    "reshape_as": lambda m, F, x, y, s, i, w: x.reshape_as(y.t()),
}


def _name(m, F, fn):
    x = m.tensor(A, requires_grad=True)
    y = m.tensor(B, requires_grad=True)
    s = m.tensor(SQ, requires_grad=True)
    img = m.tensor(IMG, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    out = fn(m, F, x, y, s, img, w)
    return type(out.grad_fn).__name__


# cases whose op class sits in a file this test's maintainer does not own (see the module
# docstring); they pass once the renames in /work/notes/names_for_lead.md are made
LEAD = {
    # ember/_tensor.py (x.T), ember/ops/nn/convolution.py
    "T", "F.adaptive_avg_pool2d",
}

# PyTorch's node here is whatever its implementation lowers the call to last (a view after a
# folded matmul, a squeeze inside solve, a loss kernel where ember composes mean(...)): ember's
# name is its own op's, a known difference
KNOWN = {
    "matmul_batched": "PyTorch folds a batch of 1 into mm and views back",
    "kron": "PyTorch names the last view of its lowering",
    "linalg_solve": "ember solves and squeezes; PyTorch has one linalg_solve_ex node",
    "F.mse_loss": "ember composes the loss from elementwise ops and mean",
    "F.smooth_l1_loss": "ember composes the loss from elementwise ops and mean",
    "F.huber_loss": "ember composes the loss from elementwise ops and mean",
    "F.pairwise_distance": "ember uses linalg.vector_norm; PyTorch its legacy norm",
    "quantile": "ember indexes the single quantile out; PyTorch squeezes",
    "cdist": "ember composes cdist from differences and a norm",
}


@pytest.mark.parametrize("case", list(CASES))
def test_grad_fn_name_matches_torch(case):
    fn = CASES[case]
    expected = _name(torch, torch.nn.functional, fn)
    got = _name(ember, ember.nn.functional, fn)
    if case in KNOWN and got != expected:
        pytest.xfail(KNOWN[case])
    if case in LEAD and got != expected:
        pytest.xfail("name in lead's file")
    assert got == expected, f"{case}: ember {got}, torch {expected}"


def test_saved_fields_are_descriptors_not_getattr():
    """``_saved_<name>`` reads through descriptors on Node (no Node.__getattr__, which would slow
    every attribute read the engine makes): present where the op saved that field, absent
    (AttributeError, not in dir) elsewhere, PyTorch's freed error after backward."""
    from ember.autograd.node import Node

    assert "__getattr__" not in vars(Node)
    x = ember.randn(3, 4, requires_grad=True)
    y = x * 2.0
    mul = y.grad_fn
    assert [n for n in dir(mul) if n.startswith("_saved_")] == ["_saved_other", "_saved_self"]
    assert mul._saved_other.item() == 2.0
    exp = x.exp().grad_fn
    assert not hasattr(exp, "_saved_other") and "_saved_other" not in dir(exp)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mul._saved_self  # noqa: B018
    with pytest.raises(AttributeError):
        mul._saved_nonexistent  # noqa: B018
