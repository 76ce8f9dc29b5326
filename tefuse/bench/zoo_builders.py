"""The torch side of the model zoo (tefuse/bench/zoo.py): small versions of torchvision's
architectures, transformers models built from their configs, seeded random weights, and the
ONNX export.

Why small versions: a CPU test builds every zoo model, so each needs a configuration with two
blocks, narrow widths and small images that keeps the architecture's distinctive parts (grouped
and depthwise convs, squeeze-excite, branch concatenation, window attention, dilated convs) at a
fraction of the kernels. Every builder here uses torchvision's and transformers' public classes.

torch, torchvision and transformers are imported inside the functions: the zoo's list can be read,
and its absence reported, where they are not installed.
"""
from __future__ import annotations

import importlib
import logging
import warnings
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

log = logging.getLogger(__name__)

OPSET = 17


# -- torchvision, whole architectures ----------------------------------------------------------
def torchvision_model(name: str, **kw):
    """torchvision.models.<name> with no pretrained weights (nothing is downloaded)."""
    import torchvision

    return getattr(torchvision.models, name)(weights=None, **kw)


def segmentation_model(name: str, **kw):
    """torchvision.models.segmentation.<name> without pretrained weights, returning its "out" map."""
    import torchvision.models.segmentation as seg

    return select_outputs(getattr(seg, name)(weights=None, weights_backbone=None, **kw), ("out",))


def fpn_backbone(backbone_name: str):
    """Faster R-CNN's ResNet+FPN backbone (every layer trainable: the detection heads and the
    data-dependent NMS are left out); returns its five feature maps."""
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

    import torch

    # BatchNorm2d rather than the detector's FrozenBatchNorm2d: the same ONNX in eval mode, and
    # statistics that calibrate_batch_norm can measure
    return select_outputs(resnet_fpn_backbone(backbone_name=backbone_name, weights=None, trainable_layers=5,
                                              norm_layer=torch.nn.BatchNorm2d))


# -- torchvision, small configurations -----------------------------------------------------------
def small_resnet(layers: Sequence[int], block: str = "bottleneck", groups: int = 1, width_per_group: int = 64,
                 num_classes: int = 10, dilation: Optional[Sequence[bool]] = None):
    """ResNet / ResNeXt (groups) / Wide ResNet (width_per_group) with `layers` blocks per stage."""
    from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

    return ResNet(Bottleneck if block == "bottleneck" else BasicBlock, list(layers), num_classes=num_classes,
                  groups=groups, width_per_group=width_per_group,
                  replace_stride_with_dilation=list(dilation) if dilation else None)


def small_regnet(depth: int, w_0: int, w_a: float, w_m: float, group_width: int, se_ratio: Optional[float],
                 stem_width: int, num_classes: int = 10):
    from torchvision.models.regnet import BlockParams, RegNet

    params = BlockParams.from_init_params(depth, w_0, w_a, w_m, group_width, se_ratio=se_ratio)
    return RegNet(params, num_classes=num_classes, stem_width=stem_width)


def small_efficientnet(stages: Sequence[Sequence], last_channel: Optional[int] = None, num_classes: int = 10):
    """EfficientNet from (kind, expand_ratio, kernel, stride, in, out, layers) stages, kind "mb"
    (MBConv: v1, and v2's later stages) or "fused" (Fused-MBConv: v2's first stages)."""
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig

    kinds = {"mb": MBConvConfig, "fused": FusedMBConvConfig}
    setting = [kinds[kind](*args) for kind, *args in stages]
    return EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.0, num_classes=num_classes,
                        last_channel=last_channel)


def small_mobilenet_v2(setting: Sequence[Sequence[int]], width_mult: float = 1.0, num_classes: int = 10):
    from torchvision.models.mobilenetv2 import MobileNetV2

    return MobileNetV2(num_classes=num_classes, width_mult=width_mult,
                       inverted_residual_setting=[list(s) for s in setting])


def small_mobilenet_v3(setting: Sequence[Sequence], last_channel: int, num_classes: int = 10):
    """MobileNetV3 from InvertedResidualConfig rows (in, kernel, expanded, out, use_se,
    activation "RE"/"HS", stride, dilation)."""
    from torchvision.models.mobilenetv3 import InvertedResidualConfig, MobileNetV3

    rows = [InvertedResidualConfig(*row, width_mult=1.0) for row in setting]
    return MobileNetV3(rows, last_channel=last_channel, num_classes=num_classes)


def small_convnext(stages: Sequence[Sequence], num_classes: int = 10):
    """ConvNeXt from (in, out or None, blocks) stages."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    return ConvNeXt([CNBlockConfig(*s) for s in stages], stochastic_depth_prob=0.0, num_classes=num_classes)


def small_densenet(growth_rate: int, block_config: Sequence[int], num_init_features: int, bn_size: int,
                   num_classes: int = 10):
    from torchvision.models.densenet import DenseNet

    return DenseNet(growth_rate, tuple(block_config), num_init_features, bn_size, num_classes=num_classes)


def small_inception_v3(pool_features: int = 8, num_classes: int = 10):
    """Inception v3's stem conv, one InceptionA (four branches, an average pool that counts its
    padding) and one InceptionB (the grid reduction), then the classifier: Inception3's depth
    is fixed, so its blocks are assembled here."""
    import torch.nn as nn
    from torchvision.models.inception import BasicConv2d, InceptionA, InceptionB

    a_out = 64 + 64 + 96 + pool_features
    return nn.Sequential(BasicConv2d(3, 32, kernel_size=3, stride=2), InceptionA(32, pool_features),
                         InceptionB(a_out), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(a_out + 384 + 96, num_classes))


def small_googlenet(branches: Sequence[int], stem: int = 16, num_classes: int = 10):
    """GoogLeNet's stem and two of its Inception blocks (ch1x1, ch3x3red, ch3x3, ch5x5red,
    ch5x5, pool_proj = `branches`), then the classifier."""
    import torch.nn as nn
    from torchvision.models.googlenet import BasicConv2d, Inception

    c1, _, c3, _, c5, cp = branches
    out = c1 + c3 + c5 + cp
    return nn.Sequential(BasicConv2d(3, stem, kernel_size=3, stride=2, padding=1),
                         nn.MaxPool2d(3, stride=2, ceil_mode=True), Inception(stem, *branches),
                         Inception(out, *branches), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(out, num_classes))


def small_shufflenet(stages_repeats: Sequence[int], stages_out_channels: Sequence[int], num_classes: int = 10):
    from torchvision.models.shufflenetv2 import ShuffleNetV2

    return ShuffleNetV2(list(stages_repeats), list(stages_out_channels), num_classes=num_classes)


def small_squeezenet(fires: Sequence[Sequence[int]], stem: int = 16, num_classes: int = 10):
    """SqueezeNet 1.1's layout (stem conv, ceil-mode max pools, Fire modules, a conv classifier)
    with the given Fire modules (squeeze, expand1x1, expand3x3 each)."""
    import torch.nn as nn
    from torchvision.models.squeezenet import Fire

    layers, c = [nn.Conv2d(3, stem, 3, stride=2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True)], stem
    for s, e1, e3 in fires:
        layers.append(Fire(c, s, e1, e3))
        c = e1 + e3
    layers += [nn.MaxPool2d(3, 2, ceil_mode=True), nn.Dropout(0.5), nn.Conv2d(c, num_classes, 1), nn.ReLU(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers)


def small_mnasnet(alpha: float, last_channel: int = 64, num_classes: int = 10):
    """MNASNet's stem and the first blocks of its first two stacks (a residual one included),
    then a 1x1 conv to `last_channel` and the classifier: MNASNet's depth is fixed, so the
    built network is trimmed."""
    import torch.nn as nn
    from torchvision.models.mnasnet import MNASNet

    m = MNASNet(alpha, num_classes=num_classes)
    stem, first, second = list(m.layers[:8]), m.layers[8][:2], m.layers[9][:1]
    c = [mod for mod in second.modules() if isinstance(mod, nn.Conv2d)][-1].out_channels
    m.layers = nn.Sequential(*stem, first, second, nn.Conv2d(c, last_channel, 1, bias=False),
                             nn.BatchNorm2d(last_channel), nn.ReLU(inplace=True))
    m.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last_channel, num_classes))
    return m


def small_vit(**kw):
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(**kw)


def small_swin(**kw):
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(stochastic_depth_prob=0.0, **kw)


def small_maxvit(input_size: int, **kw):
    from torchvision.models.maxvit import MaxVit

    return MaxVit(input_size=(input_size, input_size), stochastic_depth_prob=0.0, **kw)


def small_segmentation(head: str, num_classes: int = 4, **resnet_kw):
    """FCN / DeepLabV3 on a small dilated ResNet (output stride 8, as torchvision's)."""
    from torchvision.models.feature_extraction import create_feature_extractor
    from torchvision.models.segmentation import deeplabv3, fcn

    trunk = create_feature_extractor(small_resnet(dilation=(False, True, True), **resnet_kw), {"layer4": "out"})
    channels = 512 * 4  # Bottleneck's expansion of layer4's 512 planes
    if head == "fcn":
        model = fcn.FCN(trunk, fcn.FCNHead(channels, num_classes))
    else:
        model = deeplabv3.DeepLabV3(trunk, deeplabv3.DeepLabHead(channels, num_classes, atrous_rates=(2, 4, 6)))
    return select_outputs(model, ("out",))


def small_lraspp(setting: Sequence[Sequence], last_channel: int, num_classes: int = 4, inter_channels: int = 16):
    """LR-ASPP on a small MobileNetV3's features: the first block's map is "low", the last conv's
    "high" (torchvision takes them at strides 8 and 16 of the large MobileNetV3)."""
    from torchvision.models.feature_extraction import create_feature_extractor
    from torchvision.models.segmentation.lraspp import LRASPP

    features = small_mobilenet_v3(setting, last_channel).features
    last = str(len(features) - 1)
    trunk = create_feature_extractor(features, {"1": "low", last: "high"})
    low, high = setting[0][3], features[-1].out_channels
    return select_outputs(LRASPP(trunk, low, high, num_classes, inter_channels), ("out",))


def small_fpn(layers: Sequence[int], out_channels: int):
    """A BasicBlock ResNet's four stages through an FPN with the extra max-pooled level, as in
    Faster R-CNN's backbone."""
    from torchvision.models.detection.backbone_utils import BackboneWithFPN

    trunk = small_resnet(layers, block="basic")
    return_layers = {f"layer{k + 1}": str(k) for k in range(4)}
    model = BackboneWithFPN(trunk, return_layers, [64, 128, 256, 512], out_channels)
    return select_outputs(model)


# -- transformers --------------------------------------------------------------------------------
def hf_model(model: str, config: str, inputs: Sequence[str], outputs: Sequence[str], config_kw: dict):
    """transformers' `model` (a class name in `transformers`, or a dotted path) built from
    `config`(**config_kw) with random weights and eager attention (the traceable one), called
    with `inputs` as keywords, returning `outputs`."""
    import transformers

    cfg = getattr(transformers, config)(**config_kw, attn_implementation="eager")
    cls = _resolve(model, transformers)
    return select_outputs(cls(cfg), tuple(outputs), tuple(inputs))


def _resolve(name: str, default_module):
    if "." not in name:
        return getattr(default_module, name)
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def select_outputs(model, keys: Optional[tuple] = None, arg_names: Optional[tuple] = None):
    """`model` returning a tuple of tensors: the `keys` of its dict (or ModelOutput) result, or
    every value where keys is None; called with `arg_names` as keywords when given. The ONNX
    graph then has one output per tensor, in a known order."""
    import torch

    class Select(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            out = self.model(**dict(zip(arg_names, args))) if arg_names else self.model(*args)
            return tuple(out.values()) if keys is None else tuple(out[k] for k in keys)

    return Select()


# -- weights -------------------------------------------------------------------------------------
MIN_GAIN = 1.0  # std(w) * sqrt(fan_in) below which a layer's weights are drawn anew
# a batch norm's shift / scale, drawn per channel: N(BN_SHIFT, BN_SHIFT_STD)
BN_SHIFT, BN_SHIFT_STD = 1.0, 0.25
# the least variance a calibrated batch norm divides by, relative to its input's mean square
MIN_RELATIVE_VAR = 0.1
# changes with the draw above: part of the export cache's key (zoo.onnx_path)
DRAW_VERSION = 3


def randomize_weights(model, seed: int = 0):
    """Seeded random values where a fresh model's weights would make a check prove little.

    - Linear and Conv weights whose gain std(w) * sqrt(fan_in) is below MIN_GAIN are drawn from
      N(0, 1 / fan_in): zero heads (torchvision ViT's classifier: every logit 0), and the
      normal(0, 0.01) heads and 0.02 projections of torchvision's and transformers' inits, after
      which the logits hardly depend on the input and are mostly their bias.
    - Batch norms get random statistics and scale (`models.randomize_batch_norm`), and a shift
      of about one scale (`shift_batch_norm`).
    - Every other parameter whose elements are all equal gets random values: zero biases, the
      ones of LayerNorm scales, ConvNeXt's 1e-6 layer scale (which hides a block's residual
      branch); values of magnitude >= 0.5 become uniform in [0.5, 1.5] (sign kept), the rest
      normal with std 0.1.
    - An attention that scales its scores by 1/sqrt(d_head) in its query projection's init, not
      in its forward (T5), keeps that scale when the query is drawn anew: without it the scores
      are sqrt(d_head) times too large, the softmax nearly one-hot, and float16 misses by 4%
      (PyTorch's own `model.half()` as much as tefuse's build).
    """
    import torch

    from .models import randomize_batch_norm

    torch.manual_seed(seed)
    with torch.no_grad():
        drawn = set()
        for m in model.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)) and m.weight.numel():
                fan_in = m.weight[0].numel()
                if float(m.weight.std(unbiased=False)) * fan_in ** 0.5 < MIN_GAIN:
                    m.weight.normal_(0.0, fan_in ** -0.5)
                    drawn.add(m)
        for m in model.modules():  # transformers' T5Attention: the score scale lives in q's init
            q, d_head = getattr(m, "q", None), getattr(m, "key_value_proj_dim", None)
            if q in drawn and isinstance(d_head, int):
                q.weight.mul_(d_head ** -0.5)
        randomize_batch_norm(model)
        shift_batch_norm(model)
        for p in model.parameters():
            if p.numel() == 0 or not bool((p == p.reshape(-1)[0]).all()):
                continue
            c = float(p.reshape(-1)[0])
            if abs(c) >= 0.5:
                p.uniform_(0.5, 1.5).mul_(1.0 if c > 0 else -1.0)
            else:
                p.normal_(0.0, 0.1)
    return model


def shift_batch_norm(model) -> None:
    """Each batch norm's shift drawn as its scale times N(BN_SHIFT, BN_SHIFT_STD), so the unit
    after it sees z + ~1 with z standard, as in float16's well-conditioned regime.

    Why: calibrated batch norms centre every channel, which discards the mean of the ReLU output
    before them but not the rounding error riding on it; with a shift near 0 (z centred at the
    ReLU's kink) the relative error then grows by E[x^2] / Var[x] = pi / (pi - 1) in mean square
    per conv-BN-ReLU layer, and a deep network (ResNet-50, Inception v3) turns float16's 5e-4
    into errors of 2-5% of the output, PyTorch's own half precision as much. A shift of one
    scale keeps 84% of the units linear, and the growth drops to 1.12 per layer.
    """
    import torch

    for m in model.modules():
        w, b = getattr(m, "weight", None), getattr(m, "bias", None)
        if isinstance(getattr(m, "running_var", None), torch.Tensor) and isinstance(w, torch.Tensor) and \
                isinstance(b, torch.Tensor) and b.shape == w.shape:
            b.copy_(w * torch.randn_like(w).mul_(BN_SHIFT_STD).add_(BN_SHIFT))


def calibrate_batch_norm(model, batch: tuple) -> bool:
    """Batch-norm running statistics measured on `batch` (a tuple of input tensors), as training
    would leave them, instead of random ones: with random statistics the activations of a deep
    network drift from layer to layer until its output hardly depends on its input (a small
    MobileNetV3's logits moved by 1e-5 of their scale between two images), and then an error
    relative to the output's scale proves little. Only the batch norms run in training mode
    (dropout stays off); each sees the statistics of its actual input. Returns whether `model`
    has any batch norm.

    A channel's variance is kept >= MIN_RELATIVE_VAR of its mean square: after a global pool
    (DeepLabV3's image-level ASPP branch) random images hardly differ, a batch norm measured
    there multiplies by ~200 whatever varies, float16's rounding included (by <= ~3 with the floor)."""
    import torch

    bns = [m for m in model.modules() if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d,
                                                        torch.nn.BatchNorm3d)) and m.track_running_stats]
    if not bns:
        return False
    momenta = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: exactly this batch's statistics
        m.train()
    with torch.no_grad():
        model(*batch)
    for m, momentum in zip(bns, momenta):
        m.running_var.clamp_(min=(m.running_var + m.running_mean ** 2) * MIN_RELATIVE_VAR)
        m.momentum = momentum
        m.eval()
    return True


# -- export --------------------------------------------------------------------------------------
def export_onnx(model, inputs: dict[str, np.ndarray], output_names: Sequence[str], path: Path) -> Path:
    """Export `model` called with `inputs` (in order) to ONNX at opset 17 with the TorchScript
    exporter (much faster than the dynamo one, and what the zoo's shapes need: all static).
    Written to a temporary name, then renamed: parallel exports of one model do not clash."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{id(model)}.tmp")
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    # not under no_grad: MultiheadAttention would take its fused fast path, which has no ONNX export
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.onnx.export(model, args, str(tmp), dynamo=False, opset_version=OPSET,
                          input_names=list(inputs), output_names=list(output_names))
    log.debug("%s: %d exporter warnings (%s)", path.name, len(caught),
              "; ".join(sorted({type(w.message).__name__ for w in caught})))
    tmp.replace(path)
    return path


def versions() -> dict[str, Any]:
    """The versions that decide what an export contains (part of the cache key and the report)."""
    import onnx
    import torch

    out = {"torch": torch.__version__, "onnx": onnx.__version__}
    for name in ("torchvision", "transformers", "onnxruntime"):
        try:
            out[name] = importlib.import_module(name).__version__
        except ImportError:
            out[name] = None
    return out
