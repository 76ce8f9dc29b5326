"""Shape and layout ONNX ops, and the constant-producing ones (Shape, Size, Constant,
ConstantOfShape) with their folders, which import-time shape arithmetic runs through."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..context import ImportContext, OnnxNode, Unsupported, Value
from ..registry import converter, folder
from ..shape_values import is_shape_value, shape_value, target_dims
from .common import axes_arg, axis_attr, int_list, main_dtype, binary_operand, input_node


# -- layout ---------------------------------------------------------------------------------
@converter("Flatten", attrs=["axis"])
def _flatten(ctx, n):
    return [ctx.emit("flatten", [input_node(ctx, n)], n.outputs[0], axis=int(n.attr("axis", 1)))]


@converter("Reshape", attrs=["shape", "allowzero"])
def _reshape(ctx, n):
    target = n.attr("shape") if n.opset < 5 else ctx.const(n.input(1), "shape")
    x = input_node(ctx, n)
    if is_shape_value(target):
        return [_symbolic_reshape(ctx, n, x, target_dims(target))]
    shape = int_list(target)
    if int(n.attr("allowzero", 0)) and 0 in shape:
        raise Unsupported("allowzero=1 with a 0 in the target shape")
    return [ctx.emit("reshape", [x], n.outputs[0], shape=tuple(shape))]


def _symbolic_reshape(ctx, n, x, dims: list):
    """A target shape holding dim expressions (Shape arithmetic over symbolic dims): the op takes
    them as they are; ONNX's 0 (copy the input's dim) and -1 (infer it) keep their meaning."""
    if int(n.attr("allowzero", 0)):
        raise Unsupported("allowzero=1 with a target shape computed from symbolic dims")
    return ctx.emit("reshape", [x], n.outputs[0], shape=tuple(dims))


@converter("Transpose", attrs=["perm"])
def _transpose(ctx, n):
    perm = n.attr("perm")
    return [ctx.emit("transpose", [input_node(ctx, n)], n.outputs[0], axes=None if perm is None else tuple(int_list(perm)))]


@converter("Concat", attrs=["axis"])
def _concat(ctx, n):
    names = [i for i in n.inputs if i]
    dt = main_dtype(ctx, names)
    return [ctx.emit("concat", [binary_operand(ctx, i, dt) for i in names], n.outputs[0], axis=int(n.attr("axis")))]


@converter("Squeeze", attrs=["axes"])
def _squeeze(ctx, n):
    axes = axes_arg(ctx, n, 13)
    return [ctx.emit("squeeze", [input_node(ctx, n)], n.outputs[0], axes=None if axes is None else tuple(axes))]


@converter("Unsqueeze", attrs=["axes"])
def _unsqueeze(ctx, n):
    axes = axes_arg(ctx, n, 13)
    if axes is None:
        raise Unsupported("axes are required")
    return [ctx.emit("expand_dims", [input_node(ctx, n)], n.outputs[0], axes=tuple(axes))]


def _check_pad(n: OnnxNode) -> Optional[str]:
    mode = n.attr("mode", "constant")
    return None if mode in ("constant", "edge", "reflect", "wrap") else f"mode={mode!r}"


@converter("Pad", attrs=["mode", "pads", "value"], check=_check_pad)
def _pad(ctx, n):
    x = input_node(ctx, n)
    nd = len(x.shape)
    if n.opset < 11:
        pads, value = int_list(n.attr("pads")), float(n.attr("value", 0.0))
    else:
        pads = int_list(ctx.const(n.input(1), "pads"))
        cv = n.input(2)
        value = float(ctx.const(cv, "constant_value").reshape(())) if cv else 0.0
        axes_name = n.input(3)
        if axes_name:
            axes = [a + nd if a < 0 else a for a in int_list(ctx.const(axes_name, "axes"))]
            full = [0] * (2 * nd)
            for j, a in enumerate(axes):
                full[a], full[nd + a] = pads[j], pads[len(axes) + j]
            pads = full
    if any(p < 0 for p in pads):
        raise Unsupported(f"negative pads {pads}")
    if not any(pads):
        return [x]
    mode = n.attr("mode", "constant")
    if mode != "constant":
        return [ctx.emit("pad_mode", [x], n.outputs[0], pads=tuple(pads), mode=mode)]
    return [ctx.emit("pad", [x], n.outputs[0], pads=tuple(pads), value=value)]


@converter("Slice", attrs=["starts", "ends", "axes"])
def _slice(ctx, n):
    x = input_node(ctx, n)
    if n.opset < 10:
        starts, ends = int_list(n.attr("starts")), int_list(n.attr("ends"))
        axes = n.attr("axes")
        steps = None
    else:
        starts = int_list(ctx.const(n.input(1), "starts"))
        ends = ctx.const(n.input(2), "ends")
        # an end that is a dim expression (position ids cut to a symbolic sequence length)
        ends = target_dims(ends) if is_shape_value(ends) else int_list(ends)
        axes = ctx.const(n.input(3), "axes") if n.input(3) else None
        steps = int_list(ctx.const(n.input(4), "steps")) if n.input(4) else None
    axes = None if axes is None else tuple(int_list(axes))
    return [ctx.emit("slice", [x], n.outputs[0], starts=tuple(starts), ends=tuple(ends), axes=axes,
                     steps=None if steps is None else tuple(steps))]


@converter("Split", attrs=["axis", "split", "num_outputs"])
def _split(ctx, n):
    """Slices along `axis`: sizes from the `split` input (opset 13+) or attribute, else equal parts
    (the last smaller when `num_outputs` does not divide the axis, as opset 18 says)."""
    x = input_node(ctx, n)
    ax = axis_attr(n, len(x.shape), 0)
    dim, outs = x.shape[ax], list(n.outputs)
    if n.input(1):
        sizes = int_list(ctx.const(n.input(1), "split"))
    elif n.attr("split") is not None:
        sizes = int_list(n.attr("split"))
    else:
        parts = int(n.attr("num_outputs", len(outs)))
        step = -(-dim // parts)
        sizes = [min(step, dim - k * step) for k in range(parts)]
    if len(sizes) != len(outs) or sum(sizes) != dim or min(sizes) < 0:
        raise Unsupported(f"split sizes {sizes} do not cut axis {ax} of size {dim} into {len(outs)} outputs")
    res, start = [], 0
    for size, out in zip(sizes, outs):
        res.append(ctx.emit("slice", [x], out or None, starts=(start,), ends=(start + size,), axes=(ax,)))
        start += size
    return res


@converter("Shape", attrs=["start", "end"])
def _shape(ctx, n):
    """Over a symbolic dim, a shape value (shape_values.py) that shape arithmetic folds."""
    shape = ctx.shape(n.inputs[0])
    start, end = n.attr("start", 0), n.attr("end", None)
    return [shape_value(shape[start:end])]


folder("Shape")(lambda ctx, n: _shape(ctx, n))


@converter("Size")
def _size(ctx, n):
    return [np.asarray(int(np.prod(ctx.shape(n.inputs[0]))), dtype=np.int64)]


# -- identity-like and constants -------------------------------------------------------------
def _alias(ctx: ImportContext, n: OnnxNode) -> list:
    v = ctx.env[n.inputs[0]]
    return [v]


converter("Identity")(_alias)


@converter("Dropout", attrs=["ratio", "seed"])
def _dropout(ctx, n):
    if n.opset >= 12 and n.input(2) and bool(ctx.const(n.input(2), "training_mode").reshape(())):
        ratio = float(ctx.const(n.input(1), "ratio").reshape(())) if n.input(1) else 0.5
        if ratio != 0.0:
            raise Unsupported(f"training_mode=true with ratio {ratio} drops values at random (only "
                              f"inference, or a ratio of 0, is supported)")
    x = ctx.env[n.inputs[0]]
    outs: list[Value] = [x]
    if len(n.outputs) > 1 and n.outputs[1]:
        outs.append(np.ones(x.shape, dtype=bool))  # inference mask: everything kept
    return outs


@folder("Dropout")
def _fold_dropout(ctx, n):
    x = ctx.env[n.inputs[0]]
    return [x, np.ones(x.shape, dtype=bool)][:len(n.outputs)]


@converter("Constant", attrs=["value", "value_float", "value_floats", "value_int", "value_ints",
                              "sparse_value", "value_string", "value_strings"])
def _constant(ctx, n):  # only reached if folding failed; folding handles every supported form
    raise Unsupported(f"attribute(s) {sorted(n.attrs)} cannot be folded")


@folder("Constant")
def _fold_constant(ctx, n):
    a = n.attrs
    if "value" in a:
        return [np.asarray(a["value"])]
    if "value_float" in a:
        return [np.asarray(a["value_float"], dtype=np.float32)]
    if "value_floats" in a:
        return [np.asarray(a["value_floats"], dtype=np.float32)]
    if "value_int" in a:
        return [np.asarray(a["value_int"], dtype=np.int64)]
    if "value_ints" in a:
        return [np.asarray(a["value_ints"], dtype=np.int64)]
    raise Unsupported(f"Constant with attribute(s) {sorted(a)}")


@converter("ConstantOfShape", attrs=["value"])
def _constant_of_shape(ctx, n):
    ctx.const(n.input(0), "shape")  # raises Unsupported: the shape is computed at run time
    return _fold_constant_of_shape(ctx, n)


@folder("ConstantOfShape")
def _fold_constant_of_shape(ctx, n):
    shape = int_list(ctx.const(n.input(0), "shape"))
    v = n.attr("value")
    v = np.zeros((1,), np.float32) if v is None else np.asarray(v)
    return [np.full(shape, v.reshape(-1)[0], dtype=v.dtype)]


@folder("Unsqueeze")
def _fold_unsqueeze(ctx, n):
    x = ctx.const(n.input(0))
    axes = axes_arg(ctx, n, 13)
    nd = x.ndim + len(axes)
    for a in sorted(a + nd if a < 0 else a for a in axes):
        x = np.expand_dims(x, a)
    return [x]


@folder("Identity")
def _fold_identity(ctx, n):
    return [ctx.const(n.input(0))]
