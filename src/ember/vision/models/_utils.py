"""Helpers shared by the model builders: the legacy ``pretrained=`` interface, checks of
parameters the weights fix, and MobileNet's channel rounding."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ._api import WeightsEnum

__all__ = ["handle_legacy_interface", "kwonly_to_pos_or_kw", "_ovewrite_named_param",
           "_make_divisible", "_load_weights"]


def _sequence_to_str(seq: Sequence, separate_last: str = "") -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b', and 'c'``: torchvision's wording in its warnings."""
    if not seq:
        return ""
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join(str(s) for s in seq[:-1]) + "'"
    comma = "" if separate_last and len(seq) == 2 else ","
    return f"{head}{comma} {separate_last}'{seq[-1]}'"


def kwonly_to_pos_or_kw(fn: Callable) -> Callable:
    """Let keyword-only parameters be passed positionally again, with a deprecation warning
    (old code calls ``resnet18(True)``)."""
    params = list(inspect.signature(fn).parameters.values())
    try:
        start = next(i for i, p in enumerate(params) if p.kind == p.KEYWORD_ONLY)
    except StopIteration:
        raise TypeError(f"Found no keyword-only parameter on function '{fn.__name__}'") from None
    names = [p.name for p in params[start:]]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, extra = args[:start], args[start:]
        if extra:
            moved = dict(zip(names, extra))
            warnings.warn(
                f"Using {_sequence_to_str(tuple(moved), separate_last='and ')} as positional "
                "parameter(s) is deprecated since 0.13 and may be removed in the future. Please "
                "use keyword parameter(s) instead.", stacklevel=2)
            kwargs.update(moved)
        return fn(*args, **kwargs)

    return wrapper


def handle_legacy_interface(**weights: tuple[str, Any]) -> Callable[[Callable], Callable]:
    """Map the pre-0.13 interface onto ``weights=``: ``pretrained=True`` means the given default
    enum member, ``pretrained=False`` means ``None``; both warn as torchvision does.

    ``weights`` maps each new parameter to ``(legacy name, default member or a callable of the
    keyword arguments returning it)``."""
    def outer(builder: Callable) -> Callable:
        @kwonly_to_pos_or_kw
        @functools.wraps(builder)
        def inner(*args: Any, **kwargs: Any) -> Any:
            for param, (legacy, default) in weights.items():
                missing = object()
                given = kwargs.get(param, missing)
                if ((param not in kwargs and legacy not in kwargs)
                        or isinstance(given, WeightsEnum)
                        or (isinstance(given, str) and given != "legacy")
                        or given is None):
                    continue
                # a bool passed positionally lands in ``param`` (the signature has no legacy name)
                positional = given is not missing
                if positional:
                    kwargs[legacy] = flag = kwargs.pop(param)
                else:
                    flag = kwargs[legacy]
                if flag:
                    chosen = default(kwargs) if callable(default) else default
                    if not isinstance(chosen, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    chosen = None
                if not positional:
                    warnings.warn(f"The parameter '{legacy}' is deprecated since 0.13 and may be "
                                  f"removed in the future, please use '{param}' instead.",
                                  stacklevel=3)  # the caller of the builder
                msg = (f"Arguments other than a weight enum or `None` for '{param}' are deprecated "
                       "since 0.13 and may be removed in the future. The current behavior is "
                       f"equivalent to passing `{param}={chosen}`.")
                if flag:
                    msg += (f" You can also use `{param}={type(chosen).__name__}.DEFAULT` to get "
                            "the most up-to-date weights.")
                warnings.warn(msg, stacklevel=3)
                del kwargs[legacy]
                kwargs[param] = chosen
            return builder(*args, **kwargs)

        return inner

    return outer


def _ovewrite_named_param(kwargs: dict[str, Any], param: str, new_value: Any) -> None:
    """Set ``kwargs[param]`` to what the weights need, refusing a conflicting user value
    (e.g. ``num_classes=10`` with ImageNet weights). The misspelling is torchvision's name."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(f"The parameter '{param}' expected value {new_value} but got "
                             f"{kwargs[param]} instead. These weights fix {param}={new_value}: "
                             f"drop {param}= or pass weights=None.")
    else:
        kwargs[param] = new_value


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to a multiple of ``divisor`` (at least ``min_value``), never more than 10%
    below ``v``: MobileNet's channel counts."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _load_weights(model: Any, weights: WeightsEnum, progress: bool) -> None:
    """Load ``weights`` into ``model``: from the hub cache, else downloaded with its SHA-256
    prefix (in the file name) checked, as torchvision's builders do."""
    model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
