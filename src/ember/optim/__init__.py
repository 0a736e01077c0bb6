"""``ember.optim``: optimizers and learning-rate schedulers, with PyTorch's interface.

``Optimizer`` walks parameter groups and parameters; each algorithm writes only its in-place
per-parameter update on arrays (see ``optimizer.py``). ``swa_utils`` (weight averaging) loads on
first use.
"""

from . import lr_scheduler
from ._adafactor import Adafactor
from ._muon import Muon
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
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
    "swa_utils",
    "swap_in_optimizer_params_and_state",
]


def __getattr__(name: str) -> object:
    if name == "swa_utils":  # loaded on first use (it needs ember.nn)
        import importlib

        return importlib.import_module(".swa_utils", __name__)
    # PyTorch names ember lacks fail clearly at the point of use.
    from .._missing import attribute_error

    raise attribute_error("torch.optim", name)
