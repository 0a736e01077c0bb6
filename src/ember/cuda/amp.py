"""``ember.cuda.amp``: the deprecated ``torch.cuda.amp`` spellings (they live in ember.amp)."""

import sys

from ..amp import cuda_amp

sys.modules[__name__] = cuda_amp
