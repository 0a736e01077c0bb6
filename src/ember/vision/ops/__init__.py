"""``ember.vision.ops``: box utilities (``nms``, ``batched_nms``, ``box_iou``, ``box_area``,
``box_convert``, ``clip_boxes_to_image``, ``remove_small_boxes``), ``roi_align``/``RoIAlign``
(differentiable with respect to the input), and ``ops.misc``'s blocks: ``Conv2dNormActivation``,
``Conv3dNormActivation``, ``FrozenBatchNorm2d``, ``MLP``, ``Permute``, ``SqueezeExcitation``."""

from .boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    nms,
    remove_small_boxes,
)
from .misc import (
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    FrozenBatchNorm2d,
    Permute,
    SqueezeExcitation,
)
from .roi_align import RoIAlign, roi_align

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert",
           "box_area", "box_iou", "roi_align", "RoIAlign", "Conv2dNormActivation",
           "Conv3dNormActivation", "FrozenBatchNorm2d", "MLP", "Permute", "SqueezeExcitation"]
