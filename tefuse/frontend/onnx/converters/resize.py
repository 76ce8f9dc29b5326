"""ONNX Resize (opsets 10-19) and the deprecated Upsample, onto tefuse's `resize` op.

Scales, sizes and roi must be known at import (initializers, or sizes folded from static shapes);
the op then has a static output shape and fuses into its consumers.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ....ops.resize import COORDINATES, MODES, NEAREST, POLICIES, ROI_DTYPES
from ..context import ImportContext, OnnxNode, Unsupported
from ..registry import converter
from .common import input_node, int_list

RESIZE_ATTRS = ["antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"]
ONNX_NEAREST = [m for m in NEAREST if m != "simple"]  # "simple" is Resize-10's, set by opset, not by name


def _check_resize(n: OnnxNode) -> Optional[str]:
    mode = n.attr("mode", "nearest")
    if mode not in MODES:
        return f"mode={mode!r} (nearest, linear and cubic are supported)"
    ctm = n.attr("coordinate_transformation_mode", "half_pixel")
    if ctm not in COORDINATES or (ctm == "tf_half_pixel_for_nn" and n.opset >= 13):
        return f"coordinate_transformation_mode={ctm!r} is not one of opset {n.opset}'s"
    nearest = n.attr("nearest_mode", "round_prefer_floor")
    if nearest not in ONNX_NEAREST:
        return f"nearest_mode={nearest!r} (one of {', '.join(ONNX_NEAREST)})"
    policy = n.attr("keep_aspect_ratio_policy", "stretch")
    if policy not in POLICIES:
        return f"keep_aspect_ratio_policy={policy!r} (one of {', '.join(POLICIES)})"
    if int(n.attr("antialias", 0)) and mode == "nearest":
        return "antialias=1 applies to the linear and cubic modes, not nearest"
    return None


def _optional(ctx: ImportContext, n: OnnxNode, k: int, what: str) -> Optional[np.ndarray]:
    """Optional constant input k; None when absent or empty (opset 11 passes an empty scales
    tensor next to sizes)."""
    name = n.input(k)
    if name is None:
        return None
    v = ctx.const(name, what)
    return None if v.size == 0 else v


@converter("Resize", attrs=RESIZE_ATTRS, check=_check_resize)
def _resize(ctx, n):
    x = input_node(ctx, n)
    if n.opset < 11:  # Resize-10: X and scales; asymmetric coordinates, onnxruntime's nearest
        scales = _optional(ctx, n, 1, "scales")
        if scales is None:
            raise Unsupported("scales are required")
        return [ctx.emit("resize", [x], n.outputs[0], scales=tuple(float(s) for s in scales.reshape(-1)),
                         mode=n.attr("mode", "nearest"), coordinate_transformation_mode="asymmetric",
                         nearest_mode="simple")]
    scales = _optional(ctx, n, 2, "scales")
    sizes = _optional(ctx, n, 3, "sizes")
    if (scales is None) == (sizes is None):
        raise Unsupported("give exactly one of scales and sizes" if scales is not None else
                          "neither scales nor sizes is given")
    ctm = n.attr("coordinate_transformation_mode", "half_pixel")
    attrs = dict(mode=n.attr("mode", "nearest"), coordinate_transformation_mode=ctm,
                 nearest_mode=n.attr("nearest_mode", "round_prefer_floor"),
                 cubic_coeff_a=float(n.attr("cubic_coeff_a", -0.75)),
                 exclude_outside=bool(n.attr("exclude_outside", 0)), antialias=bool(n.attr("antialias", 0)),
                 keep_aspect_ratio_policy=n.attr("keep_aspect_ratio_policy", "stretch"))
    if n.attr("axes") is not None:
        attrs["axes"] = tuple(int_list(n.attr("axes")))
    if scales is not None:
        attrs["scales"] = tuple(float(s) for s in scales.reshape(-1))
    else:
        attrs["sizes"] = tuple(int_list(sizes))
    if ctm == "tf_crop_and_resize":  # (other modes ignore roi: it may even be a run-time value)
        roi = _optional(ctx, n, 1, "roi")
        if roi is None:
            raise Unsupported("coordinate_transformation_mode='tf_crop_and_resize' needs the roi input")
        if str(roi.dtype) not in ROI_DTYPES:
            raise Unsupported(f"roi of type {roi.dtype} (one of {', '.join(ROI_DTYPES)})")
        attrs.update(roi=tuple(float(r) for r in roi.reshape(-1)), roi_dtype=str(roi.dtype),
                     extrapolation_value=float(n.attr("extrapolation_value", 0.0)))
    return [ctx.emit("resize", [x], n.outputs[0], **attrs)]


def _check_upsample(n: OnnxNode) -> Optional[str]:
    mode = n.attr("mode", "nearest")
    return None if mode in ("nearest", "linear") else f"mode={mode!r} (nearest and linear are supported)"


@converter("Upsample", attrs=["mode", "scales"], check=_check_upsample)
def _upsample(ctx, n):
    """Upsample (deprecated since opset 10): Resize-10 by scales of at least 1 each."""
    x = input_node(ctx, n)
    raw = n.attr("scales") if n.opset < 9 else ctx.const(n.input(1), "scales")
    scales = [float(s) for s in np.asarray(raw, dtype=np.float64).reshape(-1)]
    if any(s < 1 for s in scales):
        raise Unsupported(f"scales {scales}: Upsample only enlarges (each scale must be >= 1)")
    return [ctx.emit("resize", [x], n.outputs[0], scales=tuple(scales), mode=n.attr("mode", "nearest"),
                     coordinate_transformation_mode="asymmetric", nearest_mode="simple")]
