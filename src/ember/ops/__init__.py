"""ember's operations, one module per family; each op is forward + backward side by side.

Conventions every op follows (see docs/design.md):

- An op is a subclass of ``Op`` (``ember/autograd/function.py``). ``forward(ctx, *args)`` receives backend
  arrays (Python scalars stay plain constants) and returns an array; ``backward(ctx, *grads)``
  returns one gradient per forward argument (``None`` for arguments that need none).
- The docstring states the derivative as math, one formula per input.
- Backward rules use only operators, array methods that ember's Tensor also has (``.sum(axis=,
  keepdims=)``, ``.reshape``, ``.T``) and ``ctx.xp.<fn>``. Under ``create_graph=True`` the same
  rule then runs on tensors (``ctx.xp`` is ``ember.ops._xp``) and records a graph, which is
  how higher-order gradients work. A rule that needs another op calls ``ctx.call(OtherOp, ...)``.
- Broadcasting is undone in one place, the engine: return the gradient in the broadcast shape.
- Composite ops (built from other ops) are plain functions without a backward.
"""

from ..autograd.function import Op
from . import _shown, _xp
from .blas import *  # noqa: F403
from .casting import *  # noqa: F403
from .comparison import *  # noqa: F403
from .creation import *  # noqa: F403
from .cumulative import *  # noqa: F403
from .indexing import *  # noqa: F403
from .indexing_scatter import *  # noqa: F403
from .joining import *  # noqa: F403
from .linalg import *  # noqa: F403
from .linalg_factor import *  # noqa: F403
from .other import *  # noqa: F403
from .other_matrix import *  # noqa: F403
from .other_variants import *  # noqa: F403
from .pointwise import *  # noqa: F403
from .pointwise_complex import *  # noqa: F403
from .pointwise_fused import *  # noqa: F403
from .pointwise_math import *  # noqa: F403
from .pointwise_piecewise import *  # noqa: F403
from .random import *  # noqa: F403
from .reduction import *  # noqa: F403
from .reduction_stats import *  # noqa: F403
from .shape import *  # noqa: F403
from .softmax_family import *  # noqa: F403
from .sorting import *  # noqa: F403
from .special import digamma, i0, lgamma, logit, mvlgamma, polygamma, sinc  # noqa: F401

# The engine runs backward rules on tensors under create_graph with this namespace as ctx.xp;
# it sits below the ops, so the ops hand it over here instead of autograd importing upward.
Op.tensor_xp = _xp
_shown.install()  # PyTorch's ``_saved_*`` fields on the nodes, for graph tools (torchviz)


def __getattr__(name: str) -> object:
    # torch.ops.aten: PyTorch's operator namespace over these ops, built on first use (_aten.py)
    if name == "aten":
        from ._aten import aten

        return aten
    raise AttributeError(f"module 'torch.ops' has no attribute '{name}'")
