"""``GradScaler``: dynamic loss scaling for float16 training (PyTorch's interface and rules).

float16 gradients underflow to zero when small. The scaler multiplies the loss by ``scale``
before ``backward`` (so gradients are ``scale`` times larger), divides the gradients by it again
before the optimizer step (``unscale_``), skips the step when any gradient is inf/NaN, and
adapts ``scale``: times ``backoff_factor`` after a skipped step, times ``growth_factor`` after
``growth_interval`` steps in a row without one.

Disabled (``enabled=False``, or a 'cuda' scaler without CUDA), every method is the identity:
``scale(loss)`` returns ``loss``, ``step(opt)`` is ``opt.step()``, ``update()`` does nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from enum import Enum
from typing import Any

from .. import _dtype

# ``Tensor`` is imported where used: ``ember.amp`` must import without ``ember._tensor`` so that
# ops modules can consult ``autocast_mode`` while ember itself is still importing.

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Dynamic loss scaler: ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()``.

    Args:
        device: where the scale lives ('cuda' default, as PyTorch; 'cpu' works too).
        init_scale: the first scale (65536).
        growth_factor: multiplies the scale after ``growth_interval`` clean steps (2.0).
        backoff_factor: multiplies the scale after a step with inf/NaN gradients (0.5).
        growth_interval: clean steps between growths (2000).
        enabled: False makes every method the identity.

    Example::

        >>> scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
        >>> scaler.scale(loss).backward()
        >>> scaler.unscale_(optimizer)        # optional: before clipping
        >>> scaler.step(optimizer)            # skipped when a gradient is inf/NaN
        >>> scaler.update()
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn(
                    "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                    stacklevel=2,
                )
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError(f"The growth factor must be > 1.0, got {growth_factor}")
            if backoff_factor >= 1.0:
                raise ValueError(f"The backoff factor must be < 1.0, got {backoff_factor}")
            if not isinstance(growth_interval, int) or growth_interval <= 0:
                raise ValueError(
                    f"growth_interval must be a positive int, got {growth_interval!r}"
                )
        self._init_scale = float(init_scale)
        self._scale: Any = None  # 0-d float32 tensor, made on first scale()
        self._growth_tracker: Any = None  # 0-d int32 tensor
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._per_optimizer_states: dict[int, dict[str, Any]] = {}

    # -- the scale as a tensor ------------------------------------------------------------------
    def _lazy_init(self, device: Any) -> None:
        from ..ops.creation import full

        self._scale = full((), self._init_scale, dtype=_dtype.float32, device=device)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dtype.int32, device=device)

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())

    # -- the public interface --------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """``outputs * scale`` (a tensor, or a list/tuple of tensors, nested); identity when
        disabled."""
        if not self._enabled:
            return outputs
        from .._tensor import Tensor

        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)

        def apply(val: Any) -> Any:
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init(val.device)
                return val * self._scale.to(val.device)
            if isinstance(val, Iterable) and not isinstance(val, (str, bytes)):
                items = [apply(v) for v in val]
                return type(val)(items) if isinstance(val, (list, tuple)) else iter(items)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is
        inf/NaN. Call at most once per optimizer between ``update()`` calls, before ``step``."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise RuntimeError(
                "Attempted unscale_ but _scale is None.  This may indicate your script did not "
                "use scaler.scale(loss or outputs) earlier in the iteration."
            )
        state["found_inf"] = self._unscale_grads(optimizer, 1.0 / float(self._scale.item()))
        state["stage"] = OptState.UNSCALED

    def _unscale_grads(self, optimizer: Any, inv_scale: float) -> bool:
        from ..autograd.grad_mode import no_grad

        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype is _dtype.float16:
                        raise ValueError(
                            "Attempting to unscale FP16 gradients. Keep the parameters in "
                            "float32 (autocast computes in float16 for you) when using GradScaler."
                        )
                    xp = _xp(g)
                    arr = g._data
                    if not found and not bool(xp.isfinite(arr).all()):
                        found = True
                    g.mul_(inv_scale)
        return found

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> float | None:
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, skipped (returning None)
        when any gradient is inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError(
                "Closure use is not currently supported if GradScaler is enabled."
            )
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: Any = None) -> None:
        """Adapt the scale for the next iteration (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        if self._scale is None:
            return
        if new_scale is not None:
            value = float(new_scale.item()) if hasattr(new_scale, "item") else float(new_scale)
            self._scale.fill_(value)
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            scale = float(self._scale.item())
            tracker = int(self._growth_tracker.item())
            if any(found):
                scale *= self._backoff_factor
                tracker = 0
            else:
                tracker += 1
                if tracker == self._growth_interval:
                    grown = scale * self._growth_factor
                    if grown != float("inf"):
                        scale = grown
                    tracker = 0
            self._scale.fill_(scale)
            self._growth_tracker.fill_(tracker)
        self._per_optimizer_states = {}

    # -- accessors -------------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def state_dict(self) -> dict[str, Any]:
        """``{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'}``
        (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict()`` returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)

    def __repr__(self) -> str:
        return (f"GradScaler(device={self._device!r}, scale={self.get_scale()}, "
                f"enabled={self._enabled})")


def _xp(t: Any) -> Any:
    from .._backend import xp_of

    return xp_of(t._data)
