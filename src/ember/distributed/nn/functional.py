"""Differentiable collectives: each returns new tensors and has the backward its data flow
implies (PyTorch's ``torch.distributed.nn.functional``).

    broadcast(x, src)        forward: src's x on every rank    backward: the grads summed onto src
    reduce(x, dst, op)       forward: the reduction on dst     backward: dst's grad broadcast
    all_reduce(x, op)        forward: the reduction everywhere backward: all_reduce of the grad
    all_gather(x)            forward: every rank's x           backward: the sum over ranks of
                                                               the grad of this rank's slot
    gather(x, dst)           forward: every x on dst (zeros    backward: dst's grads scattered
                             elsewhere)
    scatter(xs, src)         forward: src's xs[rank]           backward: the grads gathered on src
    reduce_scatter(out, xs)  forward: slot rank of the sum     backward: the grad all-gathered
    all_to_all(outs, ins)    forward: ins[j] to rank j         backward: the grads sent back

Each call warns as PyTorch's does (deprecated) and runs the in-place collective of
``ember.distributed`` on a fresh copy, so the caller's tensors are never written."""

from __future__ import annotations

import warnings
from typing import Any

from ... import autograd
from .. import distributed_c10d as _c10d
from .._names import ReduceOp

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "all_to_all", "all_to_all_single", "all_reduce"]


def _deprecated(name: str) -> None:
    warnings.warn(
        f"torch.distributed.nn.functional.{name} is deprecated, use "
        f"torch.distributed._functional_collectives.{name} instead.",
        FutureWarning, stacklevel=3)


def _fresh(t: Any) -> Any:
    return t.detach().clone().contiguous()


def _world(group: Any) -> tuple[int, int]:
    return _c10d.get_rank(group), _c10d.get_world_size(group)


def broadcast(tensor: Any, src: int, group: Any = None) -> Any:
    """``src``'s ``tensor`` on every rank; backward sums the gradients onto ``src``."""
    _deprecated("broadcast")
    return _Broadcast.apply(src, group, tensor)


def gather(tensor: Any, dst: int = 0, group: Any = None) -> tuple:
    """Every rank's ``tensor`` as a tuple on ``dst`` (zeros on the other ranks)."""
    _deprecated("gather")
    return _Gather.apply(dst, group, tensor)


def scatter(tensors: Any, src: int = 0, group: Any = None) -> Any:
    """``tensors[rank]`` of ``src`` on each rank (the list is read on ``src`` only)."""
    _deprecated("scatter")
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor: Any, dst: int, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """The reduction of every rank's ``tensor`` on ``dst`` (the others get their own back)."""
    _deprecated("reduce")
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output: Any, input_list: Any, op: Any = ReduceOp.SUM,
                   group: Any = None) -> Any:
    """Slot ``rank`` of the reduction of every rank's ``input_list``, written to ``output``."""
    _deprecated("reduce_scatter")
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor: Any, group: Any = None) -> tuple:
    """Every rank's ``tensor``, as a tuple on every rank."""
    _deprecated("all_gather")
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list: Any, input_tensor_list: Any, group: Any = None) -> tuple:
    """``input_tensor_list[j]`` goes to rank j; returns what every rank sent here."""
    _deprecated("all_to_all")
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output: Any, input: Any, output_split_sizes: Any = None,
                      input_split_sizes: Any = None, group: Any = None) -> Any:
    """``all_to_all`` over the first dim of one tensor, split by the given sizes."""
    _deprecated("all_to_all_single")
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """The reduction of every rank's ``tensor``, bitwise the same on every rank."""
    _deprecated("all_reduce")
    return _AllReduce.apply(op, group, tensor)


class _Broadcast(autograd.Function):
    @staticmethod
    def forward(ctx: Any, src: int, group: Any, tensor: Any) -> Any:
        ctx.src, ctx.group = src, group
        out = _fresh(tensor)
        _c10d.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        g = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad)
        if _c10d.get_rank(ctx.group) != ctx.src:
            g = g * 0
        return None, None, g


class _Gather(autograd.Function):
    @staticmethod
    def forward(ctx: Any, dst: int, group: Any, tensor: Any) -> tuple:
        ctx.dst, ctx.group = dst, group
        rank, n = _world(group)
        outs = [tensor.detach().new_zeros(tensor.shape) for _ in range(n)]
        _c10d.gather(_fresh(tensor), outs if rank == dst else None, dst=dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return (None, None, _Scatter.apply(ctx.dst, ctx.group, *grads))


class _Scatter(autograd.Function):
    @staticmethod
    def forward(ctx: Any, src: int, group: Any, *tensors: Any) -> Any:
        ctx.src, ctx.group = src, group
        rank, _ = _world(group)
        out = tensors[rank].detach().new_zeros(tensors[rank].shape)
        _c10d.scatter(out, [_fresh(t) for t in tensors] if rank == src else None, src=src,
                      group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad)


class _Reduce(autograd.Function):
    @staticmethod
    def forward(ctx: Any, dst: int, op: Any, group: Any, tensor: Any) -> Any:
        ctx.dst, ctx.group = dst, group
        out = _fresh(tensor)
        _c10d.reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad)


class _ReduceScatter(autograd.Function):
    @staticmethod
    def forward(ctx: Any, op: Any, group: Any, output: Any, *inputs: Any) -> Any:
        ctx.group = group
        ctx.mark_dirty(output)
        with autograd.no_grad():
            _c10d.reduce_scatter(output, [_fresh(t) for t in inputs], op=op, group=group)
        return output

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return (None, None, None) + _AllGather.apply(ctx.group, grad)


class _AllGather(autograd.Function):
    @staticmethod
    def forward(ctx: Any, group: Any, tensor: Any) -> tuple:
        ctx.group = group
        _, n = _world(group)
        outs = [tensor.detach().new_zeros(tensor.shape) for _ in range(n)]
        _c10d.all_gather(outs, _fresh(tensor), group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        # this rank's slot of every rank's gradient list, summed
        out = grads[0].new_zeros(grads[0].shape)
        _c10d.reduce_scatter(out, [g.contiguous() for g in grads], op=ReduceOp.SUM,
                             group=ctx.group)
        return None, out


class _AllToAll(autograd.Function):
    @staticmethod
    def forward(ctx: Any, group: Any, outs: Any, *inputs: Any) -> tuple:
        ctx.group = group
        ctx.shapes = [t.shape for t in inputs]
        outs = [o.detach().new_zeros(o.shape) for o in outs]
        _c10d.all_to_all(outs, [_fresh(t) for t in inputs], group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        back = [grads[0].new_zeros(s) for s in ctx.shapes]
        return (None, None) + _AllToAll.apply(ctx.group, back, *grads)


class _AllToAllSingle(autograd.Function):
    @staticmethod
    def forward(ctx: Any, group: Any, output: Any, out_splits: Any, in_splits: Any,
                tensor: Any) -> Any:
        ctx.group, ctx.splits = group, (out_splits, in_splits)
        ctx.shape = tensor.shape
        out = output.detach().new_zeros(output.shape)
        _c10d.all_to_all_single(out, _fresh(tensor), output_split_sizes=out_splits,
                                input_split_sizes=in_splits, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        out_splits, in_splits = ctx.splits
        back = grad.new_zeros(ctx.shape)
        return (None, None, None, None,
                _AllToAllSingle.apply(ctx.group, back, in_splits, out_splits, grad))


class _AllReduce(autograd.Function):
    @staticmethod
    def forward(ctx: Any, op: Any, group: Any, tensor: Any) -> Any:
        ctx.op, ctx.group = op, group
        out = _fresh(tensor)
        _c10d.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)
