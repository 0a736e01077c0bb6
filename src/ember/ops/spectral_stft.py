"""The short-time Fourier transform and its inverse (``torch.stft``, ``torch.istft``).

Both are compositions of ember ops, so their gradients (with respect to the signal and to the
window) come from the ops they are made of:

- ``stft``: pad the signal (``center``: n_fft // 2 on each side, ``pad_mode``), cut it into
  frames of n_fft points every ``hop_length`` (``unfold``: a view), multiply each frame by the
  window (zero-padded to n_fft, centred), and transform each frame (``rfft`` for a real signal
  and window with ``onesided``, else ``fft``; ``normalized``: ``norm="ortho"``). The result is
  ``(batch?, frequencies, frames)``: complex64 for a float32 signal.
- ``istft``: inverse-transform each frame (``irfft`` / ``ifft``), multiply by the window,
  overlap-add the frames (``index_add``), and divide by the overlap-added squared window (the
  NOLA condition: that sum must not vanish where the signal is kept).
"""

from __future__ import annotations

import warnings
from typing import Any

from .._tensor_base import TensorBase
from .creation import arange, ones, zeros
from .indexing import index_add
from .nn.vision import pad as _pad
from .pointwise_complex import view_as_real
from .shape import unfold
from .spectral import fft, ifft, irfft, rfft

__all__ = ["stft", "istft"]


def stft(input: Any, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Any = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Any:
    """The short-time Fourier transform: ``(batch?, n_fft // 2 + 1 or n_fft, frames)``."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"stft(): argument 'input' must be Tensor, not {type(input).__name__}")
    if return_complex is None and not (input.is_complex()
                                       or (window is not None and window.is_complex())):
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs, and will "
            "further require that return_complex=True in a future PyTorch release.")
    if return_complex is None:
        return_complex = True  # a complex signal or window
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    x = input
    if x.dim() not in (1, 2):
        raise RuntimeError(f"{_signature('stft', x, n_fft, hop, win, window)}: expected a 1D "
                           f"or 2D tensor, got {x.dim()}D")
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if center:
        half = n_fft // 2
        x = _pad(x.unsqueeze(0), (half, half), mode=pad_mode).squeeze(0)
    length = x.shape[-1]
    sig = _signature("stft", x, n_fft, hop, win, window)
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{sig}: expected 0 < n_fft <= {length} (the padded signal's "
                           f"length), but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{sig}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{sig}: expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(f"{sig}: expected a 1D window tensor of size equal to "
                           f"win_length={win}, but got window with size {list(window.shape)}")
    if window is None:
        warnings.warn(
            "A window was not provided. A rectangular window will be applied, which is known to "
            "cause spectral leakage. Other windows such as torch.hann_window or "
            "torch.hamming_window are recommended to reduce spectral leakage. To suppress this "
            "warning and use a rectangular window, explicitly set "
            "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    complex_in = x.is_complex() or (window is not None and window.is_complex())
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    real_dtype = x.dtype.to_real() if x.is_complex() else x.dtype
    if not (real_dtype.is_floating_point or x.is_complex()):
        from .. import _dtype

        real_dtype = _dtype.get_default_dtype()
        x = x.to(real_dtype)
    w = _padded_window(window, win, n_fft, x, real_dtype)
    if align_to_window and win < n_fft:
        # frames start where the window's nonzero part starts: the points outside it are zeros
        left = (n_fft - win) // 2
        x = _pad(x, (left, n_fft - win - left))
    frames = unfold(x, -1, n_fft, hop) * w
    norm = "ortho" if normalized else "backward"
    spec = rfft(frames, dim=-1, norm=norm) if onesided else fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    if not return_complex:
        warnings.warn(
            "stft with return_complex=False is deprecated. In a future pytorch release, stft "
            "will return complex tensors for all inputs, and return_complex=False will raise an "
            "error.\nNote: you can still call torch.view_as_real on the complex output to recover "
            "the old return format.", UserWarning, stacklevel=2)
        return view_as_real(spec)
    return spec


def istft(input: Any, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Any = None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Any:
    """The inverse of ``stft``: the signal whose STFT (with the same arguments) is ``input``."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"istft(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            f"return_complex=True (got dtype {input.dtype}; torch.view_as_complex converts a "
            "(..., 2) real tensor).")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    sig = _signature("istft", input, n_fft, hop, win, window)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{sig}: expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.dim()}")
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_frames, fft_size = spec.shape[-1], spec.shape[-2]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{sig}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"{sig}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(f"{sig}: expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{sig}: expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(f"{sig}: invalid window shape {list(window.shape)}; expected a 1D "
                           f"window of size win_length={win}")
    if window is None:
        warnings.warn(
            "A window was not provided. A rectangular window will be applied. Please provide the "
            "same window used by stft to make the inversion lossless. To suppress this warning "
            "and use a rectangular window, explicitly set "
            "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    real_dtype = spec.dtype.to_real()
    w = _padded_window(window, win, n_fft, spec, real_dtype)
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)  # (batch, frames, frequencies)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = ifft(frames, dim=-1, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            frames = frames[..., :n_fft // 2 + 1]
        frames = irfft(frames, n=n_fft, dim=-1, norm=norm)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    index = (arange(n_frames, device=spec.device).unsqueeze(1) * hop
             + arange(n_fft, device=spec.device)).reshape(-1)
    batch = frames.shape[0]
    y = index_add(zeros(batch, total, dtype=frames.dtype, device=spec.device), 1, index,
                  frames.reshape(batch, -1))
    w2 = (w.abs() ** 2 if w.is_complex() else w * w).expand(n_frames, n_fft).reshape(-1)
    env = index_add(zeros(total, dtype=w2.dtype, device=spec.device), 0, index, w2)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    end = min(end, total)
    y = y[:, start:end]
    env = env[start:end]
    low = env.detach().abs().min().item() if env.numel() else 1.0
    if low < 1e-11:
        raise RuntimeError(f"{sig}: window overlap add min: {low:g} (the squared window summed "
                           "over overlapping frames must not vanish; use a window and hop_length "
                           "that satisfy the NOLA condition)")
    y = y / env
    if length is not None and y.shape[-1] < length:
        warnings.warn(
            "The length of signal is shorter than the length parameter. Result is being padded "
            "with zeros in the tail. Please check your center and hop_length settings.",
            UserWarning, stacklevel=2)
        y = _pad(y, (0, length - y.shape[-1]))
    if not batched:
        y = y.squeeze(0)
    return y


def _shown(t: Any) -> str:
    if t is None:
        return "None"
    return f"tensor of dtype {t.dtype} and shape {list(t.shape)}"


def _signature(name: str, x: Any, n_fft: int, hop: int, win: int, window: Any) -> str:
    return (f"{name}(input of dtype {x.dtype} and shape {list(x.shape)}, n_fft={n_fft}, "
            f"hop_length={hop}, win_length={win}, window={_shown(window)})")


def _padded_window(window: Any, win_length: int, n_fft: int, like: Any, real_dtype: Any) -> Any:
    """The window as n_fft points: ones when none is given, zero-padded and centred."""
    if window is None:
        window = ones(win_length, dtype=real_dtype, device=like.device)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _pad(window, (left, n_fft - win_length - left))
    return window
