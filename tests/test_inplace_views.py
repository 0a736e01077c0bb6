"""In-place ops through views under autograd, each program run on ember and on PyTorch.

Every case is a function of the module (``ember`` or ``torch``) returning what a user would look
at: values, gradients, ``grad_fn`` names, ``requires_grad``. Both engines must agree, including on
whether the program raises (the messages may differ: ours add the fix).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _val(x):
    if x is None or isinstance(x, bool | int | float | str):
        return x
    if isinstance(x, tuple | list):
        return [_val(v) for v in x]
    if hasattr(x, "detach"):
        return np.asarray(x.detach().numpy(), dtype=np.float64).round(5).tolist()
    return type(x).__name__  # a grad_fn node: compare by name


def _run(case, mod):
    try:
        return ("ok", _val(case(mod)))
    except RuntimeError as e:
        return ("RuntimeError", str(e).split(".")[0][:40])


def issue_example(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    b[:2].mul_(3)
    b.sum().backward()
    return a.grad


def mean_after_view_add(t):
    a = t.arange(6.0, dtype=t.float64).requires_grad_()
    b = a * 1
    b[1:4].add_(5)
    b.mean().backward()
    return a.grad, b


def large_view_then_sum_is_finite(t):
    a = t.ones(1 << 16, requires_grad=True)
    b = a * 2
    b[:100].mul_(3)
    b.sum().backward()
    return float(a.grad.sum()), bool(t.isfinite(a.grad).all())


def view_of_view(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    w = b.view(2, 2)[0]
    w.mul_(3)
    b.sum().backward()
    return a.grad, type(w.grad_fn).__name__


def step_slice_exp(t):
    a = t.ones(4, requires_grad=True)
    b = a * 1
    b[::2].exp_()
    b.sum().backward()
    return a.grad


def transposed_row(t):
    a = t.ones(2, 3, requires_grad=True)
    b = a * 1
    b.t()[0].mul_(2)
    b.sum().backward()
    return a.grad


def two_dim_slice_zero(t):
    a = t.arange(12.0).reshape(3, 4).requires_grad_()
    b = a * a
    b[1:, 2:].zero_()
    b.sum().backward()
    return a.grad, type(b.grad_fn).__name__


def view_rederived_after_base_changes(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    v = b[:2]
    b.mul_(3)
    name = type(v.grad_fn).__name__
    (v * 1).sum().backward()
    return a.grad, name


def diagonal_after_base_add(t):
    a = t.ones(3, 3, requires_grad=True)
    b = a * 2
    d = b.diagonal()
    b.add_(1)
    (d * d).sum().backward()
    return a.grad


def other_view_sees_new_history(t):
    b = t.zeros(4)
    v2 = b[2:]
    x = t.ones(2, requires_grad=True)
    b[:2].copy_(x)
    return v2.requires_grad, v2.grad_fn, b.requires_grad, b.grad_fn


def copy_into_view_of_plain_tensor(t):
    x = t.ones(4)
    w = t.full((2,), 3.0, requires_grad=True)
    v = x[:2]
    v.mul_(w)
    x.sum().backward()
    return w.grad, x, x.grad_fn


def zero_base_keeps_history(t):
    a = t.ones(4, requires_grad=True)
    b = a * 1
    v = b[:2]
    b.zero_()
    return v.requires_grad, v.grad_fn, b.grad_fn


def fill_part_keeps_rest(t):
    a = t.arange(4.0).requires_grad_()
    b = a * a
    b[1:3].fill_(7)
    (b * b).sum().backward()
    return a.grad, b


def leaf_view_inplace(t):
    a = t.ones(4, requires_grad=True)
    a[:2].mul_(2)


def no_grad_view_inplace(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    with t.no_grad():
        v = b[:2]
    v.mul_(2)


def unbind_output_inplace(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    b.unbind(0)[0].mul_(2)


def split_output_inplace(t):
    a = t.ones(4, 2, requires_grad=True)
    b = a * 2
    b.split(2)[0].mul_(2)


def unbind_output_inplace_no_grad_is_fine(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    with t.no_grad():
        b.unbind(0)[0].mul_(2)
    return b


def saved_output_modified_through_view(t):
    a = t.ones(4, requires_grad=True)
    b = a.sigmoid()
    b[:2].mul_(2)
    b.sum().backward()


def saved_output_modified_in_no_grad_view(t):
    a = t.ones(4, requires_grad=True)
    b = a.exp()
    with t.no_grad():
        v = b[:2]
        v.mul_(2)
    b.sum().backward()


def detached_alias_modified(t):
    a = t.ones(4, requires_grad=True)
    b = a.exp()
    b.detach().mul_(2)
    b.sum().backward()


def exp_inplace_result_modified_again(t):
    a = t.ones(4, requires_grad=True)
    b = a * 1
    b.exp_()
    b.mul_(2)
    b.sum().backward()


def exp_inplace_on_view_then_modified(t):
    a = t.ones(4, requires_grad=True)
    b = a * 1
    v = b[:2]
    v.exp_()
    v.mul_(2)
    b.sum().backward()


def inplace_on_expanded(t):
    a = t.ones(4, requires_grad=True)
    b = a * 1
    b.expand(3, 4).mul_(2)


def view_modified_in_no_grad_keeps_history(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    v = b[:2]
    with t.no_grad():
        v.mul_(2)
    b.sum().backward()
    return a.grad, v.grad_fn, b.grad_fn, b


def nested_window(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    v = b[1:3]
    v[0:1].mul_(5)
    b.sum().backward()
    return a.grad, v.grad_fn


def detach_view_in_place(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    b[:2].detach_()


def iterate_rows_then_inplace(t):
    a = t.ones(2, 3, requires_grad=True)
    b = a * 2
    for row in b:
        row.mul_(2)


def saved_constant_modified_after_promotion(t):
    x = t.ones(3, 4, dtype=t.float64, requires_grad=True)
    k = t.tensor([1.5, 1.2, 2.8, 2.6])  # float32: promoted to float64 inside the product
    y = x * k
    k.sub_(0.25)
    y.sum().backward()


def write_through_expanded_view_no_grad(t):
    x = t.arange(4.0, dtype=t.float64).requires_grad_()
    v = x.unsqueeze(0).expand(2, -1)
    with t.no_grad():
        v[0:1] = 7.0
    return x


def partial_overlap_operand(t):
    y = t.arange(16.0).reshape(4, 4)
    y.mul_(y.detach().T)


def overlapping_strided_operand_is_allowed(t):
    y = t.arange(24.0).reshape(2, 3, 4)
    d = y.diagonal(offset=1)
    d[::3].add_(d.diagonal())  # allowed; the values depend on the order of the writes


def no_grad_view_used_after_base_changed(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    with t.no_grad():
        v = b[:2]
    b[2:] = 0.5
    (v * 1).sum().backward()


def no_grad_view_modified_in_no_grad(t):
    a = t.ones(4, requires_grad=True)
    b = a * 2
    with t.no_grad():
        v = b[::3]
    b.copy_(b * 3)
    with t.no_grad():
        v += 0.5
    return b


def split_view_used_after_base_changed(t):
    x = t.ones(2, 4, dtype=t.float64, requires_grad=True)
    y = x * 1.5
    v = y.split(1)[0]
    y += 2
    return v - v


def retain_grad_follows_inplace(t):
    x = t.arange(1.0, 5.0).requires_grad_()
    y = x * 2
    y.retain_grad()
    y.div_(t.tensor([1.5, 1.2, 1.7, 1.6], requires_grad=True))
    (y * t.arange(4.0)).sum().backward()
    return y.grad, x.grad


def retain_grad_moves_with_view_inplace(t):
    x = t.arange(1.0, 5.0).requires_grad_()
    y = x ** 2
    y.retain_grad()
    s = y.sum()
    y.unsqueeze(-1).neg_()
    s.backward()
    return y.grad, x.grad


def copyslices_twice_without_retain(t):
    x = t.arange(1.0, 5.0).requires_grad_()
    y = x - 3
    y.reshape(4).zero_()
    y.sum().backward()
    y.sum().backward()


def relu_mask_keeps_zero_for_infinite_grad(t):
    x = t.tensor([-1.0, 0.5, 2.0], dtype=t.float64, requires_grad=True)
    c = t.tensor([1.0, 1.0, 1.0], dtype=t.float64)
    y = x.relu()
    (c / y).sum().backward()
    return x.grad


def transposed_base_view_inplace(t):
    x = t.arange(24.0, dtype=t.float64).reshape(2, 3, 4).requires_grad_()
    y = x.abs().transpose(0, -1)
    z = y + y  # NumPy and PyTorch both keep the transposed layout: a non-contiguous base
    z[:, 0].narrow(1, 0, 2).mul_(3)
    (z * t.arange(24.0, dtype=t.float64).reshape(4, 3, 2)).sum().backward()
    return x.grad


def random_fill_of_tracked_tensor(t):
    a = t.ones(3, requires_grad=True)
    b = a * 2
    b.normal_()
    b.sum().backward()
    g1 = a.grad.clone()
    a.grad = None
    c = a * 2
    c[:2].uniform_()
    c.sum().backward()
    return g1, a.grad, c.requires_grad


def inplace_on_empty_view_with_zero_strides(t):
    # NumPy gives the empty transpose strides (0, 0): no element repeats, so it is no expand()
    x = t.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]], dtype=t.float64, requires_grad=True)
    v = x.narrow(0, 1, 0).square().T
    v.add_(0.5)
    v.mean(0, keepdim=True).sum().backward()
    return x.grad, v.shape


def double_backward_through_empty_view_written_in_place(t):
    # the gradient through an empty window is fresh zeros in PyTorch, with no graph to
    # differentiate again (a long differential run, views family, seed 27151675)
    x = t.tensor([0.75, -0.125, 1.625, 1.25], dtype=t.float64, requires_grad=True)
    v = (x * -1).narrow(0, 3, 0)
    v.t().add_(-2.0)
    (g,) = t.autograd.grad((v.mean(0) ** 2).sum(), [x], create_graph=True)
    return g, g.requires_grad


def double_backward_through_empty_as_strided(t):
    x = t.tensor([0.75, -0.125, 1.625, 1.25], dtype=t.float64, requires_grad=True)
    outs = []
    for size, stride in (((0,), (1,)), ((2, 0), (1, 1)), ((2,), (1,))):
        w = t.ones((), dtype=t.float64, requires_grad=True)
        (g,) = t.autograd.grad((x * 2).as_strided(size, stride).sum() * w, [x], create_graph=True)
        outs += [g, g.requires_grad]
    return outs


def retain_grad_stays_through_transpose_(t):
    # retain_grad() is a flag on the tensor: a metadata in-place op leaves the hook on the old
    # node (the .grad has the old shape) and a second retain_grad() is a no-op
    x = t.ones(2, 3, requires_grad=True)
    y = x * 1.5
    y.retain_grad()
    y.transpose_(0, 1)
    flag = y.retains_grad
    y.retain_grad()
    (y * t.arange(6.0).reshape(3, 2)).sum().backward()
    return flag, y.grad, x.grad


def retain_grad_stays_when_a_view_is_rederived(t):
    # a detached alias changes in no_grad: the view's history is re-derived when next read,
    # and its retain_grad() stays with the node the loss was built from
    x = t.tensor([[0.0, 1, 2], [3, 4, 5]], dtype=t.float64, requires_grad=True)
    v = x.flatten()
    v.retain_grad()
    s = v.mean()
    with t.no_grad():
        v.detach().sub_(0.5)
    v.retain_grad()
    s.backward()
    return v.grad, x.grad, type(v.grad_fn).__name__


def double_backward_after_two_inplace_ops_on_an_empty_view(t):
    # the second op's backward reads the first op's result (saved, with a graph): its empty
    # gradient still requires grad, as PyTorch's CopySlices copies it into the base's
    x = t.tensor([-0.375, -1.375, -0.25, 0.75], requires_grad=True)
    y = x * 2
    v = y.narrow(0, 3, 0)
    v.mul_(2.0)
    v.atan_()
    (g,) = t.autograd.grad((v * v).sum(), [x], create_graph=True)
    return g, g.requires_grad


def clone_and_cast_of_an_expanded_transpose_keep_its_dim_order(t):
    # preserve_format for a non-dense input: dense strides in the order of the input's strides
    v = t.arange(24.0).reshape(2, 3, 4).transpose(0, 2).unsqueeze(0).expand(2, -1, -1, -1)
    a = t.zeros(3, 4).t().unsqueeze(1).expand(-1, 2, -1)
    outs = [v.clone(), v.float(), v.double().half(), a.clone(), a.to(t.float64)]
    return [list(o.stride()) for o in outs], [o.reshape(-1)._base is not None for o in outs]


def retained_view_sees_double_backward_through_inplace_input(t):
    # pow_ on a view of a retained view saves its input with the view's own history (PyTorch
    # saves a clone of the view): the double backward reaches the retained view's node
    x = t.arange(1.0, 7.0, dtype=t.float64).requires_grad_()
    y = x * 2
    v = y.narrow(0, 4, 2)
    v.retain_grad()
    e = v.unsqueeze(0).expand(2, -1)
    v.unsqueeze(-1).pow_(3)
    g, = t.autograd.grad((e * e).sum(), [x], create_graph=True)
    g.sum().backward()
    return v.grad, x.grad


def reading_grad_or_requires_grad_keeps_retain_on_stale_view(t):
    # unlike grad_fn/is_leaf, .grad and .requires_grad do not re-derive a stale view's history,
    # so its retain_grad() stays on the node the loss was built from
    x = t.ones(3, requires_grad=True)
    out = []
    for read in ("grad", "requires_grad", "is_leaf"):
        y = x * 2
        w = y[:2]
        w.retain_grad()
        w2 = w * 1
        y.mul_(2)
        getattr(w, read)
        w2.sum().backward()
        out.append(w.grad)
    return out


def relu_double_backward_reaches_its_result(t):
    # relu's backward under create_graph is recorded (ThresholdBackwardBackward0), with a zero
    # gradient for the saved result: a double backward fills .grad with zeros, and a
    # retain_grad() on a view that relu_ changed sees them (views seed 387128568)
    x = t.tensor([1.0, -2.0, 3.0], dtype=t.float64, requires_grad=True)
    g, = t.autograd.grad(t.relu(x).sum(), x, create_graph=True)
    g.sum().backward()
    w = t.tensor([1.25, -0.75, -1.125, 0.875], dtype=t.float64, requires_grad=True)
    y = (w * 2).reshape(1, 4)
    v = y[0]
    e = v.unsqueeze(0)
    v.retain_grad()
    v.relu_()
    h, = t.autograd.grad((e ** 3).sum(), [w], create_graph=True)
    h.sum().backward()
    return x.grad, g.grad_fn, v.grad, w.grad


CASES = [
    issue_example, mean_after_view_add, large_view_then_sum_is_finite, view_of_view,
    step_slice_exp, transposed_row, two_dim_slice_zero, view_rederived_after_base_changes,
    diagonal_after_base_add, other_view_sees_new_history, copy_into_view_of_plain_tensor,
    zero_base_keeps_history, fill_part_keeps_rest, leaf_view_inplace, no_grad_view_inplace,
    unbind_output_inplace, split_output_inplace, unbind_output_inplace_no_grad_is_fine,
    saved_output_modified_through_view, saved_output_modified_in_no_grad_view,
    detached_alias_modified, exp_inplace_result_modified_again,
    exp_inplace_on_view_then_modified, inplace_on_expanded,
    view_modified_in_no_grad_keeps_history, nested_window, detach_view_in_place,
    iterate_rows_then_inplace, saved_constant_modified_after_promotion,
    write_through_expanded_view_no_grad, partial_overlap_operand,
    overlapping_strided_operand_is_allowed, no_grad_view_used_after_base_changed,
    no_grad_view_modified_in_no_grad, split_view_used_after_base_changed,
    retain_grad_follows_inplace, retain_grad_moves_with_view_inplace,
    copyslices_twice_without_retain, relu_mask_keeps_zero_for_infinite_grad,
    transposed_base_view_inplace, random_fill_of_tracked_tensor,
    inplace_on_empty_view_with_zero_strides, double_backward_through_empty_view_written_in_place,
    double_backward_through_empty_as_strided, retain_grad_stays_through_transpose_,
    double_backward_after_two_inplace_ops_on_an_empty_view, retain_grad_stays_when_a_view_is_rederived,
    clone_and_cast_of_an_expanded_transpose_keep_its_dim_order,
    retained_view_sees_double_backward_through_inplace_input,
    reading_grad_or_requires_grad_keeps_retain_on_stale_view,
    relu_double_backward_reaches_its_result,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_same_as_pytorch(case):
    got, want = _run(case, ember), _run(case, torch)
    assert got[0] == want[0], f"ember: {got}\ntorch: {want}"
    if got[0] == "ok":
        assert got[1] == want[1]


def test_issue_example_values():
    assert issue_example(ember).tolist() == [6.0, 6.0, 2.0, 2.0]
