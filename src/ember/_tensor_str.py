"""Printing tensors the way PyTorch does: ``tensor([[1., 2.]], requires_grad=True)``.

The rules (PyTorch's documented print options): floats print with 4 decimals, or as integers
with a trailing dot when every value is whole, or in scientific notation when the values span
more than 3 orders of magnitude, exceed 1e8 or go below 1e-4; all elements share one width;
more than ``threshold`` elements are summarised with ``...``; lines wrap at ``linewidth``.
Complex values print as PyTorch's: real and imaginary parts each with their own format (chosen
from all real parts, all imaginary parts), joined by their sign: ``tensor([1.+2.j, 3.-1.j])``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _backend


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """``torch.set_printoptions``: profiles 'default', 'short', 'full', or individual options."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    return dict(PRINT_OPTS.__dict__)


class _Formatter:
    """Chooses one format (and width) for every element of an array."""

    def __init__(self, arr: np.ndarray) -> None:
        self.floating = arr.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        flat = arr.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size:
            absv = np.abs(vals)
            lo, hi = float(absv.min()), float(absv.max())
            self.int_mode = bool(np.all(vals == np.ceil(vals)))
            wide = hi / lo > 1000.0 or hi > 1.0e8
            if self.int_mode:
                self.sci_mode = wide
            else:
                self.sci_mode = wide or lo < 1.0e-4
            fmt = f"{{:.{p}e}}" if self.sci_mode else ("{:.0f}" if self.int_mode else f"{{:.{p}f}}")
            extra = 1 if (self.int_mode and not self.sci_mode) else 0
            for v in vals.tolist():
                self.max_width = max(self.max_width, len(fmt.format(v)) + extra)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def format(self, value: Any) -> str:
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                s = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    s += "."
            else:
                s = f"{value:.{p}f}"
        elif isinstance(value, bool):
            s = str(value)
        else:
            s = str(value)
        return " " * (self.max_width - len(s)) + s


class _ComplexFormatter:
    """PyTorch's complex format: a formatter for the real parts and one for the imaginary parts;
    ``real+imagj`` (the imaginary part's sign joins them)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.re = _Formatter(arr.real)
        self.im = _Formatter(arr.imag)
        self.max_width = self.re.max_width + self.im.max_width + 1  # (+1: the j)

    def format(self, value: Any) -> str:
        re = self.re.format(value.real)
        im = (self.im.format(value.imag) + "j").lstrip()
        return re + im if im[0] in "+-" else re + "+" + im


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements that will be shown: the first and last ``edgeitems`` along every dim."""
    e = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.shape[0] > 2 * e:
        arr = np.concatenate([arr[:e], arr[-e:]])
    if arr.ndim == 1:
        return arr
    return np.stack([_summarized(a) for a in arr])


def _vector(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2))))
    e = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * e:
        data = [fmt.format(v) for v in arr[:e].tolist()] + [" ..."]
        data += [fmt.format(v) for v in arr[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * e:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
        parts += [_nested(arr[i], indent + 1, summarize, fmt) for i in range(len(arr) - e, len(arr))]
    else:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0])]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def array_str(arr: np.ndarray, indent: int) -> str:
    """The bracketed body of a tensor's repr."""
    if arr.size == 0:
        return "[]"
    if arr.dtype.kind not in "fiubc":  # bfloat16 and friends print through float32
        arr = arr.astype(np.float32)
    elif arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    summarize = arr.size > PRINT_OPTS.threshold
    shown = _summarized(arr) if summarize else arr
    fmt = _ComplexFormatter(shown) if arr.dtype.kind == "c" else _Formatter(shown)
    return _nested(arr, indent, summarize, fmt)


def _tensor_str(self: Any, indent: int) -> str:
    """The bracketed body of tensor ``self``'s repr, continuation lines indented by ``indent``
    (PyTorch's ``torch._tensor_str._tensor_str``, which libraries call for their own reprs)."""
    return array_str(_backend.to_numpy(self.detach()._data), indent)


def _add_suffixes(text: str, suffixes: list[str], indent: int,
                  force_newline: bool = False) -> str:
    """``text`` + ``, suffix`` for each suffix (wrapped at the line width; ``force_newline``
    puts the first on a new line) + ``)``."""
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False
        else:
            out.append(", " + suffix)
            last_line_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def _meta_repr(t: Any, prefix: str) -> str:
    """A meta tensor has no values: ``tensor(..., device='meta', size=(2, 3))`` (PyTorch's)."""
    from . import _dtype

    suffixes = ["device='meta'", f"size={tuple(t._data.shape)}"]
    if t.dtype is not _dtype.get_default_dtype():
        suffixes.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + "...", suffixes, len(prefix))


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    from . import _dtype

    d = t._data
    if _backend.is_meta(d):
        return _meta_repr(t, prefix)
    arr = _backend.to_numpy(d)
    indent = len(prefix)
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    dt = t.dtype
    default = (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_,
               _dtype.get_default_dtype().to_complex())
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dt is not _dtype.get_default_dtype():
            suffixes.append(f"dtype={dt}")
        body = "[]"
    else:
        if dt not in default:
            suffixes.append(f"dtype={dt}")
        body = array_str(arr, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
