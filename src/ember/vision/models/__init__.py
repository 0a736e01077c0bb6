"""``ember.vision.models``: torchvision's classification models with the same module names,
parameter shapes and weights enums, so torchvision checkpoints load with ``load_state_dict``.

``resnet18/34/50/101/152``, ``vgg11/13/16/19`` (and ``_bn``), ``alexnet``, ``mobilenet_v2``,
``squeezenet1_0/1_1``; ``get_model("resnet18", weights="DEFAULT")``, ``list_models()``,
``get_model_weights``, ``get_weight``.
"""

from ._api import (
           Weights,
           WeightsEnum,
           get_model,
           get_model_builder,
           get_model_weights,
           get_weight,
           list_models,
)
from .alexnet import *  # noqa: F403
from .alexnet import __all__ as _alexnet_all
from .mobilenetv2 import *  # noqa: F403
from .mobilenetv2 import __all__ as _mobilenetv2_all
from .resnet import *  # noqa: F403
from .resnet import __all__ as _resnet_all
from .squeezenet import *  # noqa: F403
from .squeezenet import __all__ as _squeezenet_all
from .vgg import *  # noqa: F403
from .vgg import __all__ as _vgg_all

__all__ = ["Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights",
           "get_weight", "list_models", *_alexnet_all, *_mobilenetv2_all, *_resnet_all,
           *_squeezenet_all, *_vgg_all]
