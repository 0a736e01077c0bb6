"""ResNet (He et al., 2015) with torchvision's layout: ``ResNet``, ``BasicBlock``, ``Bottleneck``
and the builders ``resnet18/34/50/101/152`` with their ImageNet weights enums.

Module names and parameter shapes equal torchvision's, so its checkpoints load with
``load_state_dict``. Bottleneck strides in its 3x3 conv (ResNet v1.5), as torchvision's does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ... import flatten, nn
from ..._tensor import Tensor
from ..transforms._presets import ImageClassification
from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "ResNet18_Weights", "ResNet34_Weights",
           "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights", "resnet18", "resnet34",
           "resnet50", "resnet101", "resnet152"]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1,
            dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution, padded to keep the size at stride 1."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                     groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convs with a residual connection (ResNet-18/34)."""

    expansion: int = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None, groups: int = 1, base_width: int = 64,
                 dilation: int = 1, norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        # the shortcut after the main path, as torchvision orders it (torch.fx graphs, and
        # feature-extraction node names, follow this order)
        identity = x if self.downsample is None else self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided), 1x1 expand by 4, with a residual connection (ResNet-50+)."""

    expansion: int = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None, groups: int = 1, base_width: int = 64,
                 dilation: int = 1, norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """A ResNet of ``block``s, ``layers[i]`` blocks in stage i; ``fc`` gives ``num_classes``
    logits."""

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int],
                 num_classes: int = 1000, zero_init_residual: bool = False, groups: int = 1,
                 width_per_group: int = 64, replace_stride_with_dilation: list[bool] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2,
                                       dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2,
                                       dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2,
                                       dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        # each residual branch then starts at zero, so every block begins as the identity
        # (Goyal et al., 2017)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block: type[BasicBlock | Bottleneck], planes: int, blocks: int,
                    stride: int = 1, dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, dilation=self.dilation,
                                norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = flatten(self.avgpool(x), 1)
        return self.fc(x)

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _resnet(block: type[BasicBlock | Bottleneck], layers: list[int],
            weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> ResNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = ResNet(block, layers, **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


_COMMON_META = {"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES}
_RECIPE_V1 = "https://github.com/pytorch/vision/tree/main/references/classification#resnet"
_RECIPE_V2 = "https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621"
_RECIPE_V2_DEEP = "https://github.com/pytorch/vision/issues/3995#new-recipe"
_DOCS_V1 = "These weights reproduce closely the results of the paper using a simple training recipe."
_DOCS_V2 = """
                These weights improve upon the results of the original paper by using TorchVision's `new training recipe
                <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
            """


def _v1(url: str, num_params: int, acc1: float, acc5: float, ops: float, size: float) -> Weights:
    return Weights(url=url, transforms=partial(ImageClassification, crop_size=224), meta={
        **_COMMON_META, "num_params": num_params, "recipe": _RECIPE_V1,
        "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}},
        "_ops": ops, "_file_size": size, "_docs": _DOCS_V1})


def _v2(url: str, num_params: int, acc1: float, acc5: float, ops: float, size: float,
        recipe: str = _RECIPE_V2) -> Weights:
    return Weights(url=url, transforms=partial(ImageClassification, crop_size=224, resize_size=232),
                   meta={**_COMMON_META, "num_params": num_params, "recipe": recipe,
                         "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}},
                         "_ops": ops, "_file_size": size, "_docs": _DOCS_V2})


_URL = "https://download.pytorch.org/models/"


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(_URL + "resnet18-f37072fd.pth", 11689512, 69.758, 89.078, 1.814, 44.661)
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(_URL + "resnet34-b627a593.pth", 21797672, 73.314, 91.420, 3.664, 83.275)
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(_URL + "resnet50-0676ba61.pth", 25557032, 76.130, 92.862, 4.089, 97.781)
    IMAGENET1K_V2 = _v2(_URL + "resnet50-11ad3fa6.pth", 25557032, 80.858, 95.434, 4.089, 97.79)
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(_URL + "resnet101-63fe2227.pth", 44549160, 77.374, 93.546, 7.801, 170.511)
    IMAGENET1K_V2 = _v2(_URL + "resnet101-cd907fc2.pth", 44549160, 81.886, 95.780, 7.801, 170.53,
                        _RECIPE_V2_DEEP)
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(_URL + "resnet152-394f9c45.pth", 60192808, 78.312, 94.046, 11.514, 230.434)
    IMAGENET1K_V2 = _v2(_URL + "resnet152-f82ba261.pth", 60192808, 82.284, 96.002, 11.514, 230.474,
                        _RECIPE_V2_DEEP)
    DEFAULT = IMAGENET1K_V2


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet18_Weights.IMAGENET1K_V1))
def resnet18(*, weights: ResNet18_Weights | None = None, progress: bool = True,
             **kwargs: Any) -> ResNet:
    """ResNet-18 (`Deep Residual Learning for Image Recognition`); ``weights`` loads ImageNet
    weights, ``progress`` shows the download's progress, ``kwargs`` go to ``ResNet``."""
    weights = ResNet18_Weights.verify(weights)
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet34_Weights.IMAGENET1K_V1))
def resnet34(*, weights: ResNet34_Weights | None = None, progress: bool = True,
             **kwargs: Any) -> ResNet:
    """ResNet-34; arguments as ``resnet18``."""
    weights = ResNet34_Weights.verify(weights)
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet50_Weights.IMAGENET1K_V1))
def resnet50(*, weights: ResNet50_Weights | None = None, progress: bool = True,
             **kwargs: Any) -> ResNet:
    """ResNet-50 (v1.5: stride in the 3x3 conv); arguments as ``resnet18``."""
    weights = ResNet50_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet101_Weights.IMAGENET1K_V1))
def resnet101(*, weights: ResNet101_Weights | None = None, progress: bool = True,
              **kwargs: Any) -> ResNet:
    """ResNet-101; arguments as ``resnet18``."""
    weights = ResNet101_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet152_Weights.IMAGENET1K_V1))
def resnet152(*, weights: ResNet152_Weights | None = None, progress: bool = True,
              **kwargs: Any) -> ResNet:
    """ResNet-152; arguments as ``resnet18``."""
    weights = ResNet152_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 8, 36, 3], weights, progress, **kwargs)
