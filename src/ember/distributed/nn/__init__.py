"""torch.distributed.nn: collectives that autograd differentiates (``functional``).

PyTorch 2.13 deprecates them in favour of ``torch.distributed._functional_collectives``, but
libraries still import them (vector-quantize-pytorch's ``dist_nn.all_reduce``)."""

from .functional import (  # noqa: F401
    all_gather,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    scatter,
)
