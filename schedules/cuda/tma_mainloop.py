"""The TMA mainloop in a wgmma kernel: the schedule's k loop handed to tma_source's device
function, its operands described by tensor maps encoded on the host.

The wgmma schedule (tensorcore_wgmma) builds the kernel as usual, without a software pipeline,
and annotates its k loop with a `TmaPlan` (`annotate`). After TVM has lowered the blocks
(`InjectTmaMainloop`, in wgmma_pipeline's `PIPELINE`), the pass
- replaces that loop (its cp.async copies and wgmma call) by one call of the mainloop, with this
  lane's accumulators (the wgmma call's own first argument), the two maps and a shared buffer;
- gives that buffer the bytes of the stages (the schedule's one-stage operand tiles go);
- encodes the maps in the host part of the function (they become `__grid_constant__` kernel
  parameters), over the operands as row-major [rows, K] matrices;
- launches the grid in clusters (thread extents `clusterCtaIdx.x/y`: TVM's runtime launches each
  blockIdx as one CTA, results/issue9/session24/h100/probe_cluster_run.txt).

Status (session 24, H100): correct for clusters 1x1, 2x1, 1x2 and 2x2, but about twice the
cp.async kernel's time at the config's 3-4 stages (WGMMA_NOTES, "Session 24"); experimental, off
unless TEFUSE_TMA is set.

Only operands the copies read as a plain row-major [rows, K] view of a function parameter take
this path (1x1 stride-1 NHWC convs, dense, matmul); `operand_view` says which.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Optional

import tvm
import tvm.sym  # noqa: F401 - the arithmetic analyzer
from tvm import tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.script import tirx as T
from tvm_ffi import structural_mutate, structural_walk

from ..common import dtype_bytes, env_switch
from . import tma_source
from .cluster_sum import in_clusters
from .tensor_intrin_wgmma import bk_of

ANNOTATION = "tefuse_tma"


def cluster_from_env() -> Optional[tuple]:
    """(CM, CN) while TEFUSE_TMA=CMxCN routes wgmma kernels through the mainloop, else None.
    Experimental (session 24): a switch, not a config knob, until it is faster."""
    if not env_switch("TEFUSE_TMA"):  # 0: off, as the kernel cache keys it
        return None
    cm, cn = (int(x) for x in os.environ["TEFUSE_TMA"].strip().lower().split("x"))
    return cm, cn


@dataclass(frozen=True)
class Operand:
    """A GEMM operand as the TMA unit reads it: `param` (a function parameter's buffer name)
    viewed as a row-major [rows, k] matrix, `stride` elements from row to row."""
    param: str
    rows: int
    k: int
    stride: int


@dataclass(frozen=True)
class TmaPlan:
    bm: int
    bn: int
    stages: int
    ktiles: int
    cm: int
    cn: int
    in_dtype: str
    a: Operand
    b: Operand

    def dumps(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def loads(text: str) -> "TmaPlan":
        d = json.loads(text)
        return TmaPlan(**{**d, "a": Operand(**d["a"]), "b": Operand(**d["b"])})


def operand_view(sch, copy_block) -> Operand:
    """How the shared-tile copy `copy_block` (rows v1, depth v2) reads its operand, as an
    Operand; ValueError unless it is a plain load of a contiguous function parameter at
    row * stride + k, zero outside `v1 < rows` / `v2 < k` guards (what TMA fills with zeros)."""
    blk = sch.get(copy_block)
    store = blk.body
    if not isinstance(store, tirx.BufferStore) or len(blk.iter_vars) != 3:
        raise ValueError("TMA: the operand copy is not one plain store")
    _, row, col = (iv.var for iv in blk.iter_vars)
    ext = {iv.var.name: int(iv.dom.extent) for iv in blk.iter_vars}
    value, bounds = store.value, {}
    if isinstance(value, Call) and value.op.name.endswith("if_then_else"):
        cond, load, other = value.args
        if not (isinstance(other, tirx.FloatImm) and other.value == 0.0):
            raise ValueError("TMA: the operand's padding is not zero")
        for c in _conjuncts(cond):
            if not (isinstance(c, tirx.LT) and isinstance(c.a, tirx.Var) and isinstance(c.b, tirx.IntImm)):
                raise ValueError(f"TMA: an operand guard it cannot express ({c})")
            bounds[c.a.name] = int(c.b.value)
        value = load
    if not isinstance(value, TensorLoad):
        raise ValueError("TMA: the operand copy computes (a prologue, a cast): cp.async path only")
    buf = value.source
    shape = [int(s) for s in buf.shape]
    flat, total = 0, 1
    for idx, extent in zip(value.indices, shape):
        flat, total = flat * extent + idx, total * extent
    rows = bounds.get(row.name, ext[row.name])
    k = bounds.get(col.name, ext[col.name])
    stride = total // rows  # the buffer as [rows, stride]: the load must be row * stride + k
    ana = tvm.sym.Analyzer()
    ana.bind(row, tvm.ir.Range(0, rows))
    ana.bind(col, tvm.ir.Range(0, k))
    # (TMA takes row strides of whole 16 bytes)
    if not ana.can_prove_equal(flat, row * stride + col) or stride * dtype_bytes(str(buf.dtype)) % 16 or k > stride:
        raise ValueError(f"TMA: {buf.name} is not read as a row-major [{rows}, {k}] matrix")
    return Operand(buf.name, rows, k, stride)


def _conjuncts(cond):
    if isinstance(cond, tirx.And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


# shared memory the deepest TMA pipeline may take (of Hopper's 227 KB: the staging tile reuses it)
DEEP_BYTES = 200 * 1024


def stages_for(stages: int, bm: int, bn: int, ktiles: int) -> int:
    """The TMA mainloop's stage count: the config's, unless TEFUSE_TMA_STAGES (experimental) says
    N or "max" (as many as DEEP_BYTES hold): TMA's loads take longer to land than cp.async's
    (about 1.9 us a 16 KB stage at 3 stages in flight, session 24), so a deeper pipeline may pay
    where cp.async's did not. Never more than the reduction's steps, never under 2."""
    want = os.environ.get("TEFUSE_TMA_STAGES", "").strip().lower()
    if want == "max":
        stages = (DEEP_BYTES - tma_source.ALIGN) // ((bm + bn) * tma_source.ROW_BYTES)
    elif env_switch("TEFUSE_TMA_STAGES"):  # 0: the config's, as unset (the kernel cache keys it so)
        stages = int(want)
    return max(2, min(stages, ktiles))


def annotate(sch, k_loop, plan: TmaPlan) -> None:
    tma_source.check(plan.bm, plan.bn, plan.stages, plan.cm, plan.cn, plan.in_dtype)
    sch.annotate(k_loop, ANNOTATION, plan.dumps())


# ------------------------------------------------------------------ the pass

def _wgmma_call(loop):
    found = []
    structural_walk(loop.body, lambda n: found.append(n) if isinstance(n, Call) and n.args
                    and isinstance(n.args[0], tvm.ir.expr.StringImm)
                    and n.args[0].value.startswith("tefuse_wgmma_") else None)
    if len(found) != 1:
        raise ValueError(f"TMA: the k loop holds {len(found)} wgmma calls, not 1")
    return found[0]


def _tensormap(name: str, param, op: Operand, box_rows: int, dtype: str):
    """A tensor-map variable and the host statements that encode it: operand `op` of buffer
    `param` as a 2-D [rows, k] tensor, boxes of one 128-byte row (bk_of(dtype) elements) by
    `box_rows`, 128-byte swizzle (3), L2 promotion of 128 bytes (2), zeros out of bounds."""
    var = T.Var(name, ty=T.handle("tensormap").ty)
    encode = tirx.op.tensormap_encode_tiled(
        var, param.data, op.k, op.rows, op.stride * dtype_bytes(dtype), bk_of(dtype), box_rows, 1, 1,
        descriptor_dtype=dtype, rank=2, swizzle=3, l2_promotion=2)
    return var, [tirx.Bind(var, tirx.op.tvm_stack_alloca("tensormap", 1)), tirx.Evaluate(encode)]


def inject(func):
    """`func` with its TMA-marked k loop (if any) replaced by the mainloop: see the module
    docstring. ValueError where the loop is not the wgmma schedule's."""
    plans = []

    def find(n):
        if isinstance(n, tirx.For) and n.annotations and ANNOTATION in n.annotations:
            plans.append(n)

    structural_walk(func.body, find)
    if not plans:
        return func
    if len(plans) > 1:
        raise ValueError("TMA: more than one k loop marked")
    loop = plans[0]
    plan = TmaPlan.loads(str(loop.annotations[ANNOTATION]))
    params = {p.name: p for p in func.params}
    wg = _wgmma_call(loop)
    nbytes = tma_source.shared_bytes(plan.bm, plan.bn, plan.stages)
    smem = tirx.decl_buffer((nbytes // 2,), "float16", "tma_smem", scope="shared.dyn")
    map_a, host_a = _tensormap("tma_map_a", params[plan.a.param], plan.a, plan.bm // plan.cn, plan.in_dtype)
    map_b, host_b = _tensormap("tma_map_b", params[plan.b.param], plan.b, plan.bn // plan.cm, plan.in_dtype)
    name = tma_source.func_name(plan.bm, plan.bn, plan.stages, plan.ktiles, plan.cm, plan.cn, plan.in_dtype)
    src = tma_source.device_source(plan.bm, plan.bn, plan.stages, plan.ktiles, plan.cm, plan.cn, plan.in_dtype)
    call = T.cuda.func_call(name, wg.args[1], T.address_of(map_a), T.address_of(map_b),
                            smem.access_ptr("rw"), source_code=src)

    def on_for(n, m):  # the loop (its one-stage tiles allocated inside) goes, the stages come
        if n.same_as(loop):
            return tirx.SeqStmt([tirx.AllocBuffer(smem), tirx.Evaluate(call)])
        return m.default_mutate(n)

    def on_attr(n, m):
        n = m.default_mutate(n)
        if (n.attr_key == "thread_extent" and n.node.thread_tag == "blockIdx.x"
                and plan.cm * plan.cn > 1):
            return tirx.AttrStmt(n.node, n.attr_key, n.value, in_clusters(n.body, {"y": plan.cm, "x": plan.cn}))
        return n

    body = structural_mutate(func.body, [(tirx.For, on_for), (tirx.AttrStmt, on_attr)])
    return func.with_body(tirx.SeqStmt([*host_a, *host_b, body]))


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.InjectTmaMainloop")
def InjectTmaMainloop(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return inject(func)
