"""``ember.nn`` modules, one file per family (as in PyTorch's ``nn/modules``)."""

from .activation import *  # noqa: F403
from .batchnorm import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403
