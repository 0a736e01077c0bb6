"""``ember.nn.functional`` (``F``): every layer as a function.

The functions live with their ops, one room per family in ``src/ember/ops/nn/`` (activation,
convolution, pooling, loss, ...); this module is the PyTorch-shaped place users import them from.
"""

import types as _types

from ..ops.nn import *  # noqa: F403


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.nn.functional", name)


# the functions PyTorch binds in C++ (builtins, which do not bind as methods: ember's neither;
# they take NumPy's names, x= for input, axis= for dim: ops/_aliases.py); its Python-level ones
# (relu, softmax, dropout...) bind, as ember's do, and take PyTorch's names only
from .. import _as_builtin  # noqa: E402
from ..ops._aliases import numpy_names  # noqa: E402

for _name in (
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "celu_",
    "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "elu_", "gelu", "hardshrink",
    "hardtanh_", "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
    "leaky_relu_", "linear", "logsigmoid", "native_channel_shuffle", "one_hot",
    "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_", "rrelu_",
    "scaled_dot_product_attention", "selu_", "softplus", "softshrink", "threshold_",
):
    if _name in globals():
        globals()[_name] = _as_builtin(numpy_names(globals()[_name], _name), __name__, _name)
del _name

# the rest dispatch __torch_function__ as PyTorch's Python-level functions do (_overrides.py)
from .. import _overrides as _ov  # noqa: E402

_PROBES = {"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "assert_int_or_pair"}
for _name, _fn in list(globals().items()):
    if type(_fn) is _types.FunctionType and _name[0] != "_" and _name not in _PROBES:
        globals()[_name] = _ov.dispatcher(_fn)
        globals()[_name].__module__ = __name__  # pickles as F's, not the room's
del _name, _fn
