"""``torch.utils._foreach_utils``: grouping tensor lists by device and dtype, as optimizers and
``clip_grad_norm_`` do before calling fused kernels.

ember's ``torch._foreach_*`` ops (``ember/_foreach.py``) loop over the tensors rather than run fused
kernels, so ``_has_foreach_support`` and ``_device_has_foreach_support`` answer False and PyTorch's
own optimizers take their per-tensor path (the same arithmetic, without the extra lists).
"""

from __future__ import annotations

from typing import Any

from ..autograd.grad_mode import no_grad

__all__: list[str] = []

Indices = list[int]
TensorListList = list[list[Any]]


@no_grad()
def _group_tensors_by_device_and_dtype(
    tensorlistlist: TensorListList, with_indices: bool = False,
) -> dict[tuple[Any, Any], tuple[TensorListList, Indices]]:
    """Group position ``i`` of every list by the device and dtype of ``tensorlistlist[0][i]``.

    Returns ``{(device, dtype): (lists, indices)}``: ``lists`` holds, for each input list, its
    entries at the group's positions (in order; the same tensor objects, ``None`` kept in lists
    after the first); ``indices`` lists those positions when ``with_indices``, else it is empty.
    A list after the first may be empty (it stays empty in every group).

    Raises:
        RuntimeError: no lists, an empty first list, a list whose length is neither the first's
            nor 0, or a ``None`` in the first list.
    """
    lists = [list(tl) for tl in tensorlistlist]
    if not lists:
        raise RuntimeError("_group_tensors_by_device_and_dtype: expected at least one list of "
                           "tensors, got none")
    n = len(lists[0])
    if n == 0:
        raise RuntimeError("_group_tensors_by_device_and_dtype: the first list of tensors is "
                           "empty")
    for k, tl in enumerate(lists):
        if len(tl) not in (n, 0):
            raise RuntimeError(f"_group_tensors_by_device_and_dtype: list {k} has {len(tl)} "
                               f"entries, the first has {n}: each list needs {n} entries or none")
    groups: dict[tuple[Any, Any], tuple[TensorListList, Indices]] = {}
    for i, t in enumerate(lists[0]):
        if t is None:
            raise RuntimeError("Tensors of the first list of nested Tensor lists are supposed to "
                               f"be defined but the {i}-th Tensor is not.")
        key = (t.device, t.dtype)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ([[] for _ in lists], [])
        for out, tl in zip(group[0], lists, strict=True):
            if tl:
                out.append(tl[i])
        if with_indices:
            group[1].append(i)
    return groups


def _device_has_foreach_support(device: Any) -> bool:
    """False: ember has no fused ``torch._foreach_*`` kernels on any device."""
    return False


def _has_foreach_support(tensors: list[Any], device: Any) -> bool:
    """False: ember has no fused ``torch._foreach_*`` kernels, so callers loop themselves."""
    return False
