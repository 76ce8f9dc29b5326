"""Flash-attention core as a tensor intrinsic (mma.sync m16n8k16, fp16, sm_80+): one warp's 16
query rows against every key of the block's shared k and v tiles, softmax online, the 16 x Dv
context rows written to a float32 shared tile.

Why: three kernels (scores, softmax, context) write and read the [.., Lq, Lk] scores and
probabilities through global memory (ViT-B/16 b32: 1.0 ms of attention where cuDNN's flash
kernel takes 0.3), and the wmma template (attention.py) keeps the float32 scores in shared
memory between phases. Here the scores and probabilities never leave the warp's registers, as
in FlashAttention-2: the accumulators of S = Q K^T are in the m16n8k16 C layout, which is the A
layout of P V's k16 chunk once rounded to fp16 pairs, so P is fed straight back to the tensor
cores.

Layouts (PTX ISA 9.7.13.5.8, m16n8k16 f16): lane = 4 * group + quad;
- Q [16][D] in shared, rows `qs` elements apart: A fragments of each 16-wide d chunk by ldmatrix.x4;
- K [Lk_pad][D], rows `ks` apart: S's B operand is K^T, so K's rows (keys) are B's columns and
  ldmatrix (no transpose) of 8 keys x 8 d gives b0/b1 of an n8 tile;
- V [Lk_pad][Dv], rows `vs` apart: P V's B operand is V itself (keys are its k), read with
  ldmatrix.trans;
- S and O accumulators: c0, c1 at row `group`, columns 2 * quad + 0/1; c2, c3 eight rows down.
Each step over `keys` keys (16 to 64; a knob): S for them (two n8 tiles a 16), scaled (with an
additive bias, alpha * S + B clamped to +-clip, then by log2(e); floored at float32's lowest, so
a row of masked keys stays finite and uniform), keys past `lk` set to -inf, the row maxima over the quad (shuffles), the running sum and O rescaled by
exp2(m_old - m_new), P = exp2(S' - m) (S' = S * alpha * log2(e), or the biased logits by log2(e)), O += P V. At the end O / l goes to the float32 tile, rows `os`
apart. P is the unnormalized exp rounded to fp16 (the unfused graph rounds the normalized
probabilities): both are within fp16's rounding of the float64 result.

B (the op's bias, float32 in shared): `bias_rows` 16, the warp's rows `bs` apart; 1, one row
of keys every query reads (a key mask); 0, none.

Every thread of the block calls the function (no predicate: the rows are padded), which lets
it hold a block barrier before its stores (see there).

The intrinsic's description is the placeholder block `flash_placeholder` writes (see
attention_flash.py): the same regions (the warp's 16 q rows, all of k and v, its 16 context
rows) and a body that reads them, which the tensorization replaces by the device function.
"""
from __future__ import annotations

import struct

from tvm import tirx
from tvm.script import tirx as T

from ...intrin import register_once

WARP = 32
LOG2E = 1.4426950408889634
KEY_STEPS = (64, 32, 16)  # keys a step of the online softmax takes (a knob: more, more work in flight)


BIAS_ROWS = (0, 1, 16)


def func_name(d: int, dv: int, lk_pad: int, lk: int, scale_log2: float, keys: int = 16, *, bias_rows: int = 0,
              clip: float = 0.0) -> str:
    """The device function's name: everything its body bakes in, the scale too (its bits), so two
    attention kernels of one module that differ only in alpha cannot share a definition."""
    bias = f"_b{bias_rows}c{struct.pack('>d', clip).hex()}" if bias_rows else ""
    return f"tefuse_flash_16x{dv}_d{d}_k{lk}of{lk_pad}_s{keys}_x{struct.pack('>d', scale_log2).hex()}{bias}"


def _logit(lk: int, scale_log2: float, bias_rows: int, clip: float) -> str:
    """The statement that scales s[t][e] (its key `key`, row group, + 8 for e >= 2) for exp2."""
    if not bias_rows:
        return f"s[t][e] = key < {lk} ? s[t][e] * {scale_log2!r}f : TEFUSE_NEG_INF;"
    row = "((e >> 1) * 8 + group) * bs + " if bias_rows == 16 else ""
    alpha = scale_log2 / LOG2E
    x = f"s[t][e] * {alpha!r}f + b[{row}key]"
    if clip > 0:
        x = f"fminf(fmaxf({x}, {-clip!r}f), {clip!r}f)"
    return f"s[t][e] = key < {lk} ? fmaxf(({x}) * {LOG2E!r}f, TEFUSE_LOWEST) : TEFUSE_NEG_INF;"


def _step(nt: int, key0: str, d: int, dv: int, lk: int, scale_log2: float, bias_rows: int = 0,
          clip: float = 0.0) -> str:
    """One online-softmax step over 16 * nt keys from `key0` (an expression): S for them (2 * nt
    n8 tiles, independent mma chains), the row maxima, the rescale, then P V per 16 keys."""
    return f"""  {{
    const int key0 = {key0};
    float s[{2 * nt}][4];
#pragma unroll
    for (int t = 0; t < {2 * nt}; ++t) s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.f;
#pragma unroll
    for (int c = 0; c < {d // 16}; ++c)
#pragma unroll
      for (int t = 0; t < {nt}; ++t) {{
        unsigned int b[4];  // keys +0..7 (b[0], b[1]: d 0..7, 8..15 of the chunk), +8..15 (b[2], b[3])
        tefuse_ldsm_x4(b, k + (key0 + t * 16 + (lane & 7) + (lane >> 4) * 8) * ks + c * 16 + ((lane >> 3) & 1) * 8);
        tefuse_mma_16816(s[2 * t], qf[c], b[0], b[1]);
        tefuse_mma_16816(s[2 * t + 1], qf[c], b[2], b[3]);
      }}
    float x0 = TEFUSE_NEG_INF, x1 = TEFUSE_NEG_INF;
#pragma unroll
    for (int t = 0; t < {2 * nt}; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {{
        const int key = key0 + t * 8 + quad * 2 + (e & 1);
        {_logit(lk, scale_log2, bias_rows, clip)}
        if (e < 2) x0 = fmaxf(x0, s[t][e]); else x1 = fmaxf(x1, s[t][e]);
      }}
    x0 = fmaxf(x0, __shfl_xor_sync(0xffffffff, x0, 1)); x0 = fmaxf(x0, __shfl_xor_sync(0xffffffff, x0, 2));
    x1 = fmaxf(x1, __shfl_xor_sync(0xffffffff, x1, 1)); x1 = fmaxf(x1, __shfl_xor_sync(0xffffffff, x1, 2));
    const float n0 = fmaxf(m0, x0), n1 = fmaxf(m1, x1);
    // 0 on the first step (m = -inf); 1 where the maximum stays (also -inf against -inf)
    const float r0 = m0 == n0 ? 1.f : exp2f(m0 - n0), r1 = m1 == n1 ? 1.f : exp2f(m1 - n1);
    m0 = n0; m1 = n1; l0 *= r0; l1 *= r1;
#pragma unroll
    for (int t = 0; t < {dv // 8}; ++t) {{ acc[t][0] *= r0; acc[t][1] *= r0; acc[t][2] *= r1; acc[t][3] *= r1; }}
#pragma unroll
    for (int t = 0; t < {nt}; ++t) {{
      unsigned int p[4];  // P's 16 x 16 A fragment: rows group (p[0], p[2]) and group + 8, keys 2 * quad + 0/1 (+ 8)
#pragma unroll
      for (int h = 0; h < 2; ++h) {{
        const float e0 = exp2f(s[2 * t + h][0] - n0), e1 = exp2f(s[2 * t + h][1] - n0);
        const float e2 = exp2f(s[2 * t + h][2] - n1), e3 = exp2f(s[2 * t + h][3] - n1);
        l0 += e0 + e1; l1 += e2 + e3;
        p[2 * h] = tefuse_pack_half2(e0, e1);
        p[2 * h + 1] = tefuse_pack_half2(e2, e3);
      }}
#pragma unroll
      for (int n = 0; n < {dv // 16}; ++n) {{
        unsigned int b[4];  // keys +0..7, +8..15 of columns n*16 + 0..7 (b[0], b[1]), + 8..15 (b[2], b[3])
        tefuse_ldsm_x4_t(b, v + (key0 + t * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * vs + n * 16 + (lane >> 4) * 8);
        tefuse_mma_16816(acc[2 * n], p, b[0], b[1]);
        tefuse_mma_16816(acc[2 * n + 1], p, b[2], b[3]);
      }}
    }}
  }}
"""


def device_source(d: int, dv: int, lk_pad: int, lk: int, scale_log2: float, keys: int = 16, *,
                  bias_rows: int = 0, clip: float = 0.0) -> str:
    """CUDA source of the device function (TVM's cuda func_call puts it before the kernel): steps
    of `keys` keys, then 16 at a time for the padded keys left."""
    if d % 16 or dv % 16 or lk_pad % 16 or not 0 < lk <= lk_pad or keys not in KEY_STEPS or bias_rows not in BIAS_ROWS:
        raise ValueError(f"flash core: d {d}, dv {dv}, padded keys {lk_pad} must be multiples of 16, "
                         f"0 < keys {lk} <= padded, steps of {KEY_STEPS} keys, not {keys}, bias rows of "
                         f"{BIAS_ROWS}, not {bias_rows}")
    name = func_name(d, dv, lk_pad, lk, scale_log2, keys, bias_rows=bias_rows, clip=clip)
    full, rest = divmod(lk_pad, keys)
    steps = ""
    if full:
        steps += (f"  for (int kb = 0; kb < {full}; ++kb)\n"
                  + _step(keys // 16, f"kb * {keys}", d, dv, lk, scale_log2, bias_rows, clip))
    if rest:
        steps += (f"  for (int kb = 0; kb < {rest // 16}; ++kb)\n"
                  + _step(1, f"{full * keys} + kb * 16", d, dv, lk, scale_log2, bias_rows, clip))
    bias_args = ", const float* b, int bs" if bias_rows else ""
    return f"""
#ifndef TEFUSE_FLASH_HELPERS
#define TEFUSE_FLASH_HELPERS
#define TEFUSE_NEG_INF __int_as_float(0xff800000u)
#define TEFUSE_LOWEST (-3.402823466e38f)
__device__ __forceinline__ void tefuse_ldsm_x4(unsigned int* r, const void* p) {{
  unsigned int a = (unsigned int)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%0, %1, %2, %3}}, [%4];\\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}}
__device__ __forceinline__ void tefuse_ldsm_x4_t(unsigned int* r, const void* p) {{
  unsigned int a = (unsigned int)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{%0, %1, %2, %3}}, [%4];\\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}}
__device__ __forceinline__ void tefuse_mma_16816(float* c, const unsigned int* a, unsigned int b0, unsigned int b1) {{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}}
__device__ __forceinline__ unsigned int tefuse_pack_half2(float lo, float hi) {{
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<unsigned int*>(&h);
}}
#endif
__device__ __forceinline__ void {name}(float* o, const half* q, const half* k, const half* v,
                                       int qs, int ks, int vs, int os{bias_args}) {{
  const int lane = threadIdx.x & 31, group = lane >> 2, quad = lane & 3;
  unsigned int qf[{d // 16}][4];
#pragma unroll
  for (int c = 0; c < {d // 16}; ++c)
    tefuse_ldsm_x4(qf[c], q + (lane & 15) * qs + c * 16 + (lane >> 4) * 8);
  float acc[{dv // 8}][4];
#pragma unroll
  for (int t = 0; t < {dv // 8}; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
  float m0 = TEFUSE_NEG_INF, m1 = TEFUSE_NEG_INF, l0 = 0.f, l1 = 0.f;
{steps}  l0 += __shfl_xor_sync(0xffffffff, l0, 1); l0 += __shfl_xor_sync(0xffffffff, l0, 2);
  l1 += __shfl_xor_sync(0xffffffff, l1, 1); l1 += __shfl_xor_sync(0xffffffff, l1, 2);
  const float i0 = 1.f / l0, i1 = 1.f / l1;
  // TVM's shared-memory merge may place the context tile over q, k, v or the bias (their last use
  // is this call, where the tile's first is): every warp of the block is done reading them before any
  // writes (every thread of the block calls this function, unpredicated)
  __syncthreads();
#pragma unroll
  for (int t = 0; t < {dv // 8}; ++t) {{
    float* r = o + group * os + t * 8 + quad * 2;
    r[0] = acc[t][0] * i0; r[1] = acc[t][1] * i0;
    r[8 * os] = acc[t][2] * i1; r[8 * os + 1] = acc[t][3] * i1;
  }}
}}
"""


def _intrin(d: int, dv: int, lk_pad: int, lk: int, alpha: float, scope: str, keys: int, bias_rows: int, clip: float):
    if bias_rows:
        return _biased_intrin(d, dv, lk_pad, lk, alpha, scope, keys, bias_rows, clip)
    from tvm.backend.cuda.op import cuda_func_call

    name, src = func_name(d, dv, lk_pad, lk, alpha * LOG2E, keys), device_source(d, dv, lk_pad, lk, alpha * LOG2E, keys)

    @T.prim_func(s_tir=True)
    def desc(q: T.handle, k: T.handle, v: T.handle, o: T.handle) -> None:
        Q = T.match_buffer(q, (16, d), "float16", offset_factor=1, scope=scope)
        K = T.match_buffer(k, (lk_pad, d), "float16", offset_factor=1, scope=scope)
        V = T.match_buffer(v, (lk_pad, dv), "float16", offset_factor=1, scope=scope)
        O = T.match_buffer(o, (16, dv), "float32", offset_factor=1, scope=scope)
        with T.sblock("root"):
            T.reads(Q[0:16, 0:d], K[0:lk_pad, 0:d], V[0:lk_pad, 0:dv])
            T.writes(O[0:16, 0:dv])
            for i, j in T.grid(16, dv):
                with T.sblock("flash"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(Q[vi, 0:d], K[0:lk_pad, 0:d], V[0:lk_pad, vj])
                    T.writes(O[vi, vj])
                    O[vi, vj] = T.Cast("float32", Q[vi, 0]) + T.Cast("float32", K[0, 0]) + T.Cast("float32", V[0, vj])

    @T.prim_func(s_tir=True)
    def impl(q: T.handle, k: T.handle, v: T.handle, o: T.handle) -> None:
        qs, ks, vs, os = T.int32(), T.int32(), T.int32(), T.int32()
        Q = T.match_buffer(q, (16, d), "float16", offset_factor=1, scope=scope, strides=[qs, 1])
        K = T.match_buffer(k, (lk_pad, d), "float16", offset_factor=1, scope=scope, strides=[ks, 1])
        V = T.match_buffer(v, (lk_pad, dv), "float16", offset_factor=1, scope=scope, strides=[vs, 1])
        O = T.match_buffer(o, (16, dv), "float32", offset_factor=1, scope=scope, strides=[os, 1])
        with T.sblock("root"):
            T.reads(Q[0:16, 0:d], K[0:lk_pad, 0:d], V[0:lk_pad, 0:dv])
            T.writes(O[0:16, 0:dv])
            for tx in T.thread_binding(0, WARP, "threadIdx.x"):
                T.evaluate(cuda_func_call(name, O.access_ptr("w"), Q.access_ptr("r"), K.access_ptr("r"),
                                          V.access_ptr("r"), qs, ks, vs, os, source_code=src))

    return desc, impl


def _biased_intrin(d: int, dv: int, lk_pad: int, lk: int, alpha: float, scope: str, keys: int, bias_rows: int,
                   clip: float):
    """`_intrin` with the bias tile B: the warp's 16 rows of it, or its one row of keys."""
    from tvm.backend.cuda.op import cuda_func_call

    kw = dict(bias_rows=bias_rows, clip=clip)
    name, src = func_name(d, dv, lk_pad, lk, alpha * LOG2E, keys, **kw), device_source(d, dv, lk_pad, lk, alpha * LOG2E, keys, **kw)
    rows = bias_rows

    step = 1 if rows > 1 else 0  # the row of B a query reads: its own, or the key mask's one (vi * 0 folds to 0)

    @T.prim_func(s_tir=True)
    def desc(q: T.handle, k: T.handle, v: T.handle, b: T.handle, o: T.handle) -> None:
        Q = T.match_buffer(q, (16, d), "float16", offset_factor=1, scope=scope)
        K = T.match_buffer(k, (lk_pad, d), "float16", offset_factor=1, scope=scope)
        V = T.match_buffer(v, (lk_pad, dv), "float16", offset_factor=1, scope=scope)
        B = T.match_buffer(b, (rows, lk_pad), "float32", offset_factor=1, scope=scope)
        O = T.match_buffer(o, (16, dv), "float32", offset_factor=1, scope=scope)
        with T.sblock("root"):
            T.reads(Q[0:16, 0:d], K[0:lk_pad, 0:d], V[0:lk_pad, 0:dv], B[0:rows, 0:lk_pad])
            T.writes(O[0:16, 0:dv])
            for i, j in T.grid(16, dv):
                with T.sblock("flash"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(Q[vi, 0:d], K[0:lk_pad, 0:d], V[0:lk_pad, vj], B[vi * step, 0:lk_pad])
                    T.writes(O[vi, vj])
                    O[vi, vj] = (T.Cast("float32", Q[vi, 0]) + T.Cast("float32", K[0, 0]) + T.Cast("float32", V[0, vj])
                                 + B[vi * step, 0])

    @T.prim_func(s_tir=True)
    def impl(q: T.handle, k: T.handle, v: T.handle, b: T.handle, o: T.handle) -> None:
        qs, ks, vs, bs, os = T.int32(), T.int32(), T.int32(), T.int32(), T.int32()
        Q = T.match_buffer(q, (16, d), "float16", offset_factor=1, scope=scope, strides=[qs, 1])
        K = T.match_buffer(k, (lk_pad, d), "float16", offset_factor=1, scope=scope, strides=[ks, 1])
        V = T.match_buffer(v, (lk_pad, dv), "float16", offset_factor=1, scope=scope, strides=[vs, 1])
        B = T.match_buffer(b, (rows, lk_pad), "float32", offset_factor=1, scope=scope, strides=[bs, 1])
        O = T.match_buffer(o, (16, dv), "float32", offset_factor=1, scope=scope, strides=[os, 1])
        with T.sblock("root"):
            T.reads(Q[0:16, 0:d], K[0:lk_pad, 0:d], V[0:lk_pad, 0:dv], B[0:rows, 0:lk_pad])
            T.writes(O[0:16, 0:dv])
            for tx in T.thread_binding(0, WARP, "threadIdx.x"):
                T.evaluate(cuda_func_call(name, O.access_ptr("w"), Q.access_ptr("r"), K.access_ptr("r"),
                                          V.access_ptr("r"), qs, ks, vs, os, B.access_ptr("r"), bs,
                                          source_code=src))

    return desc, impl


def placeholder_value(q, k, v, b=None):
    """The placeholder block's value (attention_flash.py writes it; `desc` above spells the same):
    one element of each operand, so the block reads all of them; the tensorization replaces it
    before anything computes it."""
    value = tirx.Cast("float32", q) + tirx.Cast("float32", k) + tirx.Cast("float32", v)
    return value if b is None else value + b


def flash_intrin(d: int, dv: int, lk_pad: int, lk: int, alpha: float, scope: str = "shared.dyn",
                 keys: int = 16, *, bias_rows: int = 0, clip: float = 0.0) -> str:
    """Register (once) and name the intrinsic for one warp's 16 rows at these extents, `keys`
    keys a step, with the bias tile of `bias_rows` rows (0: none)."""
    kw = dict(bias_rows=bias_rows, clip=clip)
    name = f"{func_name(d, dv, lk_pad, lk, alpha * LOG2E, keys, **kw)}_{scope.replace('.', '_')}"
    return register_once(name, lambda: _intrin(d, dv, lk_pad, lk, alpha, scope, keys, bias_rows, clip))
