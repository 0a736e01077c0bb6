"""``ember.nn.attention``: ``sdpa_kernel`` and ``SDPBackend``.

``with sdpa_kernel(SDPBackend.MATH): ...`` sets the same switches PyTorch sets
(``torch.backends.cuda.flash_sdp_enabled()`` and friends read False for the backends left out)
and restores them on exit. ember's ``scaled_dot_product_attention`` has a single implementation
(one fused op over NumPy/CuPy, mathematically the "math" backend), which runs whatever backends
are selected: the choice changes no result and raises no "no viable backend" error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ...backends.cuda import SDPBackend

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False

# SDPBackend member -> the ember.backends.cuda switch it stands for
_SWITCHES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}


def _switches() -> dict[str, tuple[Any, Any]]:
    from ...backends import cuda

    return {
        "math": (cuda.math_sdp_enabled, cuda.enable_math_sdp),
        "flash": (cuda.flash_sdp_enabled, cuda.enable_flash_sdp),
        "mem_efficient": (cuda.mem_efficient_sdp_enabled, cuda.enable_mem_efficient_sdp),
        "cudnn": (cuda.cudnn_sdp_enabled, cuda.enable_cudnn_sdp),
    }


_priority: list[SDPBackend] = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                               SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend,
                set_priority: bool = False) -> Iterator[dict]:
    """Select the attention backends allowed inside the block (ember runs its own kernel).

    Args:
        backends: one ``SDPBackend`` or a list of them; the others are switched off for the
            duration of the block, as ``torch.backends.cuda.*_sdp_enabled()`` will report.
        set_priority: with a list, also record it as the preferred order (stored only).
    """
    if isinstance(backends, SDPBackend):
        chosen: list[SDPBackend] = [backends]
    elif isinstance(backends, Iterable) and not isinstance(backends, (str, bytes)):
        chosen = list(backends)
        for b in chosen:
            if not isinstance(b, SDPBackend):
                raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                                     f"SDPBackend instances, got {type(b).__name__}")
    else:
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    global _priority
    switches = _switches()
    saved = {name: get() for name, (get, _) in switches.items()}
    saved_priority = list(_priority)
    wanted = {_SWITCHES[b] for b in chosen if b in _SWITCHES}
    try:
        for name, (_, enable) in switches.items():
            enable(name in wanted)
        if set_priority:
            _priority = [b for b in chosen if b in _SWITCHES] + [
                b for b in saved_priority if b not in chosen]
        yield {}
    finally:
        for name, (_, enable) in switches.items():
            enable(saved[name])
        _priority = saved_priority
