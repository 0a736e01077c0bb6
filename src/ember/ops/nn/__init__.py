"""``nn.functional``'s ops, one room per family as PyTorch's functional documentation groups them:
activation and activation_complex (silu, softsign and tanhshrink, the activations PyTorch also
defines on complex tensors), linear, dropout, sparse (embeddings), distance, normalization, loss
and loss_margin, attention, vision and vision_sampling (pad, interpolate, pixel shuffle; grid
sampling), convolution, pooling and pooling_composite, recurrent (the fused RNN/LSTM/GRU layers),
overrides (the ``__torch_function__`` probes). ``_kernels`` holds the window and resampling
kernels under convolution and pooling; ``_common`` the checks the losses and norms share.
``ember.nn.functional`` re-exports all of it but ``namespace``: the ``torch.*`` forms with ATen's
signatures (``torch.dropout(input, p, train)``), bound by ``ember/__init__.py``.
"""

from .activation import *  # noqa: F403
from .activation_complex import *  # noqa: F403
from .attention import *  # noqa: F403
from .convolution import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .loss_margin import *  # noqa: F403
from .normalization import *  # noqa: F403
from .overrides import *  # noqa: F403
from .pooling import *  # noqa: F403
from .pooling_composite import *  # noqa: F403
from .recurrent import *  # noqa: F403
from .sparse import *  # noqa: F403
from .vision import *  # noqa: F403
from .vision_sampling import *  # noqa: F403
