"""Results' memory layout matches PyTorch 2.13's: ``is_contiguous()`` and, for dense results, the
strides (size-1 dims aside, which neither library's layout rules fix).

A result that PyTorch makes contiguous must be contiguous on ember too, or a later ``.view(...)``
raises on ember only; a result that PyTorch gives as a view keeps the view's layout. The sweep runs
the op table of ``test_grad_fn_names.py`` plus the cases below (advanced indexing in every dim,
gather/scatter, index_select/take/masked_select, grouped convolutions, pooling, interpolation,
joining, matrix products) on contiguous, transposed and strided inputs, and on channels-last
images.

Differences that would cost a copy or a rewrite of the op are listed in ``KNOWN`` with the reason;
they are strict xfails, so one that gets fixed must leave the list.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.test_grad_fn_names import CASES as NAME_CASES
from tests.test_grad_fn_names import IMG, SQ, A, B, W

torch = pytest.importorskip("torch")

R = np.random.default_rng(5)
X = R.standard_normal((2, 5)).astype(np.float32)
X3 = R.standard_normal((3, 4, 5)).astype(np.float32)
V = R.standard_normal((2, 3, 4, 4, 4)).astype(np.float32)


def _layout(m, a: np.ndarray, kind: str):
    """``a`` as a tensor of module ``m`` laid out as ``kind`` says (same values and shape)."""
    if kind == "contiguous" or a.ndim < 2:
        return m.tensor(a)
    if kind == "transposed":  # the last two dims swapped in memory: x.transpose(-1, -2)
        return m.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    if kind == "strided":  # every other element of a wider tensor
        return m.tensor(np.repeat(a, 2, axis=-1))[..., ::2]
    if kind == "channels_last":  # (N, C, *S) stored as (N, *S, C); other ranks as they are
        if a.ndim not in (4, 5):
            return m.tensor(a)
        last = (0,) + tuple(range(2, a.ndim)) + (1,)
        back = (0, a.ndim - 1) + tuple(range(1, a.ndim - 1))
        return m.tensor(np.ascontiguousarray(a.transpose(last))).permute(*back)
    raise ValueError(kind)


def _name_case(fn):
    return lambda m, F, mk: fn(m, F, mk(A), mk(B), mk(SQ), mk(IMG), mk(W))


def _i(m, *v):
    return m.tensor(list(v))


def _mask(m, *v):
    return m.tensor([bool(b) for b in v])


# name -> fn(m, F, mk): mk(array) makes an input in the layout under test
EXTRA = {
    # advanced indexing: masks and index tensors in each dim, mixed with slices and integers
    "mask_dim1": lambda m, F, mk: mk(X)[:, _mask(m, 1, 0, 1, 1, 0)],
    "mask_dim0": lambda m, F, mk: mk(X3)[_mask(m, 1, 0, 1)],
    "mask_dim2": lambda m, F, mk: mk(X3)[..., _mask(m, 1, 0, 1, 1, 0)],
    "mask_2d_dims12": lambda m, F, mk: mk(X3)[:, m.tensor(X3[0] > 0)],
    "mask_full": lambda m, F, mk: mk(X3)[m.tensor(X3 > 0)],
    "idx_dim0": lambda m, F, mk: mk(X3)[_i(m, 2, 0, 2)],
    "idx_dim1": lambda m, F, mk: mk(X)[:, _i(m, 0, 2)],
    "idx_list_dim1": lambda m, F, mk: mk(X)[:, [0, 2, 4]],
    "idx_2d_dim1": lambda m, F, mk: mk(X)[:, m.tensor([[0, 2], [1, 3]])],
    "idx3_dim1": lambda m, F, mk: mk(X3)[:, _i(m, 0, 2)],
    "idx3_dim2": lambda m, F, mk: mk(X3)[:, :, _i(m, 0, 2)],
    "idx3_dim2_slice": lambda m, F, mk: mk(X3)[:, 1:3, _i(m, 0, 2)],
    "idx3_step_dim1": lambda m, F, mk: mk(X3)[::2, _i(m, 0, 2)],
    "idx3_none_dim1": lambda m, F, mk: mk(X3)[None, :, _i(m, 0, 2)],
    "idx3_dims01": lambda m, F, mk: mk(X3)[_i(m, 0, 2), _i(m, 1, 3)],
    "idx3_dims12": lambda m, F, mk: mk(X3)[:, _i(m, 0, 2), _i(m, 1, 3)],
    "idx3_dims02_apart": lambda m, F, mk: mk(X3)[_i(m, 0, 2), :, _i(m, 1, 3)],
    "idx3_int_then_idx": lambda m, F, mk: mk(X3)[1, :, _i(m, 1, 3)],
    "idx3_idx_then_int": lambda m, F, mk: mk(X3)[:, 1, _i(m, 1, 3)],
    "idx3_mask_and_idx": lambda m, F, mk: mk(X3)[_mask(m, 1, 0, 1), :, _i(m, 1, 3)],
    # the index-along-a-dim ops
    "index_select0": lambda m, F, mk: mk(X3).index_select(0, _i(m, 2, 0)),
    "index_select1": lambda m, F, mk: mk(X).index_select(1, _i(m, 0, 2)),
    "index_select2": lambda m, F, mk: mk(X3).index_select(2, _i(m, 4, 0, 1)),
    "take": lambda m, F, mk: mk(X3).take(m.tensor([[0, 5], [7, 9]])),
    "masked_select": lambda m, F, mk: mk(X3).masked_select(m.tensor(X3 > 0)),
    "gather1": lambda m, F, mk: mk(X3).gather(1, m.zeros(3, 2, 5, dtype=m.int64)),
    "gather2": lambda m, F, mk: mk(X3).gather(2, m.zeros(3, 4, 2, dtype=m.int64)),
    "scatter1": lambda m, F, mk: mk(X3).scatter(1, m.zeros(3, 1, 5, dtype=m.int64), 1.0),
    "scatter_add2": lambda m, F, mk: mk(X3).scatter_add(2, m.zeros(3, 4, 5, dtype=m.int64),
                                                        mk(X3)),
    "take_along_dim2": lambda m, F, mk: m.take_along_dim(mk(X3), m.zeros(3, 4, 1, dtype=m.int64),
                                                         2),
    "index_add1": lambda m, F, mk: mk(X3).index_add(1, _i(m, 0, 1), m.ones(3, 2, 5)),
    "index_copy2": lambda m, F, mk: mk(X3).index_copy(2, _i(m, 0, 1), m.ones(3, 4, 2)),
    "index_fill2": lambda m, F, mk: mk(X3).index_fill(2, _i(m, 0, 1), 2.0),
    "masked_fill": lambda m, F, mk: mk(X3).masked_fill(m.tensor(X3 > 0), 1.0),
    "nonzero": lambda m, F, mk: (mk(X3) > 0).nonzero(),
    # convolutions, grouped and not
    "conv1d": lambda m, F, mk: F.conv1d(mk(X3), m.ones(6, 4, 2)),
    "conv1d_groups": lambda m, F, mk: F.conv1d(mk(X3), m.ones(4, 1, 2), groups=4),
    "conv2d_groups": lambda m, F, mk: F.conv2d(mk(IMG), m.ones(6, 1, 2, 2), groups=3),
    "conv2d_depthwise_bias": lambda m, F, mk: F.conv2d(mk(IMG), m.ones(3, 1, 3, 3), m.ones(3),
                                                       padding=1, groups=3),
    "conv3d": lambda m, F, mk: F.conv3d(mk(V), m.ones(4, 3, 2, 2, 2)),
    "conv3d_groups": lambda m, F, mk: F.conv3d(m.rand(3, 5, 7, 7, 7), m.ones(5, 1, 2, 2, 2),
                                               groups=5),
    "conv3d_groups_stride_bias": lambda m, F, mk: F.conv3d(
        m.ones(2, 4, 6, 6, 6), m.ones(4, 2, 3, 3, 3), m.ones(4), groups=2, stride=2, padding=1),
    "conv_transpose1d": lambda m, F, mk: F.conv_transpose1d(mk(X3), m.ones(4, 2, 3)),
    "conv_transpose2d_groups": lambda m, F, mk: F.conv_transpose2d(mk(IMG), m.ones(3, 1, 2, 2),
                                                                   groups=3),
    "conv_transpose3d": lambda m, F, mk: F.conv_transpose3d(mk(V), m.ones(3, 2, 2, 2, 2)),
    "conv_transpose3d_padding": lambda m, F, mk: F.conv_transpose3d(
        mk(V), m.ones(3, 2, 2, 2, 2), stride=2, padding=1),
    # pooling
    "max_pool1d": lambda m, F, mk: F.max_pool1d(mk(X3), 2),
    "avg_pool1d": lambda m, F, mk: F.avg_pool1d(mk(X3), 2),
    "max_pool2d": lambda m, F, mk: F.max_pool2d(mk(IMG), 2),
    "max_pool2d_indices": lambda m, F, mk: F.max_pool2d(mk(IMG), 2, return_indices=True)[1],
    "avg_pool2d": lambda m, F, mk: F.avg_pool2d(mk(IMG), 3, stride=2, padding=1),
    "max_pool3d": lambda m, F, mk: F.max_pool3d(mk(V), 2),
    "avg_pool3d": lambda m, F, mk: F.avg_pool3d(mk(V), 2),
    "adaptive_avg_pool1d": lambda m, F, mk: F.adaptive_avg_pool1d(mk(X3), 2),
    "adaptive_avg_pool2d_1": lambda m, F, mk: F.adaptive_avg_pool2d(mk(IMG), 1),
    "adaptive_avg_pool2d_3": lambda m, F, mk: F.adaptive_avg_pool2d(mk(IMG), 3),
    "adaptive_max_pool2d": lambda m, F, mk: F.adaptive_max_pool2d(mk(IMG), 2),
    "adaptive_avg_pool3d": lambda m, F, mk: F.adaptive_avg_pool3d(mk(V), 2),
    # resampling and padding
    "interpolate_nearest": lambda m, F, mk: F.interpolate(mk(IMG), scale_factor=2),
    "interpolate_bilinear": lambda m, F, mk: F.interpolate(mk(IMG), scale_factor=2,
                                                           mode="bilinear"),
    "interpolate_linear": lambda m, F, mk: F.interpolate(mk(X3), scale_factor=2, mode="linear"),
    "interpolate_area": lambda m, F, mk: F.interpolate(mk(IMG), size=(2, 2), mode="area"),
    "pad_reflect": lambda m, F, mk: F.pad(mk(X3), (1, 1), mode="reflect"),
    "pad_constant": lambda m, F, mk: F.pad(mk(X3), (1, 1, 2, 0)),
    "unfold": lambda m, F, mk: F.unfold(mk(IMG), 2),
    # joining
    "cat0": lambda m, F, mk: m.cat([mk(X3), mk(X3)]),
    "cat1": lambda m, F, mk: m.cat([mk(X3), mk(X3)], 1),
    "cat2": lambda m, F, mk: m.cat([mk(X3), mk(X3)], 2),
    "stack0": lambda m, F, mk: m.stack([mk(X3), mk(X3)]),
    "stack2": lambda m, F, mk: m.stack([mk(X3), mk(X3)], 2),
    "stack3": lambda m, F, mk: m.stack([mk(X3), mk(X3)], 3),
    "hstack": lambda m, F, mk: m.hstack([mk(X3), mk(X3)]),
    # matrix products
    "matmul_2d": lambda m, F, mk: mk(X) @ mk(X).t(),
    "matmul_t_2d": lambda m, F, mk: mk(X).t() @ mk(X),
    "matmul_3d": lambda m, F, mk: mk(X3) @ mk(X3).transpose(1, 2),
    "matmul_3d_2d": lambda m, F, mk: mk(X3) @ mk(X).t(),
    "matmul_3d_1d": lambda m, F, mk: mk(X3) @ mk(X)[0],
    "bmm": lambda m, F, mk: m.bmm(mk(X3), mk(X3).transpose(1, 2)),
    "baddbmm": lambda m, F, mk: m.baddbmm(m.zeros(3, 4, 4), mk(X3), mk(X3).transpose(1, 2)),
    "einsum_batched": lambda m, F, mk: m.einsum("bij,bkj->bik", mk(X3), mk(X3)),
    "einsum_2d": lambda m, F, mk: m.einsum("ij,kj->ik", mk(X), mk(X)),
    "tensordot": lambda m, F, mk: m.tensordot(mk(X3), mk(X), dims=([2], [1])),
    "linear_3d": lambda m, F, mk: F.linear(mk(X3), mk(X)),
    # a few more: copies that must come out contiguous
    "clone_contiguous_format": lambda m, F, mk: mk(X3).clone(memory_format=m.contiguous_format),
    "layer_norm": lambda m, F, mk: F.layer_norm(mk(X3), (5,)),
    "softmax1": lambda m, F, mk: mk(X3).softmax(1),
}

CASES = {**{f"table:{k}": _name_case(f) for k, f in NAME_CASES.items()}, **EXTRA}
LAYOUTS = ["contiguous", "transposed", "strided", "channels_last"]

# (case, layout) -> why ember's layout differs from PyTorch's; a layout of None means all
_LAPACK = ("PyTorch returns LAPACK's column-major result (a transposed layout); ember's is "
           "C-contiguous: every op accepts both, and .view works on ember's")
_CHANNELS_LAST = ("ember does not propagate channels_last: convolutions, pooling, normalization "
                  "and interpolation return contiguous (N, C, ...) results")
_KEEPS_PERMUTED = ("PyTorch keeps a permuted input's dim order here; ember returns a contiguous "
                   "result (a harmless difference: .view works on ember's)")
KNOWN: dict[tuple[str, str | None], str] = {
    ("table:inverse", None): _LAPACK,
    ("table:linalg_inv", None): _LAPACK,
    ("table:cholesky", None): _LAPACK,
    ("table:rot90", "contiguous"): "PyTorch's rot90 is a flip then a transposed view; "
                                   "ember's is a contiguous copy",
    ("table:rot90", "strided"): "as on contiguous inputs",
    ("table:rot90", "channels_last"): "as on contiguous inputs (a 2-D input)",
    ("table:sort", "transposed"): _KEEPS_PERMUTED,
    ("table:kron", "transposed"): _KEEPS_PERMUTED,
    ("table:F.gelu", "transposed"): _KEEPS_PERMUTED,
    ("index_fill2", "transposed"): _KEEPS_PERMUTED,
    ("avg_pool1d", "transposed"): _KEEPS_PERMUTED,
    ("adaptive_avg_pool1d", "transposed"): _KEEPS_PERMUTED,
    ("table:rpow", "transposed"): "2 ** x keeps x's layout on ember (NumPy's ufunc rule, as for "
                                  "every other pointwise op); PyTorch's pow with a number base "
                                  "gives a contiguous result",
    ("table:F.batch_norm", "transposed"): "ember's batch norm keeps the input's layout (the "
                                          "pointwise rule); PyTorch copies an input permuted "
                                          "other than channels_last to a contiguous one",
    **{(case, "channels_last"): _CHANNELS_LAST for case in (
        "table:F.group_norm", "table:F.conv2d", "table:F.max_pool2d", "table:F.avg_pool2d",
        "conv2d_groups", "conv2d_depthwise_bias", "conv3d", "conv_transpose2d_groups",
        "conv_transpose3d", "conv_transpose3d_padding", "max_pool2d", "max_pool2d_indices",
        "avg_pool2d", "max_pool3d", "adaptive_avg_pool2d_3", "adaptive_max_pool2d",
        "interpolate_nearest", "interpolate_bilinear", "interpolate_area")},
}


def _known(case: str, layout: str) -> str | None:
    return KNOWN.get((case, layout)) or KNOWN.get((case, None))


def _params():
    out = []
    for layout in LAYOUTS:
        for case in CASES:
            reason = _known(case, layout)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, layout, marks=marks, id=f"{layout}-{case}"))
    return out


def _first(out):
    return out[0] if isinstance(out, tuple | list) else out


def _run(m, case: str, layout: str):
    F = m.nn.functional
    images = []

    def mk(a):
        images.append(a.ndim in (4, 5))
        return _layout(m, a, layout)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.manual_seed(0)
        out = _first(CASES[case](m, F, mk))
    if layout == "channels_last" and not any(images):
        pytest.skip("no image input: channels_last is the contiguous case")
    return out


def _dense_strides(t) -> tuple | None:
    """The strides of the dims longer than 1, when ``t`` covers its memory without gaps
    (contiguous in some dim order); None otherwise (a broadcast or sliced view)."""
    dims = [(s, n) for s, n in zip(t.stride(), t.shape) if n > 1]
    expect = 1
    for s, n in sorted(dims):
        if s != expect:
            return None
        expect *= n
    return tuple(s for s, _ in dims)


def _layout_of(t) -> tuple:
    return t.is_contiguous(), _dense_strides(t)


@pytest.mark.parametrize("case,layout", _params())
def test_result_layout_matches_torch(case, layout):
    try:
        expected = _run(torch, case, layout)
    except RuntimeError:  # x.view(...) of a transposed x: ember refuses it too
        with pytest.raises(RuntimeError):
            _run(ember, case, layout)
        return
    got = _run(ember, case, layout)
    assert tuple(got.shape) == tuple(expected.shape)
    assert _layout_of(got) == _layout_of(expected), (
        f"{case} on {layout} inputs: ember is_contiguous={got.is_contiguous()} strides "
        f"{got.stride()}, torch is_contiguous={expected.is_contiguous()} strides "
        f"{expected.stride()}")


def test_the_issue_cases_view_after_the_op():
    """The report: each result feeds a ``.view`` that PyTorch accepts."""
    F = ember.nn.functional
    y = F.conv3d(ember.rand(3, 5, 7, 7, 7), ember.ones(5, 1, 2, 2, 2), groups=5)
    assert y.is_contiguous() and y.view(3, -1).shape == (3, 1080)
    x = ember.rand(2, 5)
    mask = ember.tensor([True, False, True, True, False])
    idx = ember.tensor([0, 2])
    for r in (x[:, mask], x[:, idx], x.index_select(1, idx)):
        assert r.is_contiguous() and r.stride() == (r.shape[1], 1)
        assert r.view(-1).shape[0] == r.numel()


@pytest.mark.parametrize("key", [
    lambda m: (slice(None), m.tensor([0, 2, 2])),
    lambda m: (slice(None), slice(None), m.tensor([4, 0, 4])),
    lambda m: (slice(None), m.tensor([0, 2]), m.tensor([1, 1])),
    lambda m: (m.tensor([0, 2]), slice(None), m.tensor([1, 3])),
    lambda m: (slice(1, 3), m.tensor([True, False, True, True])),
])
def test_advanced_index_gradient_is_contiguous(key):
    """x.grad after ``x[key]`` (repeated indices add up) is laid out as PyTorch's, the same
    values."""
    grads = []
    for m in (torch, ember):
        x = m.tensor(X3, requires_grad=True)
        y = x[key(m)]
        (y * m.arange(y.numel(), dtype=m.float32).reshape(y.shape)).sum().backward()
        grads.append(x.grad)
    want, got = grads
    assert _layout_of(got) == _layout_of(want)
    np.testing.assert_allclose(got.numpy(), want.numpy())
