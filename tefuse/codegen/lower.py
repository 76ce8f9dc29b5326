"""Lowering: a fused group -> one TE compute DAG -> one PrimFunc, plus what schedules need.

Injective members are lazy index functions, so they fold into the anchor's stages (the
epilogue into the output block, the prologue into the anchor's input stage); only the
anchor's own stages and the group's outputs remain as blocks; in a group without an anchor,
so does an op that picks an input by the index (a concat), which the CUDA injective template
computes a vector at a time (OpDef.picks_input).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import astuple, dataclass

import tvm
from tvm import s_tir, te, tirx as tir
from tvm_ffi import structural_walk

from ..errors import BuildError, OpError
from ..fusion import FusedGroup
from ..fusion.epilogue import padding_spill
from ..fusion.fuse_ops import QUANTIZED_OUTPUT_OPAQUE
from ..graph.ir import CONST, Node
from ..ops import Value, get_op
from ..ops.value import current_dim_limits, eval_dim, hinted_dim, is_static_shape, loop_index_dtype, te_compute
from ..schedules import KernelInfo
from ..schedules.registry import ACCUMULATOR, DATA, WEIGHT


@dataclass
class LoweredGroup:
    group: FusedGroup
    func: tir.PrimFunc
    params: list[Node]  # runtime inputs, in argument order (outputs follow them)
    info: KernelInfo


def _ident(name: str) -> str:
    """A lower-case C identifier for a buffer. Lower case because TVM 0.27's mma.sync codegen
    fills its asm template by replacing the letters A, B and C with the operands: a buffer named
    after ONNX's "onnx::Conv_497" came out as "in_onnx_<C operand>onv_497..." (seen on the H100,
    tensorcore_gemm on ResNet-50's first conv). Runs of other characters become one "_"."""
    s = re.sub(r"\W+", "_", name).strip("_").lower()
    return s if s and not s[0].isdigit() else f"v_{s}"


def _folded_scalar(node: Node) -> Value:
    v = node.value.reshape(-1)[0].item()
    return Value(node.shape, node.dtype, lambda *i: tir.const(v, node.dtype))


def lower_group(group: FusedGroup) -> LoweredGroup:
    """The group as one PrimFunc. Its index arithmetic is 64-bit where a tensor it touches has
    more elements than int32 can index (index_dtype), else TVM's int32. A group with symbolic
    dims is built on their int64 variables and, where its tensors fit int32 at every size of
    the dims' ranges, narrowed to int32 whole, the dims' kernel arguments included."""
    narrow = index_dtype(group)
    symbolic = not all(is_static_shape(n.shape) for n in [*group.inputs, *group.nodes])
    wide = "int64" if symbolic else narrow
    with loop_index_dtype(wide):
        return _lower(group, wide, narrow_to_int32=symbolic and narrow == "int32")


def _lower(group: FusedGroup, wide: str, narrow_to_int32: bool = False) -> LoweredGroup:
    vals: dict[int, Value] = {}
    placeholders, params = [], []
    for i in group.inputs:
        if i.op == CONST and i.value.size == 1:
            vals[id(i)] = _folded_scalar(i)
            continue
        name = f"in_{_ident(i.name)}"
        if any(p.name == name for p in placeholders):  # "X" and "x" both lower-case to in_x
            name = f"{name}_{len(placeholders)}"
        shape = [tir.IntImm("int64", d) if isinstance(d, int) else d for d in i.shape] if wide == "int64" else i.shape
        ph = te.placeholder(shape, i.dtype, name=name)
        vals[id(i)] = Value.of_tensor(ph)
        placeholders.append(ph)
        params.append(i)
    outputs, picks = {id(o) for o in group.outputs}, []
    read_inside = {id(i) for n in group.nodes for i in n.inputs}
    for n in group.nodes:
        try:
            vals[id(n)] = get_op(n.op).compute([vals[id(i)] for i in n.inputs], n.attrs)
        except OpError as e:
            raise BuildError(f"group {group.name}: node {n.name!r} ({n.op}): {e}") from None
        except tvm.error.InternalError as e:  # an expression TVM refuses: one line, not its trace
            first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
            raise BuildError(f"group {group.name}: node {n.name!r} ({n.op}): TVM cannot compute it: "
                             f"{first[:300]}") from None
        if group.anchor is not None and id(n) in outputs and id(n) in read_inside and vals[id(n)].is_lazy \
                and (n is not group.anchor or n.anchor_kind in QUANTIZED_OUTPUT_OPAQUE):
            # an epilogue output the group reads on (a value and its QuantizeLinear, both written:
            # fusion's quantized outputs): a block of its own, which the rest reads, so the
            # templates store it and compute the rest from it (tiles.follow_outputs); a
            # LayerNorm's rows too, so its quantize reads them rather than their statistics
            vals[id(n)] = Value.of_tensor(vals[id(n)].materialize(f"out_{_ident(n.name)}"))
        if group.anchor is None and get_op(n.op).picks_input and id(n) not in outputs and vals[id(n)].is_lazy:
            # a stage of its own (OpDef.picks_input): templates inline it, or compute it a vector at a time
            picks.append(f"pick{len(picks)}_{_ident(n.name)}")
            vals[id(n)] = Value.of_tensor(vals[id(n)].materialize(picks[-1]))
    outs = _materialize_outputs(group, vals, placeholders)
    func = te.create_prim_func(placeholders + outs, index_dtype_override="int64" if wide == "int64" else None)
    func = _single_definitions(func)
    if narrow_to_int32:
        func = _narrowed(func)
    return LoweredGroup(group, func, params, _kernel_info(group, func, len(outs), picks))


def _narrowed(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with every index, loop and dim variable int32 (TVM's ForceNarrowIndexToInt32):
    only called where index_dtype found every tensor under 2^31 elements over the dims' ranges,
    and no int64 tensor, which that pass refuses."""
    return tir.transform.ForceNarrowIndexToInt32()(tvm.IRModule({"main": func}))["main"]


def _single_definitions(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with each Let variable defined once: a value read twice in a group is one
    expression object (ops/value.Value memoises it), so its bindings can appear twice, which
    TIR's schedules refuse as ill-formed; ConvertSSA renames the second."""
    return tir.transform.ConvertSSA()(tvm.IRModule({"main": func}))["main"]


def _materialize_outputs(group: FusedGroup, vals: dict, placeholders: list) -> list[te.Tensor]:
    outs = [vals[id(o)] for o in group.outputs]
    same_shape = len({v.shape for v in outs}) == 1
    if group.anchor is None and len(outs) > 1 and same_shape and all(v.is_lazy for v in outs):
        # one compute with several results: one loop nest, so one kernel
        res = te_compute(outs[0].shape, lambda *i: tuple(v(*i) for v in outs), name="fused_out")
        return list(res)
    tensors: list[te.Tensor] = []
    for node, v in zip(group.outputs, outs):
        t = v.tensor
        if t is None or any(t.same_as(p) for p in placeholders) or any(t.same_as(x) for x in tensors):
            t = Value(v.shape, v.dtype, v.fn).materialize(f"out_{_ident(node.name)}")
        tensors.append(t)
    return tensors


def _kernel_info(group: FusedGroup, func: tir.PrimFunc, n_out: int, picks=()) -> KernelInfo:
    sch = s_tir.Schedule(func)
    out_bufs = {_buffer_name(func, p) for p in list(func.params)[-n_out:]}
    inline, reduce_, outputs = [], [], []
    producer: dict[str, str] = {}  # buffer -> the block writing it
    for b in sch.get_child_blocks(sch.get_sblock("root")):
        blk = sch.get(b)
        for w in blk.writes:
            producer.setdefault(w.source.name, blk.name_hint)
        if any(w.source.name in out_bufs for w in blk.writes):
            outputs.append(blk.name_hint)
        if any(iv.iter_type != 0 for iv in blk.iter_vars):
            reduce_.append(blk.name_hint)
        elif blk.name_hint not in outputs:
            inline.append(blk.name_hint)
    a = group.anchor
    stages, operands = _roles(sch, a, reduce_[0] if reduce_ else None, producer)
    return KernelInfo(
        anchor_kind=group.anchor_kind,
        anchor_block=reduce_[0] if reduce_ else None,
        inline_blocks=inline,
        reduce_blocks=reduce_,
        output_blocks=outputs,
        attrs=dict(a.attrs) if a is not None else {},
        out_shape=_sized(a.shape if a is not None else group.outputs[0].shape),
        output_shapes=[_sized(o.shape) for o in group.outputs],
        in_shapes=[_sized(i.shape) for i in a.inputs] if a is not None else [],
        symbolic=not all(is_static_shape(n.shape) for n in [*group.inputs, *group.nodes]),
        symbolic_in=tuple(_symbolic_axes(i.shape) for i in a.inputs) if a is not None else (),
        symbolic_out=_symbolic_axes(a.shape) if a is not None else (),
        dtype=_compute_dtype(a, group),
        geometry=_geometry(a),
        stages=stages,
        operands=operands,
        padding_spills=astuple(padding_spill(group)),
        samples=any(get_op(n.op).samples for n in group.nodes),
        pick_stages=[b for b in picks if b in inline],
    )


def _sized(shape) -> tuple[int, ...]:
    """A shape as templates size a kernel by: a symbolic dim at the size the build is tuned for
    (its range's opt, ops.value.dim_hints); the kernel's own extents stay symbolic."""
    return tuple(hinted_dim(d) for d in shape)


def _symbolic_axes(shape) -> tuple[int, ...]:
    """The axes of `shape` whose extents are symbolic."""
    return tuple(k for k, d in enumerate(shape) if not is_static_shape((d,)))


def _compute_dtype(anchor: Node | None, group) -> str:
    """The type a template computes in: the anchor's output type, except a split-K product's,
    whose output (float32; an int8 product's int32) holds partial sums of its operands' type
    (ops/split_k.py), an int8 product's (out_dtype int32) and a product of float8 codes' (uint8
    operands, ops/codes.py)."""
    if anchor is not None and (anchor.attrs.get("split_k", 1) > 1 or anchor.attrs.get("out_dtype")
                               or anchor.attrs.get("codes")):
        return anchor.inputs[0].dtype  # (an int8 product's int32 output: its operands are int8)
    return (anchor or group.outputs[0]).dtype


def _geometry(anchor: Node | None):
    if anchor is None:
        return None
    return get_op(anchor.op).geometry_of([i.shape for i in anchor.inputs], anchor.shape, anchor.attrs)


def _roles(sch: s_tir.Schedule, anchor: Node | None, accumulator: str | None,
           producer: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(role -> block, role -> buffer) from the structure: the accumulator is the anchor's
    (first) reduction block; its reads follow the anchor's operands (data first, a weight
    last), and the block writing an operand's buffer, if any, is that operand's stage."""
    if anchor is None or accumulator is None:
        return {}, {}
    stages, operands = {ACCUMULATOR: accumulator}, {}
    reads = list(dict.fromkeys(r.source.name for r in sch.get(sch.get_sblock(accumulator)).reads))
    if reads:
        operands[DATA] = reads[0]
        if len(anchor.inputs) > 1:
            operands[WEIGHT] = reads[-1]
    for role, buf in operands.items():
        if buf in producer:
            stages[role] = producer[buf]
    return stages, operands


def _buffer_name(func: tir.PrimFunc, param) -> str:
    bmap = getattr(func, "buffer_map", None)
    return bmap[param].name if bmap is not None else param.name


INT32_LIMIT = 2**31 - 1


def index_dtype(group: FusedGroup) -> str:
    """"int64" where a tensor the group reads or writes holds more elements than int32 can
    index (an offset past 2^31 - 1), else "int32". Decided from the extents at build time, so
    a kernel of ordinary size keeps the cheaper 32-bit arithmetic (on a GPU a 64-bit multiply,
    or a division by a constant, is several 32-bit instructions: the implicit GEMM's pixel ->
    (n, y, x) split, every store's offset). A symbolic dim (an int64 variable bound at run
    time, graph/dims.py) counts at each end of its range (ops.value.dim_limits, set by a
    dynamic build); a dim without a known range, or an int64 tensor in a symbolic group, keeps
    64-bit indices."""
    tensors = [*group.inputs, *group.nodes]
    if all(is_static_shape(n.shape) for n in tensors):
        biggest = max((_numel(n.shape, {}) for n in tensors), default=0)
        return "int64" if biggest > INT32_LIMIT else "int32"
    if any(n.dtype in ("int64", "uint64") for n in tensors):
        return "int64"
    limits = current_dim_limits()
    names = sorted({v.name for n in tensors for d in n.shape if not is_static_shape((d,))
                    for v in _vars_of(d)})
    if any(name not in limits for name in names):
        return "int64"
    for corner in itertools.product(*(limits[name] for name in names)):
        sizes = dict(zip(names, corner))
        if max(_numel(n.shape, sizes) for n in tensors) > INT32_LIMIT:
            return "int64"
    return "int32"


def _vars_of(d) -> list:
    found: list = []
    structural_walk(d, (tir.Var, found.append), order="post")
    return found


def _numel(shape, sizes: dict) -> int:
    n = 1
    for d in shape:
        n *= eval_dim(d, sizes)
    return n
