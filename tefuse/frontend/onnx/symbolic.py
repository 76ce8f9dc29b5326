"""An ONNX model's input shapes with their symbolic dims kept as names.

Why: a dynamic build binds each named dim from a run's inputs (tefuse.graph.dims.bind_dims),
so the importer needs every input's declared shape with the non-fixed dims named. A dim_param
keeps its name (two inputs sharing "seq" share one size); a dim of -1, 0 or unset gets a name
of its own, `<input>:<axis>`, since nothing in the model ties it to another dim.
"""
from __future__ import annotations

import onnx

from ...graph.dims import Dim


def symbolic_input_shapes(model: onnx.ModelProto) -> dict[str, tuple[Dim, ...]]:
    """{input name: shape}, initializers left out; a fixed size is an int, any other dim a name."""
    init = {i.name for i in model.graph.initializer}
    out: dict[str, tuple[Dim, ...]] = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        dims: list[Dim] = []
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
                dims.append(d.dim_param)
            else:
                dims.append(f"{vi.name}:{axis}")
        out[vi.name] = tuple(dims)
    return out
