"""The ``torch.*`` namespace's own signatures, called as PyTorch programs call them, beside the
installed PyTorch: the nn ops PyTorch binds with ATen's schema (``torch.dropout(input, p,
train)``, ``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
eps, cudnn_enabled)``, ``torch.embedding(weight, indices)``...), NumPy's names on
``nn.functional``'s builtins, and the creation, reduction and method signatures the gap table
used to list.

Each case runs the same call on both engines: the same values (dtype, shape), or an error of the
same type on both.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _x(m: Any, *shape: int) -> Any:
    n = int(np.prod(shape))
    return m.tensor(((np.arange(n, dtype=np.float32) * 7 % 11) / 5 - 1).reshape(shape))


def _leaves(r: Any) -> list:
    if isinstance(r, (tuple, list)):
        return [v for item in r for v in _leaves(item)]
    return [r]


def _run(call: Callable, m: Any) -> tuple[Any, BaseException | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call(m), None
        except Exception as e:  # noqa: BLE001 - compared, not raised
            return None, e


def same_as_torch(call: Callable) -> Any:
    """Run ``call(module)`` on ember and on PyTorch; assert the same results or error type."""
    (mine, err_e), (ref, err_t) = _run(call, ember), _run(call, torch)
    if err_t is not None or err_e is not None:
        assert type(err_e) is type(err_t) or (
            isinstance(err_e, TypeError) and isinstance(err_t, TypeError)), (err_e, err_t)
        return None
    a, b = _leaves(mine), _leaves(ref)
    assert len(a) == len(b), (mine, ref)
    for x, y in zip(a, b):
        if isinstance(y, torch.Tensor):
            assert isinstance(x, ember.Tensor), (x, y)
            assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1], (x.dtype, y.dtype)
            assert tuple(x.shape) == tuple(y.shape), (x.shape, y.shape)
            np.testing.assert_allclose(x.detach().numpy().astype(np.float64),
                                       y.detach().numpy().astype(np.float64),
                                       rtol=1e-5, atol=1e-6)
        else:
            assert x == y or str(x) == str(y), (x, y)  # (dtypes compare by name)
    return mine


def _bn(m: Any, fn: Callable) -> Any:
    x = _x(m, 4, 3, 5)
    rm, rv = m.zeros(3), m.ones(3)
    w, b = m.tensor([1.0, 2.0, 0.5]), m.tensor([0.0, 0.1, -0.2])
    return fn(x, w, b, rm, rv), rm, rv


NAMESPACE_CALLS = {
    # dropout: (input, p, train), all required, train a bool
    "dropout": lambda m: m.dropout(_x(m, 2, 3), 0.5, False),
    "dropout_kw": lambda m: m.dropout(input=_x(m, 2, 3), p=0.0, train=True),
    "dropout_x": lambda m: m.dropout(x=_x(m, 2, 3), p=0.3, train=False),
    "dropout_no_train": lambda m: m.dropout(_x(m, 2, 3), 0.5),
    "dropout_training": lambda m: m.dropout(_x(m, 2, 3), 0.5, training=False),
    "dropout_inplace": lambda m: m.dropout(_x(m, 2, 3), 0.5, False, inplace=True),
    "dropout_train_none": lambda m: m.dropout(_x(m, 2, 3), 0.5, None),
    "dropout_bad_p": lambda m: m.dropout(_x(m, 2, 3), 1.5, True),
    "alpha_dropout_bad_p": lambda m: m.alpha_dropout(_x(m, 2, 3), -0.1, True),
    "alpha_dropout_all": lambda m: m.alpha_dropout(_x(m, 2, 3), 1.0, True),
    "feature_alpha_dropout_all": lambda m: m.feature_alpha_dropout(_x(m, 2, 3, 2), 1.0, True),
    "dropout_all": lambda m: m.dropout(_x(m, 2, 3), 1.0, True),
    "alpha_dropout": lambda m: m.alpha_dropout(_x(m, 2, 3), 0.5, train=False),
    "alpha_dropout_no_train": lambda m: m.alpha_dropout(_x(m, 2, 3), p=0.5),
    "feature_alpha_dropout": lambda m: m.feature_alpha_dropout(_x(m, 2, 3, 2), 0.2, False),
    # normalization: ATen's order, every parameter of batch/instance norm required
    "batch_norm_train": lambda m: _bn(m, lambda x, w, b, rm, rv: m.batch_norm(
        x, w, b, rm, rv, True, 0.1, 1e-5, False)),
    "batch_norm_eval_kw": lambda m: _bn(m, lambda x, w, b, rm, rv: m.batch_norm(
        input=x, weight=w, bias=b, running_mean=rm, running_var=rv, training=False,
        momentum=0.1, eps=1e-3, cudnn_enabled=True)),
    "batch_norm_no_stats_eval": lambda m: _bn(m, lambda x, w, b, rm, rv: m.batch_norm(
        x, None, None, None, None, False, 0.1, 1e-5, False)),
    "batch_norm_functional_order": lambda m: _bn(m, lambda x, w, b, rm, rv: m.batch_norm(
        x, rm, rv, w, b)),
    "instance_norm": lambda m: _bn(m, lambda x, w, b, rm, rv: m.instance_norm(
        x, w, b, rm, rv, True, 0.1, 1e-5, False)),
    "instance_norm_kw": lambda m: _bn(m, lambda x, w, b, rm, rv: m.instance_norm(
        input=x, weight=None, bias=None, running_mean=None, running_var=None,
        use_input_stats=True, momentum=0.1, eps=1e-5, cudnn_enabled=False)),
    "layer_norm": lambda m: m.layer_norm(_x(m, 2, 3), [3], None, None, 1e-5, False),
    "layer_norm_kw": lambda m: m.layer_norm(_x(m, 2, 3), normalized_shape=(3,),
                                            cudnn_enable=True),
    "group_norm": lambda m: m.group_norm(_x(m, 2, 4, 3), 2, cudnn_enabled=False),
    "group_norm_positional": lambda m: m.group_norm(_x(m, 2, 4, 3), 2, m.ones(4), m.zeros(4),
                                                    1e-3, True),
    # embedding: (weight, indices)
    "embedding": lambda m: m.embedding(_x(m, 5, 3), m.tensor([[1, 4], [0, 1]])),
    "embedding_kw": lambda m: m.embedding(weight=_x(m, 5, 3), indices=m.tensor([2, 0]),
                                          padding_idx=0, scale_grad_by_freq=False, sparse=False),
    "embedding_max_norm": lambda m: m.embedding(_x(m, 5, 3), m.tensor([2]), max_norm=1.0),
    "embedding_input": lambda m: m.embedding(input=m.tensor([2]), weight=_x(m, 5, 3)),
    # pooling: no return_indices; adaptive_max_pool1d gives (values, indices)
    "max_pool1d": lambda m: m.max_pool1d(_x(m, 1, 2, 6), 2),
    "max_pool2d_kw": lambda m: m.max_pool2d(_x(m, 1, 4, 4), kernel_size=2, stride=1,
                                            padding=1, dilation=1, ceil_mode=True),
    "max_pool3d": lambda m: m.max_pool3d(_x(m, 1, 2, 4, 4, 4), 2, None),
    "max_pool1d_indices": lambda m: m.max_pool1d(_x(m, 1, 2, 6), 2, return_indices=True),
    "adaptive_max_pool1d": lambda m: m.adaptive_max_pool1d(_x(m, 1, 2, 6), 3),
    "adaptive_max_pool1d_indices": lambda m: m.adaptive_max_pool1d(_x(m, 1, 2, 6), 3, True),
    "adaptive_avg_pool1d_x": lambda m: m.adaptive_avg_pool1d(x=_x(m, 1, 2, 6), output_size=2),
    # activations: no inplace=
    "celu": lambda m: m.celu(x=_x(m, 2, 3), alpha=0.5),
    "celu_inplace": lambda m: m.celu(_x(m, 2, 3), 1.0, inplace=True),
    "celu_zero": lambda m: m.celu(_x(m, 2, 3), 0.0),
    "selu": lambda m: m.selu(input=_x(m, 2, 3)),
    "selu_positional_inplace": lambda m: m.selu(_x(m, 2, 3), True),
    "threshold_out": lambda m: (lambda o: (m.threshold(_x(m, 2, 3), 0.1, 9.0, out=o), o))(
        m.zeros(2, 3)),
    "threshold_inplace": lambda m: m.threshold(_x(m, 2, 3), 0.1, 9.0, True),
    "rrelu_eval": lambda m: m.rrelu(_x(m, 2, 3), 0.1, 0.3, False, None),
    "rrelu_inplace": lambda m: m.rrelu(_x(m, 2, 3), inplace=True),
    "hardshrink_x": lambda m: m.hardshrink(x=_x(m, 2, 3), lambd=0.3),
    # distances: NumPy's names, as PyTorch's builtins take them
    "cosine_similarity_axis": lambda m: m.cosine_similarity(_x(m, 2, 3), _x(m, 2, 3) + 1,
                                                            axis=0),
    "pairwise_distance_keepdims": lambda m: m.pairwise_distance(_x(m, 2, 3), _x(m, 2, 3) * 2,
                                                                keepdims=True),
    "pdist_x": lambda m: m.pdist(x=_x(m, 3, 2)),
    # the view_copy ops' autogenerated out=
    "slice_scatter_out": lambda m: (lambda o: (m.slice_scatter(m.zeros(4, 3), m.ones(2, 3), 0,
                                                               1, 3, out=o), o))(m.empty(4, 3)),
    "expand_copy_out": lambda m: (lambda o: m.expand_copy(m.ones(1, 3), (2, 3), out=o))(
        m.empty(2, 3)),
}


@pytest.mark.parametrize("name", sorted(NAMESPACE_CALLS))
def test_namespace_call_matches_pytorch(name: str) -> None:
    same_as_torch(NAMESPACE_CALLS[name])


FUNCTIONAL_CALLS = {
    "gelu_x": lambda F, m: F.gelu(x=_x(m, 2, 3), approximate="tanh"),
    "softplus_x": lambda F, m: F.softplus(x=_x(m, 2, 3), beta=2.0),
    "softshrink_x": lambda F, m: F.softshrink(x=_x(m, 2, 3)),
    "hardshrink_x": lambda F, m: F.hardshrink(x=_x(m, 2, 3)),
    "pdist_x": lambda F, m: F.pdist(x=_x(m, 3, 2)),
    "adaptive_avg_pool1d_x": lambda F, m: F.adaptive_avg_pool1d(x=_x(m, 1, 2, 6), output_size=3),
    "cosine_similarity_axis": lambda F, m: F.cosine_similarity(_x(m, 2, 3), _x(m, 2, 3) + 1,
                                                               axis=1),
    "pairwise_distance_keepdims": lambda F, m: F.pairwise_distance(
        _x(m, 2, 3), _x(m, 2, 3) * 2, keepdims=True),
    "softmax_axis": lambda F, m: F.softmax(_x(m, 2, 3), axis=1),  # Python-level: refused
    "relu_x": lambda F, m: F.relu(x=_x(m, 2, 3)),  # Python-level: refused
    "gelu_x_and_input": lambda F, m: F.gelu(_x(m, 2, 3), x=_x(m, 2, 3)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_CALLS))
def test_functional_builtins_take_numpy_names_as_pytorch(name: str) -> None:
    same_as_torch(lambda m: FUNCTIONAL_CALLS[name](m.nn.functional, m))


def test_embedding_padding_row_gets_no_gradient_as_in_pytorch() -> None:
    def grads(m: Any, padding_idx: int) -> Any:
        w = _x(m, 5, 3).requires_grad_()
        m.embedding(w, m.tensor([0, 2, 0, 1]), padding_idx).sum().backward()
        return w.grad

    for padding_idx in (0, 2, -1):
        mine, ref = grads(ember, padding_idx), grads(torch, padding_idx)
        np.testing.assert_array_equal(mine.numpy(), ref.numpy())


def test_batch_norm_updates_running_stats_as_pytorch() -> None:
    mine = NAMESPACE_CALLS["batch_norm_train"](ember)
    ref = NAMESPACE_CALLS["batch_norm_train"](torch)
    for a, b in zip(mine[1:], ref[1:]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_rrelu_draws_from_its_generator() -> None:
    x = _x(ember, 4, 5)
    a = ember.rrelu(x, 0.1, 0.3, True, ember.Generator().manual_seed(3))
    b = ember.rrelu(x, 0.1, 0.3, training=True, generator=ember.Generator().manual_seed(3))
    c = ember.rrelu(x, 0.1, 0.3, True, ember.Generator().manual_seed(4))
    assert ember.equal(a, b) and not ember.equal(a, c)
    neg = x < 0
    slopes = (a[neg] / x[neg]).numpy()
    assert ((slopes >= 0.1 - 1e-6) & (slopes <= 0.3 + 1e-6)).all()


def test_namespace_forms_do_not_change_nn_functional() -> None:
    """``F.dropout(x, 0.5, training=False)``, ``F.batch_norm(x, rm, rv)``: F keeps its own."""
    F = ember.nn.functional
    x = _x(ember, 4, 3)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.embedding(ember.tensor([1]), _x(ember, 5, 3)).shape == (1, 3)
    assert F.max_pool1d(_x(ember, 1, 2, 6), 2, return_indices=True)[1].dtype == ember.int64
    assert ember.dropout is not F.dropout


LINALG_CALLS = {
    "vector_norm_input": lambda m: m.linalg.vector_norm(input=_x(m, 2, 3), ord=1, dim=1),
    "vector_norm_x": lambda m: m.linalg.vector_norm(x=_x(m, 2, 3), keepdims=True),
    "vector_norm_positional": lambda m: m.linalg.vector_norm(_x(m, 2, 3), 2, 1, True),
    "matrix_norm_keepdims": lambda m: m.linalg.matrix_norm(_x(m, 2, 3), keepdims=True),
    "matrix_norm_x": lambda m: m.linalg.matrix_norm(x=_x(m, 2, 3), ord="nuc"),
    "norm_axis": lambda m: m.linalg.norm(_x(m, 2, 3), axis=1),
    "norm_x_keepdims": lambda m: m.linalg.norm(x=_x(m, 2, 3), keepdims=True),
    "vecdot_axis": lambda m: m.linalg.vecdot(_x(m, 2, 3), _x(m, 2, 3), axis=0),
    "vector_norm_both": lambda m: m.linalg.vector_norm(_x(m, 2, 3), x=_x(m, 2, 3)),
    "torch_norm_axis": lambda m: m.norm(_x(m, 2, 3), axis=1),  # Python-level: refused
}


@pytest.mark.parametrize("name", sorted(LINALG_CALLS))
def test_linalg_names_as_pytorch(name: str) -> None:
    same_as_torch(LINALG_CALLS[name])


MORE_CALLS = {
    # var/std: unbiased defaults to True, positionally after dim
    "var_unbiased_default": lambda m: _x(m, 3, 4).var(1),
    "std_positional": lambda m: _x(m, 3, 4).std(1, False, True),
    "std_bool_first": lambda m: m.std(_x(m, 3, 4), False),
    "var_mean_bool": lambda m: m.var_mean(_x(m, 3, 4), True),
    "var_correction": lambda m: m.var(_x(m, 3, 4), 1, correction=0),
    "var_unbiased_false_and_correction": lambda m: m.var(_x(m, 3, 4), unbiased=False,
                                                         correction=1),
    # Tensor.norm: dtype fourth, no out=
    "tensor_norm_positional": lambda m: _x(m, 3, 4).norm(2, 1, False, m.float64),
    "tensor_norm_out": lambda m: _x(m, 3, 4).norm(2, 1, out=m.empty(3)),
    # methods
    "type_as_x2": lambda m: _x(m, 2, 2).type_as(x2=m.zeros(1, dtype=m.float64)),
    "type_as_other": lambda m: _x(m, 2, 2).type_as(other=m.zeros(1, dtype=m.int32)),
    "is_pinned_device": lambda m: _x(m, 2).is_pinned(device=None),
    "dim_order": lambda m: _x(m, 2, 3).t().dim_order(ambiguity_check=True),
    "dim_order_ambiguous": lambda m: _x(m, 1, 3).dim_order(ambiguity_check=True),
    "dim_order_list": lambda m: _x(m, 1).dim_order(ambiguity_check=[m.contiguous_format]),
    "dim_order_bad": lambda m: _x(m, 2, 3).dim_order(ambiguity_check=1),
    "dim_order_positional": lambda m: _x(m, 2, 3).dim_order(True),
    "repeat_interleave_method_needs_repeats": lambda m: m.tensor([1, 2]).repeat_interleave(),
    # isin's overloads
    "isin_element": lambda m: m.isin(element=2, test_elements=m.tensor([1, 2])),
    "isin_test_element": lambda m: m.isin(m.tensor([1, 2, 3]), test_element=3),
    "isin_scalar_positional": lambda m: m.isin(1, m.tensor([1, 2])),
    "isin_two_numbers": lambda m: m.isin(element=1, test_element=1),
    "isin_tensor_as_element": lambda m: m.isin(element=m.tensor([1, 2]),
                                               test_elements=m.tensor([1])),
    # trapezoid's dx
    "trapezoid_default": lambda m: m.trapezoid(_x(m, 2, 5)),
    "trapezoid_dx": lambda m: m.trapezoid(_x(m, 2, 5), dx=0.5, dim=0),
    "trapezoid_dx_none": lambda m: m.trapezoid(_x(m, 2, 5), dx=None),
    "cumulative_trapezoid_dx": lambda m: m.cumulative_trapezoid(_x(m, 2, 5), dx=2),
    "trapz_x": lambda m: m.trapz(_x(m, 5), m.tensor([0.0, 1, 3, 4, 7])),
    # repeat_interleave's one-tensor overload
    "repeat_interleave_repeats_kw": lambda m: m.repeat_interleave(repeats=m.tensor([1, 2])),
    "repeat_interleave_one": lambda m: m.repeat_interleave(m.tensor([2, 0, 1])),
    "repeat_interleave_one_dim": lambda m: m.repeat_interleave(m.tensor([1, 2]), dim=0),
    "repeat_interleave_full": lambda m: m.repeat_interleave(_x(m, 2, 2), repeats=2, dim=1),
    "repeat_interleave_input_only": lambda m: m.repeat_interleave(input=m.tensor([1, 2])),
    "repeat_interleave_x": lambda m: m.repeat_interleave(x=_x(m, 2, 2), repeats=2, axis=0),
    "repeat_interleave_output_size": lambda m: m.repeat_interleave(m.tensor([1, 2]),
                                                                   output_size=3),
    # factory keywords
    "hann_window_pin": lambda m: m.hann_window(5, pin_memory=False, requires_grad=False),
    "kaiser_window_pin": lambda m: m.kaiser_window(6, False, 5.0, pin_memory=False),
    "tril_indices_kw": lambda m: m.tril_indices(3, 4, 1, pin_memory=False, requires_grad=False),
    "triu_indices_grad": lambda m: m.triu_indices(3, 3, requires_grad=True),
    # names from the schemas
    "is_floating_point_input": lambda m: m.is_floating_point(input=_x(m, 2)),
    "is_floating_point_x": lambda m: m.is_floating_point(x=m.tensor([1])),
    "promote_types": lambda m: m.promote_types(type1=m.int32, type2=m.float16),
    "set_rng_state": lambda m: m.set_rng_state(new_state=m.get_rng_state()),
    "from_dlpack_device": lambda m: m.from_dlpack(np.arange(3.0), device="cpu", copy=None),
}


@pytest.mark.parametrize("name", sorted(MORE_CALLS))
def test_more_signatures_as_pytorch(name: str) -> None:
    same_as_torch(MORE_CALLS[name])


def test_from_dlpack_copy_as_pytorch() -> None:
    for m in (ember, torch):
        a = np.arange(3.0)
        m.from_dlpack(a)[0] = 5.0
        m.from_dlpack(a, copy=True)[1] = 7.0
        assert a.tolist() == [5.0, 1.0, 2.0], m


CREATION_AND_SHAPE_CALLS = {
    "eye_none": lambda m: m.eye(2, None),
    "eye_m_none": lambda m: m.eye(2, m=None),
    "eye_kw": lambda m: m.eye(n=2, m=3),
    "arange_start_only": lambda m: m.arange(start=1),
    "arange_end_kw": lambda m: m.arange(end=4),
    "arange_step_end": lambda m: m.arange(step=2, end=5),
    "arange_typo": lambda m: m.arange(5, dtpye=m.float64),
    "randint_low_size": lambda m: m.randint(low=2, size=(3,)),
    "randint_high_size": lambda m: m.randint(high=2, size=(3,)).shape,
    "randint_like_low": lambda m: m.randint_like(m.zeros(2, 3), low=2),
    "randint_like_high": lambda m: m.randint_like(m.zeros(2, 3), high=2).shape,
    # torch.reshape/permute/flip/tile take one sequence; the methods take varargs too
    "reshape_varargs": lambda m: m.reshape(_x(m, 3, 4), 4, 3),
    "reshape_int": lambda m: m.reshape(_x(m, 3, 4), 12),
    "reshape_seq": lambda m: m.reshape(_x(m, 3, 4), (4, 3)),
    "reshape_kw": lambda m: m.reshape(input=_x(m, 3, 4), shape=[2, 6]),
    "reshape_x": lambda m: m.reshape(x=_x(m, 3, 4), shape=[2, 6]),
    "permute_varargs": lambda m: m.permute(_x(m, 3, 4), 1, 0),
    "permute_seq": lambda m: m.permute(_x(m, 3, 4), (1, 0)),
    "flip_int": lambda m: m.flip(_x(m, 3, 4), 0),
    "flip_seq": lambda m: m.flip(_x(m, 3, 4), dims=[0]),
    "tile_int": lambda m: m.tile(_x(m, 3, 4), 2),
    "tile_seq": lambda m: m.tile(_x(m, 3, 4), (2, 1)),
    "method_reshape_both": lambda m: _x(m, 3, 4).reshape(2, shape=(2, 6)),
    "method_permute_both": lambda m: _x(m, 3, 4).permute(1, dims=(1, 0)),
    "method_flip_varargs": lambda m: _x(m, 3, 4).flip(0, 1),
    "method_tile_varargs": lambda m: _x(m, 3, 4).tile(2, 1),
}


@pytest.mark.parametrize("name", sorted(CREATION_AND_SHAPE_CALLS))
def test_creation_and_shape_signatures_as_pytorch(name: str) -> None:
    same_as_torch(CREATION_AND_SHAPE_CALLS[name])


RESULT_TYPE_CALLS = {
    "tensor_number": lambda m: m.result_type(m.ones(2, dtype=m.int32), 1.0),
    "numbers": lambda m: m.result_type(1, 2.0),
    "number_tensor": lambda m: m.result_type(1, m.ones(2, dtype=m.float16)),
    "kw_tensor_other": lambda m: m.result_type(tensor=m.ones(2, dtype=m.int32), other=1.0),
    "kw_x2": lambda m: m.result_type(tensor=m.ones(2, dtype=m.int32), x2=m.ones(1)),
    "kw_scalar_tensor": lambda m: m.result_type(scalar=1.0, tensor=m.ones(2, dtype=m.int64)),
    "kw_scalars": lambda m: m.result_type(scalar1=1, scalar2=2.0),
    "three": lambda m: m.result_type(m.ones(2), m.ones(2), m.ones(2)),
    "scalar_other": lambda m: m.result_type(scalar=1, other=m.ones(2)),
    "tensor_is_number": lambda m: m.result_type(tensor=1, other=2),
    "typo": lambda m: m.result_type(m.ones(2), tensr=1),
}


@pytest.mark.parametrize("name", sorted(RESULT_TYPE_CALLS))
def test_result_type_overloads_as_pytorch(name: str) -> None:
    same_as_torch(RESULT_TYPE_CALLS[name])
