"""InstanceNormalization and GroupNormalization: one `group_norm_rows` op (layer_norm's row-wise
kernel over one row a group, statistics in float32) and a reshape back to the input's shape."""
from __future__ import annotations

from typing import Optional

from ..context import ImportContext, OnnxNode, Unsupported
from ..registry import converter
from .common import binary_operand, input_node


def _group_norm(ctx: ImportContext, n: OnnxNode, groups: Optional[int]) -> list:
    """groups None: one a channel."""
    x = input_node(ctx, n)
    if len(x.shape) < 2:
        raise Unsupported(f"input shape {x.shape}: expected [N, C, ...]")
    groups = x.shape[1] if groups is None else groups
    scale, bias = (binary_operand(ctx, n.input(k), x.dtype) for k in (1, 2))
    rows = ctx.emit("group_norm_rows", [x, scale, bias], None, groups=groups,
                    epsilon=float(n.attr("epsilon", 1e-5)))
    return [ctx.emit("reshape", [rows], n.outputs[0], shape=x.shape)]


@converter("InstanceNormalization", attrs=["epsilon"])
def _instance_norm(ctx, n):
    """(x - mean) / sqrt(var + epsilon) * scale[c] + B[c] over each (sample, channel)'s spatial
    elements: a group normalisation with a group a channel."""
    return _group_norm(ctx, n, None)


def _check_group_norm(n: OnnxNode) -> Optional[str]:
    if n.attr("num_groups") is None:
        return "num_groups is required"
    return None if int(n.attr("stash_type", 1)) in (0, 1) else f"stash_type={n.attr('stash_type')}"


@converter("GroupNormalization", attrs=["epsilon", "num_groups", "stash_type"], check=_check_group_norm)
def _group_norm_converter(ctx, n):
    """Opset 18's scale and bias per group ([num_groups]) or opset 21's per channel ([C]): the op
    takes either. The statistics are float32 for half inputs whatever stash_type asks (0 would
    keep them in the input's type: less exact, never more)."""
    return _group_norm(ctx, n, int(n.attr("num_groups")))
