"""The ``torch.*`` forms of nn ops whose PyTorch signature is ATen's, not ``nn.functional``'s.

``torch.dropout(input, p, train)``, ``torch.batch_norm(input, weight, bias, running_mean,
running_var, training, momentum, eps, cudnn_enabled)``, ``torch.embedding(weight, indices, ...)``:
PyTorch binds the ATen op in its namespace, with the schema's names, order and required
parameters, and without ``nn.functional``'s extras (``inplace=``, ``return_indices=``,
``max_norm=``). Each function here is a thin call of the ``nn.functional`` op of its room with
PyTorch's semantics; ``nn.functional`` keeps its own signatures. ``src/ember/__init__.py`` binds
these names (they load on first use); they also take NumPy's names (``x=`` for ``input``), as
PyTorch's builtins do.

Neighbours: the rooms they call (``dropout``, ``normalization``, ``sparse``, ``activation``,
``pooling``, ``pooling_composite``).
"""

from __future__ import annotations

from typing import Any

from ..._tensor_base import TensorBase
from .. import _out
from .._aliases import install as _numpy_names
from . import activation as _act
from . import normalization as _norm
from . import pooling as _pool
from . import pooling_composite as _pool3
from . import sparse as _sparse
from .distance import cosine_similarity, pairwise_distance, pdist
from .dropout import alpha_dropout as _alpha_dropout
from .dropout import dropout as _dropout
from .dropout import feature_alpha_dropout as _feature_alpha_dropout
from .pooling import adaptive_avg_pool1d

__all__ = [
    "dropout", "alpha_dropout", "feature_alpha_dropout", "batch_norm", "instance_norm",
    "layer_norm", "group_norm", "embedding", "max_pool1d", "max_pool2d", "max_pool3d",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "celu", "selu", "threshold", "rrelu",
    "hardshrink", "cosine_similarity", "pairwise_distance", "pdist",
]


def _bool(value: Any, name: str, param: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}(): argument '{param}' must be bool, not {type(value).__name__}")
    return value


def _p(p: float) -> float:
    """The ATen ops' check (a RuntimeError; ``F.dropout``'s is a ValueError)."""
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


# ---------------------------------------------------------------------------------------------
# dropout: (input, p, train), all required


def dropout(input: TensorBase, p: float, train: bool) -> TensorBase:
    """``torch.dropout``: ``F.dropout(input, p, training=train)``."""
    return _dropout(input, _p(p), _bool(train, "dropout", "train"))


def alpha_dropout(input: TensorBase, p: float, train: bool) -> TensorBase:
    """``torch.alpha_dropout``: ``F.alpha_dropout(input, p, training=train)``."""
    return _alpha_dropout(input, _p(p), _bool(train, "alpha_dropout", "train"))


def feature_alpha_dropout(input: TensorBase, p: float, train: bool) -> TensorBase:
    """``torch.feature_alpha_dropout``: ``F.feature_alpha_dropout(input, p, training=train)``."""
    return _feature_alpha_dropout(input, _p(p), _bool(train, "feature_alpha_dropout", "train"))


# ---------------------------------------------------------------------------------------------
# normalization: ATen's order (weight and bias before the running statistics)


def batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
               training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Any:
    """``torch.batch_norm``: every parameter required (``cudnn_enabled`` has no effect here)."""
    return _norm.batch_norm(input, running_mean, running_var, weight, bias,
                            _bool(training, "batch_norm", "training"), momentum, eps)


def instance_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Any:
    """``torch.instance_norm``: every parameter required (``cudnn_enabled`` has no effect)."""
    return _norm.instance_norm(input, running_mean, running_var, weight, bias,
                               _bool(use_input_stats, "instance_norm", "use_input_stats"),
                               momentum, eps)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, cudnn_enable: bool = True) -> Any:
    """``torch.layer_norm`` (``cudnn_enable``, so spelt in PyTorch, has no effect here)."""
    return _norm.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Any:
    """``torch.group_norm`` (``cudnn_enabled`` has no effect here)."""
    return _norm.group_norm(input, num_groups, weight, bias, eps)


# ---------------------------------------------------------------------------------------------
# embedding: (weight, indices), a negative padding_idx is none


def embedding(weight: TensorBase, indices: TensorBase, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> TensorBase:
    """``torch.embedding``: rows of ``weight`` at ``indices``; ``padding_idx`` < 0 means none
    (``F.embedding`` turns its negative ``padding_idx`` into a row before calling this)."""
    return _sparse.embedding(indices, weight, padding_idx if padding_idx >= 0 else None, None,
                             2.0, scale_grad_by_freq, sparse)


# ---------------------------------------------------------------------------------------------
# pooling: no return_indices (adaptive_max_pool1d always returns the indices)


def max_pool1d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool1d``: the values only; an empty ``stride`` is ``kernel_size``."""
    return _pool.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool2d``: the values only; an empty ``stride`` is ``kernel_size``."""
    return _pool.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool3d``: the values only; an empty ``stride`` is ``kernel_size``."""
    return _pool3.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def adaptive_max_pool1d(input: Any, output_size: Any) -> tuple:
    """``torch.adaptive_max_pool1d``: (values, indices), always."""
    return tuple(_pool.adaptive_max_pool1d(input, output_size, True))


# ---------------------------------------------------------------------------------------------
# activations: no inplace= (their in-place forms are torch.celu_...)


hardshrink = _act.hardshrink


def celu(input: TensorBase, alpha: float = 1.0) -> TensorBase:
    """``torch.celu``."""
    return _act.celu(input, alpha)


def selu(input: TensorBase) -> TensorBase:
    """``torch.selu``."""
    return _act.selu(input)


def threshold(input: TensorBase, threshold: float, value: float, *, out: Any = None) -> TensorBase:
    """``torch.threshold``: ``value`` where ``input <= threshold``, with ``out=``."""
    result = _act.threshold(input, threshold, value)
    return result if out is None else _out.write(out, result, "threshold")


def rrelu(input: TensorBase, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator: Any = None) -> TensorBase:
    """``torch.rrelu``: the slopes drawn from ``generator`` in training."""
    return _act._rrelu(input, lower, upper, training, False, generator)


_numpy_names(globals())  # x= for input, axis= for dim...: PyTorch's builtins take them
