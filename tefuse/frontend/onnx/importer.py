"""ONNX import: an ONNX model (opsets 9..21) becomes a tefuse Graph.

Why a two-level design: this module walks the ONNX graph, folds constant subgraphs
(initializers, Shape/Gather/ConstantOfShape chains...) to numpy, and collects every
problem before failing, so a user sees all unsupported nodes of a model at once. The
per-op converters live in `converters/`, a registry keyed by ONNX op type.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ...errors import ModelImportError
from ...graph.ir import Graph, GraphBuilder
from . import converters as _converters  # noqa: F401 - importing it fills the registry
from .context import ImportContext, OnnxNode, Unsupported, decode_bytes
from .lowbit import TAKES_LOWBIT, is_lowbit
from .registry import CONVERTERS, FOLDERS
from .shape_values import TAKES_SHAPES, fold as fold_shape_values, is_shape_value
from .symbolic import symbolic_input_shapes

log = logging.getLogger(__package__)  # "tefuse.frontend.onnx", as before the split into a package

MIN_OPSET, MAX_OPSET = 9, 21
ModelLike = Union[str, os.PathLike, bytes, onnx.ModelProto]


@dataclass(frozen=True)
class ImportProblem:
    """One offending ONNX node: reported together with all the others."""

    node: str
    op_type: str
    opset: int
    reason: str

    def __str__(self) -> str:
        return f"node {self.node!r} ({self.op_type}, opset {self.opset}): {self.reason}"


# -- model handling -------------------------------------------------------------------------
def load_model(model_or_path: ModelLike) -> onnx.ModelProto:
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model_or_path))
    path = os.fspath(model_or_path)
    if not os.path.exists(path):
        raise ModelImportError(f"no such ONNX file: {path}")
    if os.path.isdir(path):
        raise ModelImportError(f"{path}: is a directory, not an ONNX model file")
    if os.path.getsize(path) == 0:
        raise ModelImportError(f"{path}: empty file, not an ONNX model")
    try:
        model = onnx.load(path)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError and friends
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ModelImportError(f"{path}: not a readable ONNX model ({why})") from None
    if not model.HasField("graph") or not model.opset_import:
        raise ModelImportError(f"{path}: not an ONNX model (no graph or no opset; truncated or not "
                               f"a .onnx file?)")
    return model


def default_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 1


def _with_input_shapes(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    names = {i.name for i in model.graph.input}
    unknown = set(shapes) - names
    if unknown:
        raise ModelImportError(f"input_shapes names unknown input(s) {sorted(unknown)}; "
                               f"model inputs are {sorted(names)}")
    for i in model.graph.input:
        if i.name in shapes:
            dims = i.type.tensor_type.shape.dim
            del dims[:]
            for s in shapes[i.name]:
                dims.add().dim_value = int(s)
    return model


def _input_shape(vi: onnx.ValueInfoProto) -> tuple[list[int], list[str]]:
    dims, unknown = [], []
    for k, d in enumerate(vi.type.tensor_type.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_value"):
            unknown.append(f"dim {k} is {d.dim_value} (zero-length tensors are not supported)")
            dims.append(-1)
        else:
            unknown.append(f"dim {k} ({d.dim_param or '?'})")
            dims.append(-1)
    return dims, unknown


# Operand positions that only describe the computation (a target dtype, axes, a shape, pads):
# a zero-length model input read only there has one possible value, the empty array, and is no
# tensor of the graph (CastLike's `like`, a reduction's empty `axes`).
DESCRIPTIVE_INPUTS = {"CastLike": {1}, "Reshape": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "ReduceSum": {1},
                      "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "Pad": {1, 3},
                      "Slice": {1, 2, 3, 4}, "Split": {1}, "ConstantOfShape": {0}}
DESCRIPTIVE_INPUTS.update({op: {1} for op in ("ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                               "ReduceLogSum", "ReduceLogSumExp")})
# Operands whose one possible zero-length value decides the node's result at import: the data of
# a reduction (over an empty set, its identity: 0 for a sum, 1 for a product, -inf for a max...)
DETERMINED_WHEN_EMPTY = {op: {0} for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                            "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                                            "ReduceLogSumExp")}


def _only_descriptive(name: str, g: onnx.GraphProto) -> bool:
    """Whether every use of `name` in the graph is a descriptive operand or one a zero-length value
    determines (and no output is it); an unused input counts."""
    if any(o.name == name for o in g.output):
        return False
    uses = [(nd.op_type, k) for nd in g.node for k, i in enumerate(nd.input) if i == name]
    return all(k in DESCRIPTIVE_INPUTS.get(op, ()) or k in DETERMINED_WHEN_EMPTY.get(op, ())
               for op, k in uses)  # (or unused)


def _unsupported_type(vi: onnx.ValueInfoProto) -> Optional[str]:
    """What a model input or output is when it is no tensor tefuse can hold (None: it is one)."""
    t = vi.type
    which = t.WhichOneof("value")
    if which is None:
        return None  # untyped (left to inference)
    if which != "tensor_type":
        return {"sequence_type": "a sequence", "optional_type": "an optional", "map_type": "a map",
                "sparse_tensor_type": "a sparse tensor"}.get(which, which)
    et = t.tensor_type.elem_type
    if et == onnx.TensorProto.STRING:
        return "a string tensor"
    if et in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
        return "a complex tensor"
    try:
        helper.tensor_dtype_to_np_dtype(et)
    except Exception:  # noqa: BLE001 - an unknown or undefined element type
        return f"a tensor of element type {et}"
    return None


def _np_dtype(elem_type: int) -> str:
    return str(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)))


UPGRADE_TO = int(os.environ.get("TEFUSE_ONNX_UPGRADE_OPSET", "13"))


def _upgrade(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """A model older than MIN_OPSET, converted by onnx.version_converter (to opset UPGRADE_TO)."""
    from onnx import version_converter

    try:
        up = version_converter.convert_version(model, UPGRADE_TO)
    except Exception as e:  # noqa: BLE001 - the converter raises RuntimeError/ConvertError
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ModelImportError(f"model uses opset {opset} (tefuse imports {MIN_OPSET}..{MAX_OPSET}) and "
                               f"onnx.version_converter cannot convert it to opset {UPGRADE_TO}: {why}") from None
    if up.ir_version < 4:  # IR < 4 wants every initializer listed as an input; the converter
        up.ir_version = 7  # may drop such entries, and opset 13 needs IR 7 anyway
    log.info("converted the model from opset %d to %d with onnx.version_converter", opset, UPGRADE_TO)
    return up


def _undefined_inputs(g: onnx.GraphProto, opset: int) -> list[ImportProblem]:
    """A problem for each node that reads a tensor no graph input, initializer or node output
    defines (an initializer left out of the file, a misspelt name)."""
    defined = {i.name for i in g.input} | {i.name for i in g.initializer}
    defined |= {i.values.name for i in g.sparse_initializer}
    defined |= {o for nd in g.node for o in nd.output if o}
    problems = []
    for k, nd in enumerate(g.node):
        missing = list(dict.fromkeys(i for i in nd.input if i and i not in defined))
        if missing:
            what = (f"input {missing[0]!r} is" if len(missing) == 1 else
                    f"inputs {', '.join(repr(m) for m in missing)} are")
            problems.append(ImportProblem(nd.name or f"#{k}:{nd.output[0] if nd.output else ''}", nd.op_type, opset,
                                          f"{what} not defined: no graph input, initializer or node output "
                                          f"has that name (a missing initializer?)"))
    return problems


def _fold(ctx: ImportContext, n: OnnxNode) -> list[np.ndarray]:
    """Evaluate a node whose inputs are all constants (numpy fast paths, else onnx.reference)."""
    fast = FOLDERS.get(n.op_type)
    if fast is not None:
        res = fast(ctx, n)
        if res is not None:
            return res
    from onnx.reference import ReferenceEvaluator

    feeds = {i: ctx.env[i] for i in n.inputs if i}
    vis = [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for i, v in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(o) for o in n.outputs if o]
    g = helper.make_graph([n.proto], "fold", vis, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(n.domain, n.opset)])
    res = ReferenceEvaluator(m).run(None, feeds)
    return [np.asarray(r) for r in res]


def import_onnx(model_or_path: ModelLike, *, input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                check: bool = True, constant_inputs: Optional[Mapping[str, np.ndarray]] = None,
                source: Optional[str] = None, dynamic: bool = False) -> Graph:
    """Import an ONNX model as a tefuse Graph (inputs named as in the model, outputs in order).

    input_shapes fixes symbolic or unknown input dims, e.g. {"x": (1, 3, 224, 224)}.
    constant_inputs gives some model inputs their values at import (a Reshape's shape, a
    reduction's axes, Slice's starts...): they become constants and leave the graph's inputs.
    Raises ModelImportError listing every unsupported node of the model at once; its
    `constant_inputs` names the model inputs that nodes needed as constants.
    source names the model in errors (its file, when a loaded ModelProto is given).
    dynamic keeps the input dims that are not fixed as names (a dim_param's own, else
    `<input>:<axis>`; frontend/onnx/symbolic.py), for a build over dim ranges; input_shapes
    still fixes the dims it gives.
    """
    model = load_model(model_or_path)
    if source is None:
        source = os.fspath(model_or_path) if isinstance(model_or_path, (str, os.PathLike)) else model.graph.name
    if not model.HasField("graph") or not model.opset_import:
        raise ModelImportError("not an ONNX model: it has no graph or no opset_import (empty or truncated?)")
    if input_shapes:
        model = _with_input_shapes(model, input_shapes)
    opset = default_opset(model)
    if opset < MIN_OPSET:
        model = _upgrade(model, opset)
        opset = default_opset(model)
    if opset > MAX_OPSET:
        log.warning("model opset %d is newer than %d; importing with the opset-%d converters",
                    opset, MAX_OPSET, MAX_OPSET)
    undefined = _undefined_inputs(model.graph, opset)
    if undefined:  # before the checker, which reports them as an ordering problem
        lines = "\n  ".join(str(p) for p in undefined)
        raise ModelImportError(f"{source!r}: {len(undefined)} node(s) read undefined tensors:\n  {lines}", undefined)
    if check:
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:
            raise ModelImportError(f"invalid ONNX model: {str(e).strip().splitlines()[0]}") from e
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as e:  # noqa: BLE001 - inference is only a cross-check
        log.warning("onnx shape inference failed (%s); output shapes are not cross-checked", e)
        inferred = model
    g = model.graph
    reserved = {v for nd in g.node for v in list(nd.input) + list(nd.output)}
    reserved |= {i.name for i in g.input} | {i.name for i in g.initializer}
    b = GraphBuilder()
    ctx = ImportContext(b, reserved)
    for init in g.initializer:
        try:
            ctx.env[init.name] = numpy_helper.to_array(init)
        except ValueError as e:  # raw data of the wrong size (the checker would have said so)
            raise ModelImportError(f"initializer {init.name!r}: its data does not fit its type and shape "
                                   f"{list(init.dims)} ({str(e).splitlines()[0]})") from None
    frozen = dict(constant_inputs or {})
    unknown = set(frozen) - {vi.name for vi in g.input}
    if unknown:
        raise ModelImportError(f"constant_inputs names unknown input(s) {sorted(unknown)}; "
                               f"model inputs are {sorted(vi.name for vi in g.input)}")
    bad_inputs = []
    named = symbolic_input_shapes(model) if dynamic else {}
    for vi in g.input:
        if vi.name in ctx.env:
            continue  # IR < 4 lists initializers as inputs too
        kind = _unsupported_type(vi)
        if kind:
            ctx.unusable[vi.name] = f"model input {vi.name!r} is {kind}"
            continue
        if vi.name in frozen:
            ctx.env[vi.name] = np.asarray(frozen[vi.name], dtype=_np_dtype(vi.type.tensor_type.elem_type))
            continue
        dims, unknown = _input_shape(vi)
        if unknown and vi.name in named:
            dims, unknown = list(named[vi.name]), []
        if unknown and all(" is " in u for u in unknown) and _only_descriptive(vi.name, g):
            ctx.env[vi.name] = np.zeros([max(d, 0) for d in dims], _np_dtype(vi.type.tensor_type.elem_type))
            continue
        if unknown:
            bad_inputs.append(f"{vi.name!r}: {', '.join(u if ' is ' in u else u + ' unknown' for u in unknown)}")
            continue
        ctx._used.add(vi.name)
        ctx.graph_inputs.add(vi.name)
        dt = _np_dtype(vi.type.tensor_type.elem_type)
        if is_lowbit(dt):
            ctx.lowbit[vi.name] = dt
        ctx.env[vi.name] = b.input(vi.name, dims, dt)  # low-precision: byte storage
    if bad_inputs:
        zero = all(" is " in b for b in bad_inputs)
        raise ModelImportError(("model inputs with zero-length dimensions: " if zero else
                                "model inputs with unknown dimensions (pass input_shapes={name: shape}): ")
                               + "; ".join(bad_inputs))

    problems = _convert_nodes(ctx, g.node, opset, CONVERTERS)
    for o in g.output:
        kind = _unsupported_type(o)
        if kind and not any(p.reason.startswith(f"model input {o.name!r}") for p in problems):
            problems.append(ImportProblem(f"output {o.name}", "(graph output)", opset,
                                          f"graph output {o.name!r} is {kind}"))
        elif o.name in ctx.unusable and not problems:
            problems.append(ImportProblem(f"output {o.name}", "(graph output)", opset, ctx.unusable[o.name]))
    if problems:
        lines = "\n  ".join(str(p) for p in problems)
        raise ModelImportError(f"{source!r}: {len(problems)} node(s) cannot be imported:\n  {lines}", problems,
                               sorted(ctx.needs_const))

    outputs = [ctx.node(o.name) for o in g.output]
    graph = b.build(outputs)
    _cross_check(graph, inferred)
    n_ops = sum(1 for n in graph.nodes if n.is_op)
    log.info("imported %d ONNX nodes (opset %d) as %d tefuse ops, %d constants", len(g.node), opset,
             n_ops, len(graph.constants))
    return graph


def _convert_nodes(ctx: ImportContext, nodes, opset: int, converters) -> list[ImportProblem]:
    problems: list[ImportProblem] = []
    poisoned: set[str] = set()
    for k, proto in enumerate(nodes):
        n = OnnxNode(proto.name or f"#{k}:{proto.output[0] if proto.output else ''}", proto.op_type,
                     proto.domain, list(proto.input), list(proto.output),
                     {a.name: decode_bytes(helper.get_attribute_value(a)) for a in proto.attribute},
                     opset, proto)

        def fail(reason: str) -> None:
            problems.append(ImportProblem(n.name, n.op_type, n.opset, reason))
            poisoned.update(o for o in n.outputs if o)

        conv = converters.get(n.op_type) if n.domain in ("", "ai.onnx") else None
        ins = [i for i in n.inputs if i]
        unusable = [i for i in ins if i in ctx.unusable]
        if unusable:
            fail(ctx.unusable[unusable[0]] + " (only tensors of numeric or bool types are supported)")
            continue
        if any(i in poisoned for i in ins):
            poisoned.update(o for o in n.outputs if o)
            if conv is None:
                fail(f"no converter for op type {n.op_type!r}" + (f" in domain {n.domain!r}" if n.domain else ""))
            elif conv.problem(n):
                fail(conv.problem(n))
            continue
        missing = [i for i in ins if i not in ctx.env]
        if missing:
            fail(f"input(s) {missing} are not produced by any earlier node (graph not topologically sorted?)")
            continue
        all_const = all(isinstance(ctx.env[i], np.ndarray) for i in ins)
        low = [i for i in ins if is_lowbit(ctx.logical_dtype(i))]
        if low and not all_const and n.op_type not in TAKES_LOWBIT:
            fail(f"input {low[0]!r} holds {ctx.logical_dtype(low[0])} values, which only "
                 f"{', '.join(sorted(TAKES_LOWBIT))} take")
            continue
        try:
            # shape arithmetic over symbolic dims folds, but for a shape input of Reshape / Expand
            symbolic = all_const and any(is_shape_value(ctx.env[i]) for i in ins)
            if symbolic and (n.op_type not in TAKES_SHAPES or is_shape_value(ctx.env[ins[0]])):
                vals = fold_shape_values(n, [ctx.env[i] if i else None for i in n.inputs])
            elif all_const and not symbolic and (conv is None or conv.foldable):
                vals = _fold(ctx, n)
            elif conv is None:
                fail(f"no converter for op type {n.op_type!r}" + (f" in domain {n.domain!r}" if n.domain else ""))
                continue
            else:
                bad = conv.problem(n)
                if bad:
                    fail(bad)
                    continue
                vals = conv.fn(ctx, n)
        except Unsupported as e:
            fail(str(e))
            continue
        except Exception as e:  # noqa: BLE001 - folding through onnx.reference raises anything
            fail(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
            continue
        for o, v in zip(n.outputs, vals):
            if o:
                ctx.env[o] = v
                if n.op_type == "Identity" and n.inputs[0] in ctx.lowbit and not isinstance(v, np.ndarray):
                    ctx.lowbit[o] = ctx.lowbit[n.inputs[0]]
    return problems


def _cross_check(graph: Graph, inferred: onnx.ModelProto) -> None:
    """ONNX's own shape inference must agree with tefuse's on the graph outputs."""
    for node, vi in zip(graph.outputs, inferred.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if not dims or not all(d.HasField("dim_value") for d in dims):
            continue
        want = tuple(int(d.dim_value) for d in dims)
        if want != node.shape:
            raise ModelImportError(f"output {vi.name!r}: tefuse infers shape {node.shape}, "
                                   f"ONNX shape inference says {want}")
