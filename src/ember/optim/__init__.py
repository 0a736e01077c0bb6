"""``ember.optim``: optimizers and learning-rate schedulers, with PyTorch's interface.

``Optimizer`` walks parameter groups and parameters; each algorithm writes only its in-place
per-parameter update on arrays (see ``optimizer.py``).
"""

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "ASGD",
    "Adamax",
    "LBFGS",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
    "SparseAdam",
    "lr_scheduler",
]


def __getattr__(name: str) -> object:
    # PyTorch names ember lacks (Rprop, ASGD...) fail clearly at the point of use.
    from .._missing import attribute_error

    raise attribute_error("torch.optim", name)
