"""Lazy modules: layers that learn their input size from the first batch.

``LazyLinear(out)``, ``LazyConv{1,2,3}d(out, k)``, ``LazyConvTranspose{1,2,3}d``,
``LazyBatchNorm{1,2,3}d()`` and ``LazyInstanceNorm{1,2,3}d()`` start with
``UninitializedParameter`` / ``UninitializedBuffer`` placeholders. The first forward (or a
``load_state_dict`` with real tensors) materializes them with the right shapes, in place, so an
optimizer built earlier keeps working; after that first forward the module becomes the ordinary
class (``LazyLinear`` -> ``Linear``), as in PyTorch.
"""

from __future__ import annotations

from typing import Any

from ... import _dtype
from ...autograd.grad_mode import no_grad
from ...ops import creation as _creation
from ..parameter import UninitializedBuffer, UninitializedParameter
from ..parameter import is_lazy as _is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = [
    "LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d",
    "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


class LazyModuleMixin:
    """Materializes a module's placeholders on the first call (``initialize_parameters``)."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy_load_handle = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_handle = self.register_forward_pre_hook(self._infer_parameters,
                                                                 with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer is still a placeholder."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(_is_lazy(t) for t in tensors)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def _lazy_load_hook(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                        missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        for store in (self._parameters, self._buffers):
            for name, t in store.items():
                key = prefix + name
                if t is not None and _is_lazy(t) and key in state_dict:
                    src = state_dict[key]
                    if not _is_lazy(src):
                        with no_grad():
                            t.materialize(tuple(src.shape))

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        kwargs = kwargs or {}
        self.initialize_parameters(*args, **kwargs)
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        self._initialize_handle.remove()
        self._lazy_load_handle.remove()
        del self._initialize_handle
        del self._lazy_load_handle
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the last dim of the first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    _nd = 2

    def _lazy_setup(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input: Any) -> int:
        n = self._nd
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        return input.shape[1] if input.dim() == n + 2 else input.shape[0]

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                if self.transposed:
                    shape = (self.in_channels, self.out_channels // self.groups)
                else:
                    shape = (self.out_channels, self.in_channels // self.groups)
                self.weight.materialize(shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(base: type, nd: int, transposed: bool) -> type:
    name = f"Lazy{base.__name__}"

    if transposed:
        def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                     device: Any = None, dtype: Any = None) -> None:
            base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups,
                          False, dilation, padding_mode)
            _register(self)
            self._lazy_setup(out_channels, bias, device, dtype)
    else:
        def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
            base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                          padding_mode)
            _register(self)
            self._lazy_setup(out_channels, bias, device, dtype)

    doc = (f"``{base.__name__}`` whose ``in_channels`` is read from the first input "
           f"(dim 1, or dim 0 unbatched).")
    return type(name, (_LazyConvXdMixin, base), {
        "__init__": __init__, "cls_to_become": base, "_nd": nd, "__doc__": doc,
        "__module__": __name__})


def _register(self: Any) -> None:
    """The hooks ``LazyModuleMixin.__init__`` adds (for classes that call the base init)."""
    self._lazy_load_handle = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
    self._initialize_handle = self.register_forward_pre_hook(self._infer_parameters,
                                                             with_kwargs=True)


LazyConv1d = _lazy_conv(Conv1d, 1, False)
LazyConv2d = _lazy_conv(Conv2d, 2, False)
LazyConv3d = _lazy_conv(Conv3d, 3, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, 2, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, 3, True)


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _creation.tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                for name in ("weight", "bias", "running_mean", "running_var"):
                    t = getattr(self, name)
                    if t is not None and _is_lazy(t):
                        t.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(base: type) -> type:
    doc = f"``{base.__name__}`` whose ``num_features`` is dim 1 of the first input."
    return type(f"Lazy{base.__name__}", (_LazyNormBase, base),
                {"cls_to_become": base, "__doc__": doc, "__module__": __name__})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
