"""The model zoo: real architectures exported from PyTorch to ONNX, imported and built by tefuse,
and checked against onnxruntime.

Each entry builds its torch module in the *full* configuration (the published architecture at
its usual image size) and in a *small* one (two blocks, narrow widths, 32-64 px images, a small
vocabulary) that the CPU test suite builds for every entry (tests/bench/test_zoo.py). Weights are
random and seeded (zoo_builders.randomize_weights); nothing is downloaded.

On the GPU machine (needs the `zoo` extra: torch, torchvision, transformers):

    python -m tefuse.bench.zoo --target cuda --precision fp32,fp16 --out benchmarks/zoo.json

`--small` takes the small configurations, `--models resnet50,bert` a subset. On a machine of
several GPUs, `--shard 1/2` and `--shard 2/2` (one process a GPU) split the list, and `--merge
a.json b.json --out zoo.json` joins their reports; `--bisect` names the first ONNX tensor that
departs in a failed check (tefuse.bench.bisect). The JSON holds, per
model: the export/import/build status (a refused import with its one-line reason), kernels, build
seconds, the error relative to the output's scale (max |onnxruntime|) per precision and whether
top-1 / argmax agrees.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from . import zoo_builders as zb
from .runs import command_line, shard_of, sharded, write_json_whole

log = logging.getLogger(__name__)

SEED = 0
# the least move of the reference between two inputs, relative to its scale, for a check to count.
# Degenerate weights give 1e-5; a global average pool over many positions (SqueezeNet 1.1's
# 13x13) legitimately leaves a few percent
MIN_SENSITIVITY = 0.02
CALIBRATION_BATCH = 4  # images whose statistics the batch norms take (build_module)
# error allowed relative to the output's scale (max |reference|), per build precision
TOLERANCE = {"fp32": 1e-4, "tf32": 1e-3, "fp16": 1e-2, "bf16": 3e-2}


# -- the list's types ----------------------------------------------------------------------------
@dataclass(frozen=True)
class InputSpec:
    """One model input: `kind` "image" (standard normal float32), "tokens" (int64 ids in
    [2, high): no padding or special id) or "mask" (int64 attention mask: ones, the last quarter
    of the last row zero, so masking matters)."""

    name: str
    shape: tuple[int, ...]
    kind: str = "image"
    high: int = 0

    @property
    def dtype(self) -> str:
        return "float32" if self.kind == "image" else "int64"


@dataclass(frozen=True)
class ModelConfig:
    """How to build one configuration: `factory(**kwargs)` gives the torch module, called with
    the `inputs` in order and returning the `outputs` in order."""

    factory: Callable[..., Any]
    kwargs: Mapping[str, Any]
    inputs: tuple[InputSpec, ...]
    outputs: tuple[str, ...] = ("output",)

    def key(self) -> str:
        """What decides the exported model: the factory, its arguments and the inputs."""
        f = f"{self.factory.__module__}.{self.factory.__qualname__}"
        return repr((f, sorted(self.kwargs.items()), self.inputs, self.outputs))


@dataclass(frozen=True)
class ZooEntry:
    """A zoo model. `argmax_axis`: the class axis of the first output where top-1 / argmax
    agreement is checked (classifier logits, per-pixel classes, next-token logits); None where
    the output is features."""

    name: str
    family: str
    full: ModelConfig
    small: ModelConfig
    argmax_axis: Optional[int] = None

    def config(self, small: bool) -> ModelConfig:
        return self.small if small else self.full


# -- input helpers -------------------------------------------------------------------------------
def image(size: int, batch: int = 1, name: str = "input") -> tuple[InputSpec, ...]:
    return (InputSpec(name, (batch, 3, size, size)),)


def tokens(seq: int, vocab: int, batch: int = 1) -> tuple[InputSpec, ...]:
    return (InputSpec("input_ids", (batch, seq), "tokens", vocab),
            InputSpec("attention_mask", (batch, seq), "mask"))


def tv(factory: Callable, inputs: tuple[InputSpec, ...], outputs: tuple[str, ...] = ("logits",),
       **kwargs) -> ModelConfig:
    """A torchvision configuration: `factory(**kwargs)` called with the image."""
    return ModelConfig(factory, kwargs, inputs, outputs)


def hf(model: str, config: str, inputs: tuple[InputSpec, ...], outputs: tuple[str, ...],
       **config_kw) -> ModelConfig:
    """A transformers configuration: `model` built from `config`(**config_kw), random weights."""
    kwargs = dict(model=model, config=config, inputs=tuple(i.name for i in inputs), outputs=outputs,
                  config_kw=config_kw)
    return ModelConfig(zb.hf_model, kwargs, inputs, outputs)


# -- the zoo -------------------------------------------------------------------------------------
BERT_SMALL = dict(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64)
MV3_SMALL = [(16, 3, 16, 16, True, "RE", 2, 1), (16, 5, 48, 24, True, "HS", 2, 1)]
SEG = ("out",)
FPN_OUT = ("p2", "p3", "p4", "p5", "pool")

ZOO: tuple[ZooEntry, ...] = (
    # torchvision classification
    ZooEntry("resnet50", "ResNet", tv(zb.torchvision_model, image(224), name="resnet50"),
             tv(zb.small_resnet, image(32), layers=[1, 1, 1, 1], width_per_group=16), argmax_axis=-1),
    ZooEntry("resnext50_32x4d", "ResNeXt", tv(zb.torchvision_model, image(224), name="resnext50_32x4d"),
             tv(zb.small_resnet, image(32), layers=[1, 1, 1, 1], groups=4, width_per_group=4), argmax_axis=-1),
    ZooEntry("wide_resnet50_2", "Wide ResNet", tv(zb.torchvision_model, image(224), name="wide_resnet50_2"),
             tv(zb.small_resnet, image(32), layers=[1, 1, 1, 1], width_per_group=32), argmax_axis=-1),
    ZooEntry("regnet_y_400mf", "RegNet", tv(zb.torchvision_model, image(224), name="regnet_y_400mf"),
             tv(zb.small_regnet, image(32), depth=2, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25,
                stem_width=8), argmax_axis=-1),
    ZooEntry("efficientnet_b0", "EfficientNet", tv(zb.torchvision_model, image(224), name="efficientnet_b0"),
             tv(zb.small_efficientnet, image(32), stages=[("mb", 1, 3, 1, 8, 8, 1), ("mb", 6, 5, 2, 8, 16, 1)]),
             argmax_axis=-1),
    ZooEntry("efficientnet_v2_s", "EfficientNet v2", tv(zb.torchvision_model, image(384), name="efficientnet_v2_s"),
             tv(zb.small_efficientnet, image(32), stages=[("fused", 4, 3, 2, 8, 16, 1), ("mb", 4, 3, 2, 16, 24, 1)],
                last_channel=64), argmax_axis=-1),
    ZooEntry("mobilenet_v2", "MobileNet v2", tv(zb.torchvision_model, image(224), name="mobilenet_v2"),
             tv(zb.small_mobilenet_v2, image(32), setting=[[1, 16, 1, 1], [6, 24, 2, 2]], width_mult=0.5),
             argmax_axis=-1),
    ZooEntry("mobilenet_v3_large", "MobileNet v3", tv(zb.torchvision_model, image(224), name="mobilenet_v3_large"),
             tv(zb.small_mobilenet_v3, image(32), setting=MV3_SMALL, last_channel=64), argmax_axis=-1),
    ZooEntry("convnext_tiny", "ConvNeXt", tv(zb.torchvision_model, image(224), name="convnext_tiny"),
             tv(zb.small_convnext, image(32), stages=[(16, 32, 1), (32, None, 1)]), argmax_axis=-1),
    ZooEntry("densenet121", "DenseNet", tv(zb.torchvision_model, image(224), name="densenet121"),
             tv(zb.small_densenet, image(32), growth_rate=8, block_config=[2, 2], num_init_features=16, bn_size=2),
             argmax_axis=-1),
    ZooEntry("inception_v3", "Inception v3",
             tv(zb.torchvision_model, image(299), name="inception_v3", aux_logits=False, init_weights=True),
             tv(zb.small_inception_v3, image(32)), argmax_axis=-1),
    ZooEntry("googlenet", "GoogLeNet",
             tv(zb.torchvision_model, image(224), name="googlenet", aux_logits=False, init_weights=True),
             tv(zb.small_googlenet, image(32), branches=[8, 8, 16, 4, 8, 8]), argmax_axis=-1),
    ZooEntry("shufflenet_v2_x1_0", "ShuffleNet v2",
             tv(zb.torchvision_model, image(224), name="shufflenet_v2_x1_0"),
             tv(zb.small_shufflenet, image(32), stages_repeats=[1, 1, 1], stages_out_channels=[8, 16, 32, 64, 64]),
             argmax_axis=-1),
    ZooEntry("squeezenet1_1", "SqueezeNet", tv(zb.torchvision_model, image(224), name="squeezenet1_1"),
             tv(zb.small_squeezenet, image(32), fires=[(8, 16, 16), (8, 16, 16)]), argmax_axis=-1),
    ZooEntry("mnasnet1_0", "MNASNet", tv(zb.torchvision_model, image(224), name="mnasnet1_0"),
             tv(zb.small_mnasnet, image(32), alpha=0.5), argmax_axis=-1),
    ZooEntry("vit_b_16", "ViT", tv(zb.torchvision_model, image(224), name="vit_b_16"),
             tv(zb.small_vit, image(32), image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                mlp_dim=64, num_classes=10), argmax_axis=-1),
    ZooEntry("swin_t", "Swin", tv(zb.torchvision_model, image(224), name="swin_t"),
             tv(zb.small_swin, image(32), patch_size=[4, 4], embed_dim=16, depths=[2, 1], num_heads=[2, 2],
                window_size=[4, 4], num_classes=10), argmax_axis=-1),
    ZooEntry("maxvit_t", "MaxViT", tv(zb.torchvision_model, image(224), name="maxvit_t"),
             tv(zb.small_maxvit, image(32), input_size=32, stem_channels=8, partition_size=2,
                block_channels=[16, 32], block_layers=[1, 1], head_dim=8, num_classes=10), argmax_axis=-1),
    # torchvision segmentation and detection
    ZooEntry("fcn_resnet50", "FCN", tv(zb.segmentation_model, image(224), SEG, name="fcn_resnet50", aux_loss=False),
             tv(zb.small_segmentation, image(32), SEG, head="fcn", layers=[1, 1, 1, 1], width_per_group=16),
             argmax_axis=1),
    ZooEntry("deeplabv3_resnet50", "DeepLabV3",
             tv(zb.segmentation_model, image(224), SEG, name="deeplabv3_resnet50", aux_loss=False),
             tv(zb.small_segmentation, image(32), SEG, head="deeplabv3", layers=[1, 1, 1, 1], width_per_group=16),
             argmax_axis=1),
    ZooEntry("lraspp_mobilenet_v3_large", "LR-ASPP",
             tv(zb.segmentation_model, image(224), SEG, name="lraspp_mobilenet_v3_large"),
             tv(zb.small_lraspp, image(32), SEG, setting=MV3_SMALL, last_channel=64), argmax_axis=1),
    ZooEntry("fasterrcnn_resnet50_fpn_backbone", "ResNet+FPN",
             tv(zb.fpn_backbone, image(800), FPN_OUT, backbone_name="resnet50"),
             tv(zb.small_fpn, image(64), FPN_OUT, layers=[1, 1, 1, 1], out_channels=16)),
    # transformers, random weights from configs
    ZooEntry("bert", "BERT", hf("BertModel", "BertConfig", tokens(128, 30522), ("last_hidden_state",)),
             hf("BertModel", "BertConfig", tokens(16, 256, batch=2), ("last_hidden_state",), **BERT_SMALL)),
    ZooEntry("roberta", "RoBERTa", hf("RobertaModel", "RobertaConfig", tokens(128, 50265), ("last_hidden_state",)),
             hf("RobertaModel", "RobertaConfig", tokens(16, 256, batch=2), ("last_hidden_state",),
                **{**BERT_SMALL, "max_position_embeddings": 66})),
    ZooEntry("distilbert", "DistilBERT",
             hf("DistilBertModel", "DistilBertConfig", tokens(128, 30522), ("last_hidden_state",)),
             hf("DistilBertModel", "DistilBertConfig", tokens(16, 256, batch=2), ("last_hidden_state",),
                vocab_size=256, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64)),
    ZooEntry("gpt2", "GPT-2", hf("GPT2LMHeadModel", "GPT2Config", tokens(128, 50257), ("logits",)),
             hf("GPT2LMHeadModel", "GPT2Config", tokens(16, 256, batch=2), ("logits",), vocab_size=256,
                n_positions=64, n_embd=32, n_layer=2, n_head=2), argmax_axis=-1),
    ZooEntry("t5_encoder", "T5", hf("T5EncoderModel", "T5Config", tokens(128, 32128), ("last_hidden_state",)),
             hf("T5EncoderModel", "T5Config", tokens(16, 256, batch=2), ("last_hidden_state",), vocab_size=256,
                d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, relative_attention_num_buckets=8,
                relative_attention_max_distance=16)),
    ZooEntry("vit_hf", "ViT (transformers)",
             hf("ViTForImageClassification", "ViTConfig", image(224, name="pixel_values"), ("logits",), num_labels=1000),
             hf("ViTForImageClassification", "ViTConfig", image(32, name="pixel_values"), ("logits",), image_size=32,
                patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                num_labels=10), argmax_axis=-1),
    ZooEntry("clip_vision", "CLIP vision",
             hf("CLIPVisionModel", "CLIPVisionConfig", image(224, name="pixel_values"),
                ("last_hidden_state", "pooler_output")),
             hf("CLIPVisionModel", "CLIPVisionConfig", image(32, name="pixel_values"),
                ("last_hidden_state", "pooler_output"), image_size=32, patch_size=8, hidden_size=32,
                intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)),
    ZooEntry("whisper_encoder", "Whisper",
             hf("transformers.models.whisper.modeling_whisper.WhisperEncoder", "WhisperConfig",
                (InputSpec("input_features", (1, 80, 3000)),), ("last_hidden_state",)),
             hf("transformers.models.whisper.modeling_whisper.WhisperEncoder", "WhisperConfig",
                (InputSpec("input_features", (1, 16, 32)),), ("last_hidden_state",), num_mel_bins=16,
                d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                max_source_positions=16)),
)


def names() -> list[str]:
    return [e.name for e in ZOO]


def entry(name: str) -> ZooEntry:
    for e in ZOO:
        if e.name == name:
            return e
    raise KeyError(f"no zoo model {name!r}; the zoo has {', '.join(names())}")


# -- building, exporting, inputs -----------------------------------------------------------------
def build_module(e: ZooEntry, small: bool):
    """The torch module of `e`'s configuration, in eval mode, with seeded random weights and
    batch-norm statistics measured on seeded random inputs (zoo_builders.calibrate_batch_norm)."""
    import torch

    cfg = e.config(small)
    torch.manual_seed(SEED)
    model = zb.randomize_weights(cfg.factory(**cfg.kwargs).eval(), SEED)
    batch = random_inputs(cfg, SEED + 1, batch=CALIBRATION_BATCH)
    zb.calibrate_batch_norm(model, tuple(torch.from_numpy(v) for v in batch.values()))
    return model


def random_inputs(cfg: ModelConfig, seed: int = SEED, batch: Optional[int] = None,
                  shapes: Optional[dict] = None) -> dict[str, np.ndarray]:
    """Seeded inputs for `cfg`, in its input order (see InputSpec's kinds); `batch` replaces
    the configured batch size, `shapes` ({input name: shape}) whole shapes."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in cfg.inputs:
        if batch is not None:
            spec = replace(spec, shape=(batch, *spec.shape[1:]))
        if shapes and spec.name in shapes:
            spec = replace(spec, shape=tuple(shapes[spec.name]))
        if spec.kind == "image":
            out[spec.name] = rng.standard_normal(spec.shape).astype(np.float32)
        elif spec.kind == "tokens":
            out[spec.name] = rng.integers(2, spec.high, spec.shape, dtype=np.int64)
        elif spec.kind == "mask":
            mask = np.ones(spec.shape, np.int64)
            mask[-1, spec.shape[-1] - spec.shape[-1] // 4:] = 0
            out[spec.name] = mask
        else:
            raise ValueError(f"input {spec.name!r}: unknown kind {spec.kind!r} (image, tokens or mask)")
    return out


def default_cache_dir() -> Path:
    from ..paths import zoo_cache_dir

    return zoo_cache_dir()


def onnx_path(e: ZooEntry, small: bool, cache_dir: Optional[Path] = None) -> Path:
    """Where `e`'s export is cached: named by the configuration, the seed, the weight draw's
    version and the versions of torch, torchvision and transformers, so a change to any of them
    exports anew."""
    key = json.dumps([e.name, e.config(small).key(), SEED, zb.DRAW_VERSION, zb.versions()], default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(cache_dir or default_cache_dir()) / f"{e.name}-{'small' if small else 'full'}-{digest}.onnx"


def export(e: ZooEntry, small: bool, cache_dir: Optional[Path] = None) -> Path:
    """`e`'s ONNX file, exported unless cached."""
    path = onnx_path(e, small, cache_dir)
    if path.exists():
        log.info("%s: cached export %s", e.name, path)
        return path
    cfg = e.config(small)
    t0 = time.perf_counter()
    zb.export_onnx(build_module(e, small), random_inputs(cfg), cfg.outputs, path)
    log.info("%s: exported to %s in %.1fs", e.name, path, time.perf_counter() - t0)
    return path


# -- checking ------------------------------------------------------------------------------------
@dataclass
class PrecisionResult:
    """One build precision of one model. status: ok, mismatch, build failed or run failed."""

    precision: str
    status: str
    reason: str = ""
    kernels: int = 0
    build_s: float = 0.0
    err_over_scale: Optional[float] = None  # max |tefuse - ort| / max |ort|, worst output
    tolerance: float = 0.0
    argmax_agree: Optional[float] = None  # fraction of positions whose argmax matches onnxruntime's
    argmax_ok: Optional[bool] = None  # no disagreement where the reference's margin exceeds the error allowed
    first_divergence: Optional[dict] = None  # with --bisect, a failed check's first bad tensor (bisect.Divergence)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class ZooResult:
    """One model. status: ok, or the first failure: export failed, reference failed
    (onnxruntime could not run it), weak reference (its output hardly depends on its input), import refused (`problems`: every refused node), import
    failed, or a precision's build failed / run failed / mismatch."""

    name: str
    family: str
    config: str  # small or full
    target: str
    status: str = "ok"
    reason: str = ""  # one line
    problems: list = field(default_factory=list)
    onnx_nodes: int = 0
    sensitivity: Optional[float] = None  # see sensitivity()
    export_s: float = 0.0
    import_s: float = 0.0
    precisions: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def refusal_reason(problems: Sequence) -> str:
    """One line for a refused import: the first node's reason, and how many others by op type."""
    if not problems:
        return ""
    rest = problems[1:]
    if not rest:
        return str(problems[0])
    counts: dict[str, int] = {}
    for p in rest:
        counts[p.op_type] = counts.get(p.op_type, 0) + 1
    more = ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))
    return f"{problems[0]} (and {len(rest)} more: {more})"


def sensitivity(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """How much the reference outputs move between two inputs, relative to their scale (the
    least over the outputs): near 0, the output is mostly biases and a small relative error
    hides a wrong computation."""
    moves = [float(np.abs(x.astype(np.float64) - y).max()) / max(float(np.abs(x).max()), 1e-30)
             for x, y in zip(a, b)]
    return min(moves) if moves else 0.0


def compare(got: Sequence[np.ndarray], want: Sequence[np.ndarray], precision: str,
            argmax_axis: Optional[int]) -> tuple[float, Optional[float], Optional[bool]]:
    """(worst error over scale across outputs, argmax agreement, argmax ok) of tefuse's outputs
    against onnxruntime's. An all-zero reference or a non-finite output is an infinite error.
    argmax is compared on the first output; a disagreement counts against it only where the
    reference's top value beats the chosen one by more than twice the error allowed (closer
    than that, the two are a tie at this precision)."""
    errs = []
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64).reshape(w.shape), np.asarray(w, np.float64)
        scale = float(np.abs(w).max()) if w.size else 0.0
        if scale == 0 or not np.isfinite(g).all():
            errs.append(math.inf)
        else:
            errs.append(float(np.abs(g - w).max()) / scale)
    err = max(errs) if errs else math.inf
    if argmax_axis is None:
        return err, None, None
    g, w = np.asarray(got[0], np.float64).reshape(want[0].shape), np.asarray(want[0], np.float64)
    ga, wa = g.argmax(argmax_axis), w.argmax(argmax_axis)
    agree = float((ga == wa).mean())
    margin = w.max(argmax_axis) - np.take_along_axis(w, np.expand_dims(ga, argmax_axis), argmax_axis).squeeze(
        argmax_axis)
    decisive = margin > 2 * TOLERANCE[precision] * float(np.abs(w).max())
    return err, agree, bool(not (decisive & (ga != wa)).any())


def build_and_compare(graph, feeds: dict[str, np.ndarray], want: list[np.ndarray], precision: str, target: str,
                    argmax_axis: Optional[int], db=None, jobs: Optional[int] = None) -> PrecisionResult:
    """Build `graph` at `precision` for `target`, run it on `feeds` and compare with `want`."""
    from ..driver import build

    tol = TOLERANCE[precision]
    t0 = time.perf_counter()
    try:
        cg = build(graph, target, precision=precision, db=db, jobs=jobs)
    except Exception as ex:  # noqa: BLE001 - recorded, the zoo goes on with the next model
        return PrecisionResult(precision, "build failed", first_line(ex), build_s=time.perf_counter() - t0,
                               tolerance=tol)
    build_s = time.perf_counter() - t0
    try:
        got = cg.run(feeds, as_numpy=True)
    except Exception as ex:  # noqa: BLE001
        return PrecisionResult(precision, "run failed", first_line(ex), cg.num_kernels, build_s, tolerance=tol)
    err, agree, argmax_ok = compare(got, want, precision, argmax_axis)
    ok = err <= tol and argmax_ok is not False
    reason = "" if ok else (f"error {err:.3g} of the output scale (allowed {tol:g})" if err > tol else
                            f"argmax agrees at {agree:.1%} of positions, not where the margin is decisive")
    return PrecisionResult(precision, "ok" if ok else "mismatch", reason, cg.num_kernels, build_s, err, tol,
                           agree, argmax_ok)


def locate(model, feeds: dict[str, np.ndarray], target: str, precision: str, db=None,
           jobs: Optional[int] = None) -> Optional[dict]:
    """The first tensor of `model` where the build departs from onnxruntime, as a dict; None when
    the search finds none (or fails: logged)."""
    from .bisect import first_divergence, tefuse_runner

    try:
        d = first_divergence(model, feeds, tefuse_runner(target, precision, db, jobs), precision,
                             TOLERANCE[precision])
    except Exception as ex:  # noqa: BLE001 - a diagnosis that fails leaves the result as it was
        log.warning("bisect failed: %s", first_line(ex))
        return None
    if d is not None:
        log.info("%s", d.line())
    return asdict(d) if d is not None else None


def check_entry(e: ZooEntry, target: str = "llvm", precisions: Sequence[str] = ("fp32",), small: bool = True,
                cache_dir: Optional[Path] = None, db=None, jobs: Optional[int] = None,
                bisect: bool = False) -> ZooResult:
    """Export `e` (cached), import it, build it at each precision and compare with onnxruntime
    (CPU, float32). Failures are recorded in the result, never raised. `bisect` looks for the
    first ONNX tensor that departs, for a precision whose check fails."""
    import onnx

    from ..errors import ModelImportError
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_outputs

    r = ZooResult(e.name, e.family, "small" if small else "full", target)
    t0 = time.perf_counter()
    try:
        path = export(e, small, cache_dir)
    except Exception as ex:  # noqa: BLE001 - an exporter failure is the model's result
        r.status, r.reason = "export failed", first_line(ex)
        return r
    r.export_s = time.perf_counter() - t0
    model = onnx.load(str(path))
    r.onnx_nodes = len(model.graph.node)
    cfg = e.config(small)
    feeds = random_inputs(cfg)
    try:
        want = onnxruntime_outputs(model, feeds)
        r.sensitivity = sensitivity(want, onnxruntime_outputs(model, random_inputs(cfg, SEED + 1)))
    except Exception as ex:  # noqa: BLE001 - no reference, nothing to check against
        r.status, r.reason = "reference failed", f"onnxruntime: {first_line(ex)}"
        return r
    if r.sensitivity < MIN_SENSITIVITY:
        r.status, r.reason = "weak reference", (f"the output moves by only {r.sensitivity:.2g} of its scale "
                                                f"between two inputs (wanted >= {MIN_SENSITIVITY:g})")
        log.warning("%s: %s", e.name, r.reason)
    t0 = time.perf_counter()
    try:
        graph = import_onnx(model, source=e.name)
    except ModelImportError as ex:
        r.status = "import refused" if ex.problems else "import failed"
        r.reason = refusal_reason(ex.problems) if ex.problems else first_line(ex)
        r.problems = [str(p) for p in ex.problems]
        return r
    except Exception as ex:  # noqa: BLE001
        r.status, r.reason = "import failed", first_line(ex)
        return r
    r.import_s = time.perf_counter() - t0
    for p in precisions:
        log.info("%s: building %s for %s", e.name, p, target)
        pr = build_and_compare(graph, feeds, want, p, target, e.argmax_axis, db=db, jobs=jobs)
        r.precisions.append(pr)
        if bisect and pr.status in ("mismatch", "run failed"):
            pr.first_divergence = locate(model, feeds, target, p, db, jobs)
        if not pr.ok and r.ok:
            r.status, r.reason = pr.status, f"{p}: {pr.reason}"
    return r


def result_line(r: ZooResult) -> str:
    head = f"{r.name} ({r.family}, {r.config}, {r.target}): {r.status}"
    if not r.precisions:
        return f"{head}: {r.reason}"
    parts = []
    for p in r.precisions:
        s = f"{p.precision} {p.status}"
        if p.err_over_scale is not None:
            s += f", err {p.err_over_scale:.2g} of scale"
        if p.argmax_agree is not None:
            s += f", argmax {p.argmax_agree:.1%}"
        s += f", {p.kernels} kernels, {p.build_s:.1f}s" if p.kernels else f" ({p.reason})"
        parts.append(s)
    return f"{head} | " + " | ".join(parts)


def as_dict(r: ZooResult) -> dict:
    return {**asdict(r), "ok": r.ok}


# -- command line --------------------------------------------------------------------------------
def parse_args(argv: Optional[Sequence[str]]):
    p = argparse.ArgumentParser(prog="python -m tefuse.bench.zoo", description=__doc__.splitlines()[0])
    p.add_argument("--target", default="cuda")
    p.add_argument("--precision", default="fp32", help="comma-separated: fp32,fp16 (also tf32, bf16)")
    p.add_argument("--small", action="store_true", help="the small configurations (what the CPU test builds)")
    p.add_argument("--models", default=None, help=f"comma-separated subset of: {', '.join(names())}")
    p.add_argument("--out", default=None, help="the JSON report")
    p.add_argument("--cache-dir", default=None, help="exported ONNX files (default: the user cache's zoo/)")
    p.add_argument("--resume", action="store_true", help="keep the models --out already holds as ok (same "
                   "target, precisions and configuration) and check the rest")
    p.add_argument("--no-db", action="store_true", help="ignore tuning logs (fallback configs)")
    p.add_argument("--shard", default=None, metavar="K/N", help="check every N-th model of the list from the "
                   "K-th (1-based): N processes, one a GPU (CUDA_VISIBLE_DEVICES), then --merge their reports")
    p.add_argument("--merge", nargs="+", default=None, metavar="REPORT",
                   help="write the reports given (same target, precisions and configuration) as one to --out, "
                        "in the zoo's order; nothing is built")
    p.add_argument("--bisect", action="store_true", help="for a failed check, find the first ONNX tensor that "
                   "departs from onnxruntime (tefuse.bench.bisect; a few more builds)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="kernels compiled at once (default: CPU count)")
    args = p.parse_args(argv)
    args.precision = [s.strip() for s in args.precision.split(",") if s.strip()]
    bad = [s for s in args.precision if s not in TOLERANCE]
    if bad:
        p.error(f"unknown precision {bad[0]!r}; use {', '.join(TOLERANCE)}")
    args.models = [s.strip() for s in args.models.split(",") if s.strip()] if args.models else names()
    unknown = [m for m in args.models if m not in names()]
    if unknown:
        p.error(f"unknown model {unknown[0]!r}; the zoo has {', '.join(names())}")
    if args.shard is not None:
        try:
            args.models = sharded(args.models, shard_of(args.shard))
        except ValueError as e:
            p.error(f"--shard {args.shard!r}: {e}")
    if args.merge is not None and args.out is None:
        p.error("--merge needs --out")
    return args


def merge_reports(reports: Sequence[dict]) -> dict:
    """One report of several (shards of one run): results in the zoo's order, every command kept.
    Reports of another target, precision set or configuration are refused (ValueError)."""
    first = reports[0]
    for r in reports[1:]:
        for k in ("target", "precisions", "config"):
            if r.get(k) != first.get(k):
                raise ValueError(f"reports differ in {k}: {first.get(k)!r} and {r.get(k)!r}")
    by_name = {x["name"]: x for r in reports for x in r.get("results", [])}
    order = [n for n in names() if n in by_name] + sorted(set(by_name) - set(names()))
    results = [by_name[n] for n in order]
    commands = [c for r in reports for c in (r.get("commands") or [r.get("command")]) if c]
    keep = {k: first[k] for k in ("target", "precisions", "config", "tolerance", "versions") if k in first}
    return {**keep, "commands": commands, "ok": sum(bool(x.get("ok")) for x in results), "models": len(results),
            "results": results}


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    out = Path(args.out) if args.out else None
    if args.merge is not None:
        try:
            merged = merge_reports([json.loads(Path(f).read_text()) for f in args.merge])
        except (OSError, ValueError) as e:
            log.error("--merge: %s", e)
            return 2
        write_json_whole(out, merged)
        log.info("wrote %s: %d of %d models ok", out, merged["ok"], merged["models"])
        return 0 if merged["ok"] == merged["models"] else 1
    header = {"command": command_line("tefuse.bench.zoo", argv), "target": args.target,
              "precisions": args.precision, "config": "small" if args.small else "full",
              "tolerance": {p: TOLERANCE[p] for p in args.precision}, "versions": zb.versions()}
    done: dict[str, dict] = {}
    if args.resume and out is not None and out.exists():
        old = json.loads(out.read_text())
        same = all(old.get(k) == header[k] for k in ("target", "precisions", "config"))
        done = {r["name"]: r for r in old.get("results", []) if r.get("ok")} if same else {}
        log.info("resuming %s: %d models already checked", out, len(done))
    results: list[dict] = []
    for k, name in enumerate(args.models, 1):
        if name in done:
            results.append(done[name])
            continue
        log.info("[%d/%d] %s", k, len(args.models), name)
        r = check_entry(entry(name), args.target, args.precision, args.small,
                        Path(args.cache_dir) if args.cache_dir else None,
                        db=None if args.no_db else "default", jobs=args.jobs, bisect=args.bisect)
        log.info("%s", result_line(r))
        results.append(as_dict(r))
        if out is not None:  # after every model: a long run can be resumed where it stopped
            ok = sum(bool(x["ok"]) for x in results)
            write_json_whole(out, {**header, "ok": ok, "models": len(results), "results": results})
    ok = sum(bool(x["ok"]) for x in results)
    log.info("%d of %d models ok", ok, len(results))
    if out is not None:
        write_json_whole(out, {**header, "ok": ok, "models": len(results), "results": results})
        log.info("wrote %s", out)
    return 0 if ok == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
