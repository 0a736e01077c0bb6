"""``swap_in_optimizer_params_and_state``: run an optimizer on other parameters and state for a
while (PyTorch uses it to trace a step on fake tensors), then put its own back."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_swapin(optimizer: Optimizer, parameters: dict[str, Tensor],
                  optim_state: Any) -> tuple[dict, list[tuple[dict, dict, list]]]:
    """The swap-in state (by packed id) and, per group, (live group, swap-in group, swap-in
    parameters), after PyTorch's checks (each failure a RuntimeError)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state (take a step first).")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict "
                           f"({{'state': ..., 'param_groups': ...}}), got "
                           f"{type(optim_state).__name__}.")
    state = optim_state.get("state")
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids (not by tensors).")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    groups = optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError(f"swapin_optim_state has a different number of parameter groups "
                           f"({len(groups)}) than the live optimizer "
                           f"({len(optimizer.param_groups)}).")
    flat = list(parameters.values())
    offset = 0
    seen: set[int] = set()
    out = []
    for i, (live, swap) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(swap, dict):
            raise RuntimeError(f"{_NAME} requires each optimizer param group to be a "
                               "dictionary.")
        ids = swap.get("params")
        if not isinstance(ids, list) or not all(isinstance(j, int) for j in ids):
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                               "param_groups[*]['params'] entries keyed by packed parameter ids.")
        if len(ids) != len(live["params"]):
            raise RuntimeError(f"swapin_optim_state param group {i} has a different number of "
                               f"params ({len(ids)}) than the live optimizer param group "
                               f"({len(live['params'])}).")
        swap_only = [k for k in swap if k not in live]
        live_only = [k for k in live if k not in swap]
        if swap_only or live_only:
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys "
                               f"to exactly match the live optimizer group keys for group {i}. "
                               f"Keys only in swap-in: {swap_only}. Keys only in live: "
                               f"{live_only}.")
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering ({len(flat)} parameters given, "
                               f"the groups need {offset + len(ids)} or more).")
        out.append((live, swap, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           "packed parameter ids from param_groups[*]['params']; got extra keys "
                           f"{extra!r}.")
    return state, out


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer: Optimizer,
    swapin_parameters: dict[str, Tensor],
    swapin_optim_state: dict[str, Any],
) -> Iterator[None]:
    """Within the ``with`` block, ``optimizer`` works on ``swapin_parameters`` (in the order of
    its own parameters, e.g. ``dict(model.named_parameters())``-shaped) with the state and group
    options of ``swapin_optim_state`` (an ``optimizer.state_dict()``-shaped dict); on exit its
    own parameters, options and state come back.

    Unlike ``load_state_dict``, the parameters are swapped too, so ``optimizer.step()`` updates
    the given tensors. The state tensors are used as given: in-place updates (what ``step()``
    does) show in ``swapin_optim_state``; other changes (a new tensor assigned) are dropped.

    Raises:
        RuntimeError: the optimizer has no state yet, or ``swapin_optim_state`` does not match
            its groups (count, parameters per group, option keys) or names unknown ids.

    Example::

        sd = copy.deepcopy(opt.state_dict())
        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        with swap_in_optimizer_params_and_state(opt, params, sd):
            opt.step()          # moves the clones and sd's state; model and opt untouched
    """
    state, groups = _check_swapin(optimizer, swapin_parameters, swapin_optim_state)
    own_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict = defaultdict(dict)
        for live, swap, params in groups:
            live["params"] = params
            for key, value in swap.items():
                if key != "params":
                    live[key] = value
            for p, j in zip(params, swap["params"]):
                swapped[p] = dict(state.get(j, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = own_state
