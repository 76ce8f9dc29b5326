"""normalize: per-channel ((x * mul) - sub) / div, the last step of image pre-processing.

Integer pixels (uint8, uint16) are converted in the kernel; each of mul, sub and div is one
number or one per channel of `axis`. Elementwise: it fuses into whatever produces x.

It is computed as x * (mul / div) - sub / div, the two factors folded in float64 at build time:
one multiply-add an element where a division would cost a dozen instructions and, on CUDA, a
branch to its slow path that the compiler will not schedule loads across (the pre-processing
kernels are bound by instruction issue and load latency). The result differs from the
three-step form by a rounding or two of the accumulation type.
"""
from __future__ import annotations

import math
from typing import Sequence

from tvm import tirx as tir

from ..errors import OpError
from .crop import per_channel
from .registry import OpPattern, register_op
from .value import Value, expr_dtype, lazy


def _values(attrs: dict, key: str, channels: int) -> tuple[float, ...]:
    v = attrs[key]
    try:
        vals = tuple(float(a) for a in v) if isinstance(v, (tuple, list)) else (float(v),)
    except (TypeError, ValueError):
        raise OpError(f"normalize: {key} must be a number or one per channel, got {v!r}") from None
    if not all(math.isfinite(a) for a in vals):
        raise OpError(f"normalize: {key} must be finite, got {v!r}")
    if len(vals) not in (1, channels):
        raise OpError(f"normalize: {key} must be one number or one per channel ({channels}), got {v!r}")
    if key == "div" and any(a == 0 for a in vals):
        raise OpError(f"normalize: div must not be 0, got {v!r}")
    return vals if len(vals) == channels else vals * channels


@register_op("normalize", OpPattern.ELEMWISE, num_inputs=1,
             attrs={"mul": 1.0, "sub": 0.0, "div": 1.0, "axis": -1, "dtype": "float32"})
def normalize(inputs: Sequence[Value], attrs: dict) -> Value:
    """((x * mul) - sub) / div per channel of `axis` (each one value or one per channel), in
    `dtype` (a float type); integer inputs are converted in the kernel."""
    (x,) = inputs
    dtype = attrs["dtype"]
    if not dtype.startswith(("float", "bfloat")):
        raise OpError(f"normalize: dtype must be a float type, got {dtype!r}")
    if x.ndim == 0:
        raise OpError("normalize: the input must have a channel axis")
    axis = attrs["axis"] + x.ndim if attrs["axis"] < 0 else attrs["axis"]
    if not 0 <= axis < x.ndim:
        raise OpError(f"normalize: axis {attrs['axis']} out of range for rank {x.ndim}")
    n = x.shape[axis]
    mul, sub, div = (_values(attrs, k, n) for k in ("mul", "sub", "div"))
    scale = tuple(m / d for m, d in zip(mul, div))
    shift = tuple(s / d for s, d in zip(sub, div))
    acc = "float64" if dtype == "float64" else "float32"

    def fn(*i):
        v = x(*i)
        v = v if expr_dtype(v) == acc else tir.Cast(acc, v)
        c = i[axis]
        out = v * per_channel(scale, c, acc) - per_channel(shift, c, acc)
        return out if acc == dtype else tir.Cast(dtype, out)

    return lazy(x.shape, dtype, fn)
