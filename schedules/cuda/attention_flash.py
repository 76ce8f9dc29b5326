"""CUDA flash-attention template for the attention op (ops/attention.py): fp16 on mma.sync, the
scores and probabilities in registers (intrin/flash.py), sm_80 and later.

One thread block per (batch entry, 16 * warps query rows), as attention.py's wmma template:
the block's q rows and all of k and v are copied to shared memory (their prologues, a
transformer's head split, computed in the copy; padding rows zero), then each warp runs the
flash core on its 16 rows, writing a float32 16 x Dv tile, and the rows go out cast, with the
epilogue (the head merge) computed in the store.

An additive bias (a key or causal mask) is copied to shared memory like q, k and v, float32,
its prologue (the mask's where) computed in the copy: the block's rows of it, or the one row of
a key mask; the core adds it to the scaled scores (intrin/flash.py).

The op's compute spells attention as five stages (scores, max, sum, probabilities, context).
`prepare` replaces the middle ones by a placeholder block with the core's regions (each context
row reads its q row and every k and v row), which the schedule tensorizes with the core, so the
function this template schedules computes attention on CUDA only, through the core (the other
targets, and this one's other template, schedule the op's own stages).
"""
from __future__ import annotations

import tvm
import tvm.s_tir as s_tir_mod
from tvm import tirx
from tvm_ffi import structural_walk

from ...options import DEFAULT, BuildOptions
from ...ops.attention import BLOCKS, AttentionGeometry
from ...target import device_caps, optin_target
from ..registry import DOMINANT, KernelInfo, Template, register
from ..space import Config, ConfigSpace
from .attention import PAD_HALF, copy_to_shared, padded_row, store_rows
from .gemm.tiles import inline_epilogue
from .intrin.flash import KEY_STEPS, flash_intrin, placeholder_value

SCOPE = "shared.dyn"
# warps a block, 16 query rows each: more share a block's k and v tiles (the op pads q rows to a
# multiple of 64, so 8 only where the padded rows are a multiple of 128)
WARPS = (4, 8, 2)
MAX_HEAD_DIM = 128  # q/k and v rows a warp holds in registers: d/16 * 4 + dv/8 * 4 of them
PLACEHOLDER = "flash_placeholder"
_MIDDLE = (BLOCKS.scores, BLOCKS.max, BLOCKS.sum, BLOCKS.probs)


def core_bias_rows(geo: AttentionGeometry) -> int:
    """The bias rows a warp's core reads: 0 (none), 1 (a key mask) or its 16."""
    return 16 if geo.bias_rows > 1 else geo.bias_rows


def shared_bytes(geo: AttentionGeometry, warps: int) -> int:
    """The block's shared tiles: its q rows, every k and v row (fp16 rows padded 16 bytes), the
    float32 context rows (unpadded: the tensorized block's layout is TVM's) and the float32 bias
    rows (padded 32 bytes)."""
    rows, lk = 16 * warps, geo.lk_pad
    d, dv = padded_row(geo.d, PAD_HALF), padded_row(geo.dv, PAD_HALF)
    bias_rows = rows if geo.bias_rows > 1 else geo.bias_rows  # a key mask: one row
    return 2 * (rows * d + lk * d + lk * dv) + 4 * rows * geo.dv + 4 * bias_rows * padded_row(lk, PAD_HALF)


def _fits(geo: AttentionGeometry, warps: int, smem: int) -> bool:
    return geo.lq_pad % (16 * warps) == 0 and shared_bytes(geo, warps) <= smem


def flash_placeholder(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` (the attention op's stages, any prologue and epilogue) with the scores, max, sum and
    probabilities stages gone and the context stage a placeholder the flash core replaces: it
    writes each context element from its q row and all of k and v (see the module docstring)."""
    blocks = {}
    structural_walk(func.body, lambda n: blocks.__setitem__(n.name_hint, n)
                    if isinstance(n, s_tir_mod.SBlock) else None)
    scores, ctx = blocks[BLOCKS.scores], blocks[BLOCKS.context]
    q, k = (r.source for r in scores.reads)
    bias = blocks[BLOCKS.bias].writes[0].source if BLOCKS.bias in blocks else None
    v, out = ctx.reads[1].source, ctx.writes[0].source
    dropped = [blocks[n].writes[0].source for n in _MIDDLE]

    *batch, lq, dv = (int(x) for x in out.shape)
    lk, d = (int(x) for x in k.shape[-2:])
    names = [f"i{n}" for n in range(len(batch))] + ["i", "j"]
    loop_vars = [tirx.Var(n, "int32") for n in names]
    iter_vars = [tirx.IterVar(tvm.ir.Range(0, e), tirx.Var(f"v_{n}", "int32"), tirx.IterVar.DataPar)
                 for n, e in zip(names, [*batch, lq, dv])]
    *vb, vi, vj = [iv.var for iv in iter_vars]
    reads = [q[(*vb, vi, slice(0, d))], k[(*vb, slice(0, lk), slice(0, d))], v[(*vb, slice(0, lk), vj)]]
    zero = tirx.const(0, "int32")
    b_elem = None
    if bias is not None:  # the row of the query, or the key mask's one row
        row = vi if int(bias.shape[-2]) > 1 else zero
        reads.append(bias[(*vb, row, slice(0, lk))])
        b_elem = bias[(*vb, row, zero)]
    value = placeholder_value(q[(*vb, vi, zero)], k[(*vb, zero, zero)], v[(*vb, zero, vj)], b_elem)
    block = s_tir_mod.SBlock(iter_vars, reads, [out[(*vb, vi, slice(vj, vj + 1))]], PLACEHOLDER,
                             tirx.BufferStore(out, value, [*vb, vi, vj]))
    nest = s_tir_mod.SBlockRealize(loop_vars, True, block)
    for var, extent in reversed(list(zip(loop_vars, [*batch, lq, dv]))):
        nest = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, nest)

    def innermost(stmt) -> str:
        found = []
        structural_walk(stmt, lambda n: found.append(n.name_hint) if isinstance(n, s_tir_mod.SBlock) else None)
        return found[0]

    root = func.body.block
    body = []
    for stmt in root.body.seq:
        name = innermost(stmt)
        if name == BLOCKS.context:
            body.append(nest)
        elif name not in _MIDDLE:
            body.append(stmt)
    allocs = [b for b in root.alloc_buffers if not any(b.same_as(x) for x in dropped)]
    new_root = s_tir_mod.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, tirx.SeqStmt(body),
                                root.init, allocs, root.match_buffers, root.annotations)
    return func.with_body(s_tir_mod.SBlockRealize(func.body.iter_values, func.body.predicate, new_root))


@register("cuda", "attention")
class FlashAttention(Template):
    name = "flash_attention"
    forms_by_default = True  # ViT-B/16 b32: see the module docstring

    def supports(self, geometry, dtype: str, target) -> bool:
        """fp16 on sm_80 and later, head dims of whole 16-column fragments up to MAX_HEAD_DIM, every
        k and v row of a block (and the block's bias rows) in the arch's shared memory."""
        return (dtype == "float16" and device_caps(target).has_mma
                and geometry.d % 16 == 0 and geometry.dv % 16 == 0
                and max(geometry.d, geometry.dv) <= MAX_HEAD_DIM and geometry.lq >= 1 and geometry.lk >= 1
                and any(_fits(geometry, w, device_caps(target).smem_optin) for w in WARPS))

    def accepts(self, info: KernelInfo) -> bool:
        return isinstance(info.geometry, AttentionGeometry) and info.dtype == "float16"

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        return DOMINANT if self.supports(info.geometry, info.dtype, target) else -10

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        smem = device_caps(target).smem_optin
        s.define_knob("warps", [w for w in WARPS if _fits(info.geometry, w, smem)] or [min(WARPS)])
        s.define_knob("vec_out", [8, 4])
        s.define_knob("keys", list(KEY_STEPS))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """64 keys a step; 8 warps a block where that still gives every SM a block, else 4; 4-wide
        stores. ViT-B/16's attention on the H200 (a sweep of every config): batch 32, 0.030 ms at 8 warps against 0.037 at 4 (768 blocks of 8);
        batch 1, 0.0057 at 4 against 0.0067 at 8 (24 blocks of 8 on 132 SMs); 16 keys a step
        took 1.3-1.5x the time of 64, 4-wide stores 1% less than 8."""
        geo, sms = info.geometry, device_caps(target).sm_count
        admitted = space.knobs[0].candidates
        warps = 8 if 8 in admitted and geo.batch * (geo.lq_pad // 128) >= sms else 4
        return space.from_values({"warps": warps if warps in admitted else admitted[0], "vec_out": 4,
                                  "keys": max(KEY_STEPS)})

    def prepare(self, func, info: KernelInfo, cfg: Config, target):
        return flash_placeholder(func)

    def compile_target(self, info: KernelInfo, cfg: Config, target):
        return optin_target(target)

    def apply(self, sch, info: KernelInfo, cfg: Config, target) -> None:
        apply_flash(sch, info, int(cfg["warps"]), int(cfg["vec_out"]), int(cfg["keys"]),
                    device_caps(target).kind == "cuda")


def apply_flash(sch, info: KernelInfo, warps: int, vec_out: int, keys: int = 16, tensorize: bool = True) -> None:
    geo = info.geometry
    g = sch.get_sblock
    core, out = g(PLACEHOLDER), g(BLOCKS.out)
    epilogue = [b for b in info.output_blocks if b != BLOCKS.out]
    if epilogue:  # the head merge (a transpose) and elementwise ops: computed in the store
        inline_epilogue(sch, out, epilogue)

    *batch, i, j = sch.get_loops(core)
    bx = sch.fuse(*batch) if len(batch) > 1 else batch[0]
    qt, wi, i16 = sch.split(i, [None, warps, 16])
    sch.bind(bx, "blockIdx.y")
    sch.bind(qt, "blockIdx.x")
    sch.bind(wi, "threadIdx.y")
    sch.set_scope(core, 0, SCOPE)  # one warp's 16 rows x Dv (the loop i16 on): the flash core
    for name in (BLOCKS.q, BLOCKS.k, BLOCKS.v):
        copy_to_shared(sch, g(name), qt, warps)
    if geo.bias_rows:
        copy_to_shared(sch, g(BLOCKS.bias), qt, warps, vec=4)  # float32: 16 bytes

    store_rows(sch, out, wi, vec_out)
    if tensorize:
        sch.tensorize(i16, flash_intrin(geo.d, geo.dv, geo.lk_pad, geo.lk, geo.alpha, SCOPE, keys,
                                        bias_rows=core_bias_rows(geo), clip=geo.clip))
