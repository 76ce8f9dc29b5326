"""Batch profiles of an ONNX model: the model imported once per batch size.

Why: kernels are compiled for fixed shapes, so a model with a dynamic batch dim (symbolic,
-1 or 0 as exporters write it) is imported for each batch size of its profiles, its shape
arithmetic folded for that size; `tefuse.build` then compiles each into one ProfiledGraph.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import onnx

from ...errors import ModelImportError
from ...graph.ir import Graph
from .importer import ModelLike, import_onnx, load_model


def _model_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    init = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in init]


def _known(d) -> bool:
    return d.HasField("dim_value") and d.dim_value > 0


def dynamic_batch_inputs(model: onnx.ModelProto) -> list[str]:
    """The model inputs whose leading dim is not a fixed size (a name, -1, 0 or unset)."""
    return [vi.name for vi in _model_inputs(model)
            if vi.type.tensor_type.shape.dim and not _known(vi.type.tensor_type.shape.dim[0])]


def batch_input_shapes(model: onnx.ModelProto, batch: int,
                       input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> dict[str, tuple[int, ...]]:
    """input_shapes for one batch size: every input with a dynamic leading dim gets `batch` there
    (its other dims from `input_shapes` when given, else the model's); the rest as given."""
    shapes = {k: tuple(v) for k, v in (input_shapes or {}).items()}
    dynamic = dynamic_batch_inputs(model)
    if not dynamic:
        shown = "; ".join(f"{vi.name} is " + "x".join(str(d.dim_value) if _known(d) else d.dim_param or "?"
                                                      for d in vi.type.tensor_type.shape.dim)
                          for vi in _model_inputs(model))
        raise ModelImportError(f"batch sizes need an input with a dynamic leading (batch) dim; the model's "
                               f"inputs have fixed ones ({shown})")
    for vi in _model_inputs(model):
        if vi.name not in dynamic:
            continue
        dims = vi.type.tensor_type.shape.dim
        rest = shapes[vi.name][1:] if vi.name in shapes else tuple(d.dim_value if _known(d) else None
                                                                   for d in dims[1:])
        if None not in rest:  # else import_onnx names the unknown dims
            shapes[vi.name] = (int(batch), *map(int, rest))
    return shapes


def import_onnx_profiles(model_or_path: ModelLike, batch_sizes: Sequence[int], *,
                         input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                         **import_kw) -> dict[int, Graph]:
    """{batch: Graph}, the model imported once per batch size (see batch_input_shapes); for
    `tefuse.build(graphs, target)`, which returns a ProfiledGraph."""
    sizes = list(batch_sizes)
    if not sizes or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in sizes):
        raise ModelImportError(f"batch sizes must be positive integers, got {sizes}")
    if len(set(sizes)) != len(sizes):
        raise ModelImportError(f"batch sizes given twice: {sizes}")
    model = load_model(model_or_path)
    return {b: import_onnx(model, input_shapes=batch_input_shapes(model, b, input_shapes), **import_kw)
            for b in sorted(sizes)}
