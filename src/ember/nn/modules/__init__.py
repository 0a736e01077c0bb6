"""``ember.nn`` modules, one file per family (as in PyTorch's ``nn/modules``)."""

# (``torch.nn.modules.utils``: _pair and its kin, which custom layers import)
from . import utils as utils
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .batchnorm import *  # noqa: F403
from .channelshuffle import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .instancenorm import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import *  # noqa: F403
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403

# what ``from ember.nn.modules import *`` (ember.nn's namespace) takes: the classes, not the
# submodule names (this package's ``utils`` is torch.nn.modules.utils, not torch.nn.utils)
__all__ = sorted({_n for _m in (activation, adaptive, batchnorm, channelshuffle,  # noqa: F405
                                container, conv, distance, dropout, flatten, fold,  # noqa: F405
                                instancenorm, lazy, linear, loss, module,  # noqa: F405
                                normalization, padding, pixelshuffle, pooling, rnn,  # noqa: F405
                                sparse, transformer, upsampling)  # noqa: F405
                  for _n in _m.__all__})

# classes at the module paths PyTorch gives them (pickles and safe_globals lists name these)
# isort: split
from . import activation as _activation
from . import linear as _linear
from .transformer import MultiheadAttention as _MHA
from .transformer import NonDynamicallyQuantizableLinear as _NDQL

_activation.MultiheadAttention = _MHA  # type: ignore[attr-defined]
_linear.NonDynamicallyQuantizableLinear = _NDQL  # type: ignore[attr-defined]

# the lazy modules live together in lazy.py; PyTorch defines each next to its eager class
# isort: split
from . import batchnorm as _batchnorm  # noqa: E402
from . import conv as _conv  # noqa: E402
from . import instancenorm as _instancenorm  # noqa: E402
from . import lazy as _lazy  # noqa: E402

for _name in _lazy.__all__:
    if not _name.startswith("Lazy") or _name == "LazyModuleMixin":
        continue
    _home = (_linear if _name == "LazyLinear" else _conv if "Conv" in _name
             else _batchnorm if "BatchNorm" in _name else _instancenorm)
    _cls = getattr(_lazy, _name)
    _cls.__module__ = _home.__name__
    setattr(_home, _name, _cls)
del _name, _home, _cls
