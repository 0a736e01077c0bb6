"""``Optimizer``: the base class of every algorithm in ``ember.optim`` (MLX's split).

The base class owns everything that is the same for all algorithms: parameter groups with
per-group options, the per-parameter ``state``, ``zero_grad``, hooks, and ``state_dict`` /
``load_state_dict`` in PyTorch's layout. ``step`` walks the groups and the parameters that have
a gradient and hands each one to the algorithm's ``_update``, which changes the parameter's
array in place. Updates run on raw arrays (NumPy or CuPy), so no graph is built and nothing is
allocated beyond the few temporaries the formula needs.

An algorithm is one method::

    def _update(self, p, g, o) -> None:     # once per parameter: p.Tensor, g = p.grad array

(and optionally ``_group_step(params, o) -> bool``, a whole group in one call where it can),

where ``o`` holds the parameter group's options by name (``o.lr``, ``o.weight_decay``,
``o.beta1``...), read once per group and step as Python floats and flags (see
:func:`_step_options`).

State lives in ``self.state[p]`` as tensors with PyTorch's keys (``'step'`` a 0-d float32
tensor, ``'exp_avg'``...), so ``state_dict()`` interchanges with PyTorch's.
"""

from __future__ import annotations

import functools
import operator
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor import Tensor
from ..autograd import grad_mode
from ..ops import sparse as _sparse

__all__ = ["Optimizer", "required", "ParamsT"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]


class _RequiredParameter:
    """Marks a hyperparameter without a default (each group must then give it)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


class _HookHandle:
    """``handle.remove()`` unregisters a hook."""

    _next_id = 0

    def __init__(self, hooks: OrderedDict) -> None:
        self._hooks = hooks
        self.id = _HookHandle._next_id
        _HookHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> _HookHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool = False) -> _HookHandle:
    h = _HookHandle(hooks)
    hooks[h.id] = hook
    if prepend:
        hooks.move_to_end(h.id, last=False)
    return h


def register_optimizer_step_pre_hook(hook: Callable) -> _HookHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> _HookHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    return _add_hook(_global_step_post_hooks, hook)


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        from .._tensor import _legacy_type_name

        return _legacy_type_name(obj)
    return type(obj).__name__


def _scalar_dtype() -> Any:
    """The dtype of ``state['step']``: float32, or float64 when that is the default dtype."""
    return np.float64 if _dtype.get_default_dtype() is _dtype.float64 else np.float32


def _step_tensor(value: float = 0.0) -> Tensor:
    """A 0-d ``state['step']`` tensor. It lives on the CPU whatever the parameter's device (as
    in PyTorch without ``capturable``): reading it each step then needs no device sync."""
    return Tensor._make(np.array(value, dtype=_scalar_dtype()))


def _zeros_state(p: Any) -> Tensor:
    """A zero state buffer shaped, typed and placed like the parameter array ``p``."""
    return Tensor._make(_backend.xp_of(p).zeros_like(p))


def _value(x: Any) -> float:
    """A hyperparameter as a Python float (from a float, a NumPy scalar or a 0-d tensor)."""
    return x if type(x) is float else float(x)


_NUMBERS = (Tensor, int, float, np.number)
_is = operator.is_


def _step_options(group: dict[str, Any], defaults: dict[str, Any]) -> SimpleNamespace:
    """A parameter group's options for one step, by name: numbers (also 0-d tensors, as a
    scheduler may set ``lr``) become Python floats, flags and other values stay as they are, and
    ``betas`` is also given as ``beta1``/``beta2``. Options a group lacks (a state dict saved by
    an older version) take the optimizer's defaults. ``_group`` is the group itself (for an
    algorithm that must see an option as given, such as a tensor ``lr``)."""
    opts = {**defaults, **group}  # (runs once per group and step: kept to plain dict work)
    opts.pop("params", None)
    for key, value in opts.items():
        t = type(value)
        if t is float or t is bool or value is None:
            continue
        if isinstance(value, _NUMBERS) and not isinstance(value, bool):
            opts[key] = _value(value)
    betas = opts.get("betas")
    if betas is not None:
        opts["beta1"], opts["beta2"] = _value(betas[0]), _value(betas[1])
    opts["_group"] = group
    return SimpleNamespace(**opts)


_FROZEN = (float, int, bool, str, type(None))


def _frozen(value: Any) -> bool:
    """Whether an option's value cannot change without being replaced in its dict: a number,
    flag, string or None, or a tuple of those (``betas``); a tensor or a list can."""
    t = type(value)
    return t in _FROZEN or (t is tuple and all(type(v) in _FROZEN for v in value))


def _cached_step_options(cache: dict, group: dict[str, Any],
                         defaults: dict[str, Any]) -> SimpleNamespace:
    """``_step_options(group, defaults)``, reused from the last step while the group and the
    defaults hold the same key and value objects and every value is ``_frozen`` (a scheduler
    that sets ``group['lr']`` stores a new float: the options are read again)."""
    snap = (*group, *group.values(), *defaults.values())
    hit = cache.get(id(group))
    if (hit is not None and hit[0] is group and hit[1] is defaults and len(hit[2]) == len(snap)
            and all(map(_is, hit[2], snap))):
        return hit[3]
    options = _step_options(group, defaults)
    if all(_frozen(v) for k, v in group.items() if k != "params") and \
            all(map(_frozen, defaults.values())):
        cache[id(group)] = (group, defaults, snap, options)
    else:
        cache.pop(id(group), None)
    return options


def _check_lr(lr: Any) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas: Any) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_nonneg(name: str, value: Any) -> None:
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name} value: {value}")


def _to_array(v: Any) -> Any:
    """An ember tensor, a NumPy array or another library's tensor (PyTorch's) as an array."""
    if isinstance(v, Tensor):
        return v._data
    if _backend.is_array(v):
        return v
    if hasattr(v, "detach") and hasattr(v, "cpu") and hasattr(v, "numpy"):
        return v.detach().cpu().numpy()  # a torch.Tensor from a PyTorch checkpoint
    return None


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
            groups: ``{'params': [...], 'lr': 0.1, ...}``, options a group omits come from
            ``defaults``).
        defaults: the default value of every option of the algorithm.

    Example::

        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    OptimizerPreHook = Callable[..., "tuple[tuple, dict] | None"]  # PyTorch's hook type aliases
    OptimizerPostHook = Callable[..., None]

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_typename(params)}"
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _init_hooks(self) -> None:
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()

    # -- pickling (what PyTorch keeps: defaults, state, param_groups) ---------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {
            "defaults": self.defaults,
            "state": self.state,
            "param_groups": self.param_groups,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_optimizer_step_pre_hooks" not in self.__dict__:
            self._init_hooks()
        self._patch_step_function()
        if any(c.__name__ in _TENSOR_STEP
               and c.__module__.startswith(("ember.optim.", "torch.optim."))  # (ember run)
               for c in type(self).__mro__):
            _tensor_steps(self.state)  # (a built-in, or a subclass of one; not a user's own)
        # Groups saved by an older version may lack newer options: fill them from defaults.
        for group in self.param_groups:
            for k, v in self.defaults.items():
                if v is not required:
                    group.setdefault(k, v)

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group.keys()):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # -- parameter groups ---------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        tensors, names = [], []
        for p in params:
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}"
                )
            if not self.defaults.get("differentiable", None) and not (
                p.is_leaf or p.retains_grad
            ):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        if self.param_groups and (
            ("param_names" in param_group) != ("param_names" in self.param_groups[0])
        ):
            raise ValueError("all optimizer param groups should be with/without names.")
        self.param_groups.append(param_group)

    # -- gradients ------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters (to ``None``, or to zeros in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g._rg = False
                d = g._data
                if isinstance(d, _sparse.RECORDS):  # a sparse gradient: emptied (PyTorch's zero_)
                    g.zero_()
                    continue
                if getattr(d.flags, "writeable", True):  # (CuPy arrays are always writeable)
                    d.fill(0)
                else:
                    g._data = _backend.xp_of(d).zeros_like(d)

    # -- the step -------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step: update every parameter that has a gradient.

        Args:
            closure: a callable that re-evaluates the model and returns the loss (needed by
                LBFGS; optional for the others). It runs with gradients enabled.
        Returns:
            The closure's loss, or ``None``.
        """
        hooked = "_in_hooked_step" not in self.__dict__  # (the wrapper ran them already)
        # hooks see PyTorch's (args, kwargs) of the call: args start with the optimizer
        args: tuple = (self,) if closure is None else (self, closure)
        kwargs: dict = {}
        if (self._optimizer_step_pre_hooks or _global_step_pre_hooks) and hooked:
            args, kwargs = self._run_pre_hooks(args, kwargs)
            closure = args[1] if len(args) > 1 else kwargs.get("closure")
        if self._load_problem is not None:
            raise OptimizerStateError(f"{type(self).__name__}.step(): {self._load_problem}")
        loss = self._step(closure)
        if (self._optimizer_step_post_hooks or _global_step_post_hooks) and hooked:
            for hook in chain(self._optimizer_step_post_hooks.values(),
                              _global_step_post_hooks.values()):
                hook(self, args, kwargs)
        return loss

    def _run_pre_hooks(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        for hook in chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got "
                        f"{res}."
                    )
                args, kwargs = res
        return args, kwargs

    def _step(self, closure: Callable[[], Any] | None) -> Any:
        loss = None
        if closure is not None:
            with grad_mode.enable_grad():
                loss = closure()
        update = self._update
        bad = self._bad_state
        cache = self.__dict__.get("_options_cache")
        if cache is None:
            cache = self.__dict__["_options_cache"] = {}
        whole = self._group_step  # an algorithm's step of a whole group in one call, or None
        for group in self.param_groups:
            options = _cached_step_options(cache, group, self.defaults)
            if whole is not None and bad is None and whole(group["params"], options):
                continue
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if bad is not None and id(p) in bad:
                    self._check_loaded_state(p)
                try:
                    if p._data.dtype.kind == "c" and self._complex_as_real:
                        self._update_complex(p, g._data, options)
                    else:
                        update(p, g._data, options)
                except (TypeError, NotImplementedError):
                    if isinstance(g._data, _sparse.RECORDS):  # a sparse gradient (ops/sparse.py)
                        raise self._no_sparse() from None
                    raise
                v = p._version
                if v is not None:  # the parameter changed in place: saved copies are stale
                    v[0] += 1
        return loss

    # an algorithm may step a whole group at once: ``_group_step(params, o)`` returns True when
    # it did (every parameter with a gradient updated, versions bumped), False to leave the
    # group to ``_update`` (Adam's native path: adam.py). Each algorithm writes its gathering
    # loop out (one pass over the parameters): a shared generic helper measured 7.5 -> 9.4 us on
    # a 4-parameter Adam step, a quarter of what the group call saves
    _group_step: Callable[[list, SimpleNamespace], bool] | None = None

    # PyTorch's rule for a complex parameter: it, its gradient and its state update as pairs of
    # real numbers (view_as_real), so Adam's second moment is |g|^2 per part, not g * g. An
    # optimizer that handles complex values itself (ASGD, Rprop) sets this False.
    _complex_as_real = True

    def _update_complex(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        """``_update`` on real views of a complex parameter, its gradient and its state (the
        state stays complex tensors of the parameter's shape, sharing memory with the views)."""
        def as_real(a: Any) -> Any:
            if a.ndim and a.strides[-1] != a.itemsize:  # (a strided gradient: its pairs copied)
                return _backend.xp_of(a).stack([a.real, a.imag], -1)
            return a.view(a.real.dtype).reshape(a.shape + (2,))

        if p._data.ndim and not p._data.flags.c_contiguous:
            return self._update(p, g, o)  # (no real view of a strided parameter: as it is)
        real = Tensor._make(as_real(p._data))
        state = self.state[p]
        self.state[real] = {k: Tensor._make(as_real(v._data))
                            if isinstance(v, Tensor) and v._data.dtype.kind == "c" else v
                            for k, v in state.items()}
        try:
            self._update(real, as_real(g), o)
        finally:
            new = self.state.pop(real)
        for k, v in new.items():  # a new entry made on the real view: seen as complex again
            if isinstance(v, Tensor) and v._data.shape == real._data.shape and \
                    v._data.dtype == real._data.dtype and k not in state:
                v = Tensor._make(v._data.view(p._data.dtype).reshape(p._data.shape))
            if k not in state or not (isinstance(state[k], Tensor)
                                      and state[k]._data.dtype.kind == "c"):
                state[k] = v

    def _no_sparse(self) -> RuntimeError:
        """PyTorch's refusal of a sparse gradient by an algorithm without a sparse path."""
        name = type(self).__name__
        if name in ("Adam", "AdamW"):
            return RuntimeError("Adam does not support sparse gradients, please consider "
                                "SparseAdam instead")
        return RuntimeError(f"{name} does not support sparse gradients")

    def _check_loaded_state(self, p: Tensor) -> None:
        """Raise when ``p``'s loaded state tensors do not have ``p``'s shape (PyTorch fails at
        this step too, with a bare broadcasting error); forget ``p`` once its state fits."""
        index = self._bad_state[id(p)]
        for key, value in self.state.get(p, {}).items():
            shape = _state_shape(value)
            if shape is not None and shape != tuple(p.shape):
                raise RuntimeError(
                    f"{type(self).__name__}.step(): the optimizer state loaded by "
                    f"load_state_dict() does not fit parameter {index}: state[{key!r}] has shape "
                    f"{list(shape)} but the parameter has shape {list(p.shape)}. The checkpoint's "
                    "optimizer state was saved for parameters of other shapes (another model, or "
                    "the parameters in another order): load the optimizer state saved with this "
                    "model, or skip optimizer.load_state_dict() to start the optimizer fresh."
                )
        del self._bad_state[id(p)]
        if not self._bad_state:
            self._bad_state = None

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        """Update parameter ``p`` in place from its gradient array ``g``, with the group's
        options ``o`` (``o.lr``...)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement _update(p, g, o) (or override step())"
        )

    # -- PyTorch's internals that wrappers and subclasses call ----------------------------------
    def _patch_step_function(self) -> None:
        """Name the zero_grad profile range and, when this class overrides ``step``, wrap it once
        (``profile_hook_step``) so the step hooks run around it, as PyTorch does. The base
        ``step`` runs the hooks itself."""
        self._zero_grad_profile_name = f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"
        self._warned_capturable_if_run_uncaptured = True
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = self.profile_hook_step(cls.step)  # type: ignore[method-assign]
            cls.step.hooked = True  # type: ignore[attr-defined]

    @staticmethod
    def profile_hook_step(func: Callable) -> Callable:
        """``func`` (a ``step``) wrapped to run the global and per-optimizer step hooks around
        it: ``hook(optimizer, args, kwargs)`` with ``args`` starting with the optimizer."""

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self = args[0]
            for pre in chain(_global_step_pre_hooks.values(),
                             self._optimizer_step_pre_hooks.values()):
                res = pre(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError(f"{pre} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {res}.")
                    args, kwargs = res
            nested = "_in_hooked_step" in self.__dict__
            self.__dict__["_in_hooked_step"] = True
            try:
                out = func(*args, **kwargs)
            finally:
                if not nested:
                    del self.__dict__["_in_hooked_step"]
            self._optimizer_step_code()
            for post in chain(self._optimizer_step_post_hooks.values(),
                              _global_step_post_hooks.values()):
                post(self, args, kwargs)
            return out

        return wrapper

    def _optimizer_step_code(self) -> None:
        """An empty method a profiler can find each step by (as PyTorch's)."""

    def _accelerator_graph_capture_health_check(self) -> None:
        """PyTorch checks CUDA-graph capture settings here; ember captures no graphs."""

    def _cuda_graph_capture_health_check(self) -> None:
        """PyTorch's older name of ``_accelerator_graph_capture_health_check`` (deprecated)."""
        warnings.warn("Use _accelerator_graph_capture_health_check instead", DeprecationWarning,
                      stacklevel=2)
        self._accelerator_graph_capture_health_check()

    @staticmethod
    def _group_tensors_by_device_and_dtype(
        tensorlistlist: list[list[Any]], with_indices: bool = False,
    ) -> dict[tuple[Any, Any], tuple[list[list[Any]], list[int]]]:
        """The lists' tensors grouped by the (device, dtype) of the first list's tensor at each
        index: ``{(device, dtype): ([sub-list per list], indices)}`` (indices filled only
        ``with_indices``), as PyTorch's foreach grouping."""
        groups: dict[tuple[Any, Any], tuple[list[list[Any]], list[int]]] = {}
        for i, t in enumerate(tensorlistlist[0]):
            key = (t.device, t.dtype)
            if key not in groups:
                groups[key] = ([[] for _ in tensorlistlist], [])
            lists, idx = groups[key]
            for out, src in zip(lists, tensorlistlist):
                out.append(src[i])
            if with_indices:
                idx.append(i)
        return groups

    @staticmethod
    def _process_value_according_to_param_policy(
        param: Tensor, value: Any, param_id: int, param_groups: list[dict[str, Any]],
        key: Any = None,
    ) -> Any:
        """A loaded state value on ``param``'s device and (floating ``param``) dtype; ``'step'``
        kept as saved: what ``load_state_dict`` does to each value."""
        return _cast_state(param, value, key)

    # -- hooks ----------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> _HookHandle:
        """``hook(optimizer, args, kwargs) -> None | (args, kwargs)`` runs before ``step``."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> _HookHandle:
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _HookHandle:
        """``hook(optimizer)`` runs before ``state_dict()`` builds its result."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _HookHandle:
        """``hook(optimizer, state_dict) -> None | state_dict`` runs after ``state_dict()``."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> _HookHandle:
        """``hook(optimizer, state_dict) -> None | state_dict`` runs before loading."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable, prepend: bool = False
    ) -> _HookHandle:
        """``hook(optimizer)`` runs after ``load_state_dict``."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state_dict -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout.

        ``{'state': {0: {'step': ..., 'exp_avg': ...}, 1: ...}, 'param_groups': [{'lr': ...,
        'params': [0, 1]}]}``: parameters are numbered in the order the groups list them. The
        state tensors are the live ones (as in PyTorch); save or copy them to keep a snapshot.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {
            (index[id(k)] if isinstance(k, Tensor) else k): dict(v) for k, v in self.state.items()
        }
        sd = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            res = hook(self, sd)
            if res is not None:
                sd = res
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from ``state_dict()`` (ember's or PyTorch's): a resumed optimizer
        continues the identical trajectory. State tensors are copied, cast to each parameter's
        dtype and moved to its device, except ``'step'``, kept as saved; numbers and other
        objects are kept as they are (PyTorch's rule)."""
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            res = hook(self, state_dict)
            if res is not None:
                state_dict = res
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(
                "loaded state dict has a different number of parameter groups"
                f" ({len(saved_groups)} saved, this optimizer has {len(groups)})"
            )
        for g, s in zip(groups, saved_groups):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size of "
                    f"optimizer's group ({len(s['params'])} saved vs {len(g['params'])} here)"
                )
        id_map = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = {key: _cast_state(p, val, key) for key, val in v.items()}
            else:
                state[k] = v
        problem = _missing_options(self, saved_groups)
        bad: dict[int, Any] = {}
        if type(self)._step is Optimizer._step:  # (LBFGS keeps flat, not per-parameter, state)
            for k in state_dict["state"]:
                p = id_map.get(k)
                if p is not None and any(
                    _state_shape(val) not in (None, tuple(p.shape)) for val in state[p].values()
                ):
                    bad[id(p)] = k
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.__setstate__({"state": state, "param_groups": new_groups})
        self._load_problem = problem
        self._bad_state = bad or None
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


# A loaded param group must carry each option the algorithm reads at every step: PyTorch's
# optimizers fail at step() with a KeyError when one is missing (the classic case: an Adam
# state_dict loaded into SGD has no 'momentum'). Flags (bool/None defaults) are filled in by
# PyTorch's __setstate__, and so are these per-class options:
_FILLED_ON_LOAD = {
    "Adagrad": frozenset({"initial_accumulator_value"}),
    "RMSprop": frozenset({"momentum", "centered"}),
}

# Optimizer attributes set by load_state_dict (class-level defaults keep pickled optimizers and
# subclasses that skip __init__ working).
Optimizer._load_problem = None
Optimizer._bad_state = None


Optimizer.step.hooked = True  # type: ignore[attr-defined] # it runs the step hooks itself


class OptimizerStateError(KeyError):
    """A loaded optimizer state that this optimizer cannot step with: a ``KeyError`` like
    PyTorch's (which names only the missing key), with a message that says why and the fix."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _missing_options(opt: Optimizer, saved_groups: list) -> str | None:
    """Why ``opt`` cannot step with the loaded ``saved_groups`` (options missing), else None.
    Only ember's own algorithms are checked: a user's subclass gets its defaults filled in."""
    cls = type(opt)
    if not cls.__module__.startswith(("ember.optim", "torch.optim")):  # (torch.: ember run)
        return None
    filled = _FILLED_ON_LOAD.get(cls.__name__, frozenset())
    for i, s in enumerate(saved_groups):
        missing = [k for k, v in opt.defaults.items()
                   if k not in s and k not in filled and not (v is None or isinstance(v, bool))
                   and v is not required]
        if missing:
            has = sorted(k for k in s if k not in ("params", "param_names"))
            return (
                f"parameter group {i} of the state_dict given to load_state_dict() has no "
                f"{', '.join(repr(k) for k in missing)} (it has {', '.join(has)}), so it was saved "
                f"by another optimizer class. Load it into the optimizer class that saved it, or "
                f"skip optimizer.load_state_dict() and start this {cls.__name__} fresh."
            )
    return None


def _state_shape(value: Any) -> tuple | None:
    """The shape of a per-parameter state tensor; None for scalars (``'step'``...) and
    non-tensors, whose shape need not match the parameter's."""
    arr = _to_array(value)
    if arr is None or arr.ndim == 0:
        return None
    return tuple(arr.shape)


def _cast_state(p: Tensor, value: Any, key: Any) -> Any:
    """A loaded state value as PyTorch's ``load_state_dict`` keeps it: every tensor (an ember
    tensor, a NumPy array, a PyTorch tensor) becomes a copy on ``p``'s device, in ``p``'s dtype
    when ``p`` is floating (whatever its own dtype, as PyTorch casts), except under the key
    ``'step'``, kept as saved (its dtype and device). Numbers, strings and other objects are
    untouched (an integer ``'step'`` stays an int); dicts, lists and tuples are walked."""
    if isinstance(value, dict):
        return {k: _cast_state(p, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(p, v, key) for v in value)
    arr = _to_array(value)
    if arr is None:
        return value
    if key == "step":
        return Tensor._make(_backend.xp_of(arr).array(arr, copy=True))
    arr = _backend.to_device(arr, p.device, copy=False)
    if p.is_floating_point() and arr.dtype != p._data.dtype:
        return Tensor._make(arr.astype(p._data.dtype))
    return Tensor._make(_backend.xp_of(arr).array(arr, copy=True))


# the built-in optimizers that count ``state['step']`` in a tensor (SGD and LBFGS keep no step)
_TENSOR_STEP = frozenset({"Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad",
                          "Adadelta", "ASGD", "Rprop", "Adafactor"})


def _tensor_steps(state: Any) -> None:
    """A built-in optimizer counts ``state['step']`` in a tensor: a number loaded from an older
    checkpoint becomes one, as PyTorch's optimizers do in ``__setstate__``."""
    for per_param in state.values():
        if isinstance(per_param, dict):
            step = per_param.get("step")
            if isinstance(step, (int, float, np.number)) and not isinstance(step, bool):
                per_param["step"] = _step_tensor(float(step))


def _xp(arr: Any) -> Any:
    """The array module of a parameter array (NumPy fast path first)."""
    return np if type(arr) is _backend.CPU_ARRAY else _backend.xp_of(arr)


def _lerp_(x: Any, end: Any, weight: float, scratch: Any = None) -> None:
    """``x = lerp(x, end, weight)`` in place, as PyTorch's kernel computes it: the weight in
    ``x``'s dtype, ``x + w * (end - x)`` when ``|w| < 0.5``, else ``end - (end - x) * (1 - w)``
    (exact at ``w = 1``). ``scratch``: an array shaped as ``x`` that may be overwritten (``end``
    itself when the caller owns it); without one, the small-weight branch allocates one."""
    xp = _xp(x)
    w = x.dtype.type(weight)
    if abs(w) < 0.5:
        tmp = xp.empty_like(x) if scratch is None else scratch
        xp.subtract(end, x, out=tmp)
        tmp *= w
        x += tmp
    else:
        xp.subtract(end, x, out=x)
        x *= x.dtype.type(1) - w
        xp.subtract(end, x, out=x)


def _norm(a: Any) -> float:
    """The 2-norm of an array, summed in its own dtype (as PyTorch's ``norm().item()``)."""
    xp = _xp(a)
    return float(xp.sqrt(xp.vdot(a, a)))
