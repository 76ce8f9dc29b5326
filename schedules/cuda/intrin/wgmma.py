"""Hopper wgmma tensor intrinsic (sm_90a): one warp's 16 x N x BK slice of a warpgroup's
wgmma.mma_async, operands read by the tensor cores straight from shared memory, float32
accumulators in registers (int32 for int8). fp16/bf16: m64nNk16, BK = 64; tf32 (float32
operands): m64nNk8, BK = 32; int8 (a QDQ model's anchors, graph/qdq.py): m64nNk32 s8 into s32,
BK = 128; float8 (uint8 codes of e4m3 / e5m2, ops/codes.py): m64nNk32 e4m3/e5m2 into f32,
BK = 128. Whatever the type a tile row is 128 bytes and one instruction takes 32 bytes of it, four
instructions a row, so the swizzle, descriptors and copies are the same bytes for every type. tf32 wgmma reads a float32's top 19 bits (truncation); the op rounds them to
nearest (ops.value.round_tf32) and truncation instead drifted ResNet-50's output by 2% (H100). The copies cannot round (cp.async moves bytes), so the schedule streams the raw
float32 operands (`gemm/wgmma.defer_tf32_rounding`) and the device function rounds the
landed tiles in shared memory (cvt.rna.tf32.f32) before the tensor cores read them: the kernel
multiplies exactly the operands llvm does.

Layouts (PTX ISA 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):

- A [rows][BK] and B [N][BK] (both K-major) sit in shared memory in the 128-byte swizzle: row r
  is 128 bytes, its 16-byte chunk c stored at chunk c ^ (r % 8) (applied to the shared tiles by
  a layout transform, so the global -> shared copies write them that way), in 8-row atoms of
  1024 bytes; the tiles start on 1024 bytes. The matrix descriptor: start
  address >> 4 (bits 0-13), leading byte offset (unused for swizzled K-major; 1), stride byte
  offset 1024 >> 4 (bits 32-45), swizzle mode 1 = 128B (bits 62-63). The k-th instruction of
  the row is the same descriptor with the start address 32*k bytes on (the swizzle is
  applied by the hardware on the address bits, as CUTLASS / DeepGEMM do).
- The accumulator: warp w of the warpgroup holds rows 16w..16w+15 of the 64 x N tile, per lane
  d[4j + 0/1] at (lane/4, 8j + 2(lane%4) + 0/1) and d[4j + 2/3] eight rows down; that is TVM's
  16x16 mma accumulator layout (shared_16x16_to_ldmatrix_32x8_layout) for each 16-column
  fragment, fragments one after another: a warp-scope buffer [N/16, 32, 8] is wgmma's d[N/2].
  So the warp keeps TVM's mma fill/store intrinsics; only the product is new.

All four warps of a warpgroup call the device function together (wgmma is warpgroup-collective);
each passes its own A rows, and the function steps back to the warpgroup's first row. Every
thread of the block calls it at the same point of the k loop (no divergence: tiles are padded).
Synchronisation: `fence.proxy.async.shared::cta` + a block barrier (the tiles came in by
cp.async, the generic proxy; wgmma reads through the async proxy), wgmma.fence, the four wgmma,
commit, then `wait_group pending`. With pending = 0 the tensor cores idle from the wait to the
next step's wgmma (the barrier, the next copies' issue). With pending = 1 (a pipelined k loop
whose copies come after the product in its body, `gemm/wgmma.py`), this step's wgmma run on
while the previous step's are waited for, then a second barrier: every warp's previous wgmma has
read its tiles before any thread's next copy overwrites them (CUTLASS's mainloop keeps one
wgmma batch in flight the same way). The accumulators are read only after `wait_group 0`
(`store_intrin`, the accumulator store's first statement).
"""
from __future__ import annotations

import re
from typing import Optional

from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T

from ....ops.codes import PRODUCT_CODES
from ....ops.lowbit import decode
from ...common import dtype_bytes
from ...intrin import register_once

WARP = 32
# operand types: a dtype, or the float8 format of uint8 codes (ops/codes.py), read as such here
PTX_TYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32", "int8": "s8",
            "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
CODE_STORAGE = dict.fromkeys(PRODUCT_CODES, "uint8")
# the accumulators' type, float32 unless named; PTX spells it as the instruction's dtype
ACC_DTYPE = {"int8": "int32"}
PTX_ACC = {"float32": "f32", "int32": "s32"}


def storage(in_dtype: str) -> str:
    """The tiles' dtype for an operand type: float8 codes are bytes."""
    return CODE_STORAGE.get(in_dtype, in_dtype)


def acc_dtype(in_dtype: str) -> str:
    """The type wgmma accumulates `in_dtype` products in."""
    return ACC_DTYPE.get(in_dtype, "float32")
N_CHOICES = tuple(range(16, 257, 16))  # the per-warp tile is 16 x N; wgmma takes N % 8 == 0 up to 256


def xor8(a, b):
    """a ^ b of two values in [0, 8) (the 16-byte chunk of a 128-byte row, the row in its atom),
    bit by bit in integer arithmetic: TVM's bound analysis gives tirx.bitwise_xor no range, and
    transform_layout needs one to size the buffer."""
    return (a + b) % 2 + (a // 2 + b // 2) % 2 * 2 + (a // 4 + b // 4) % 2 * 4


def chunk_elems(dtype: str = "float16") -> int:
    """Elements in a 16-byte chunk (a cp.async vector): 16 of one byte, 8 of 16 bits, 4 of 32."""
    return 16 // dtype_bytes(dtype)


def bk_of(dtype: str = "float16") -> int:
    """The tile depth: one 128-byte swizzle row (128 one-byte values, 64 fp16/bf16, 32 float32)."""
    return 8 * chunk_elems(dtype)


def k_step(dtype: str = "float16") -> int:
    """K of one wgmma instruction (32 bytes of a row): k32 for one-byte types, k16 for 16-bit
    ones, k8 for tf32."""
    return bk_of(dtype) // 4


def swizzle_dims(r, k, dtype: str = "float16"):
    """Where element (r, k) of a K-major tile [rows][BK * kt] lives, as the dims
    (k // BK, r // 8, r % 8, chunk, k % E) (E elements a 16-byte chunk): 8-row atoms of
    8 x 128 bytes, the chunk k % BK // E stored at chunk (k % BK // E) ^ (r % 8). Flattened,
    that is the 128-byte swizzle of a row-major [rows][BK] tile; kept as dims so that the
    tensorized product reads a warp's rows at an offset in dim r // 8 alone (a tensorize
    description can match that)."""
    e, bk = chunk_elems(dtype), bk_of(dtype)
    return k // bk, r // 8, r % 8, xor8(k % bk // e, r % 8), k % e


def swizzle_index_map(dtype: str = "float16"):
    """transform_layout map for a shared tile [s, rows, k] (K-major): a function, so that
    transform_layout maps in the copy block's index type (int32 unless the kernel's indices
    are 64-bit); an int64 map over an int32 kernel with a run-time M would size the tile by
    a cast TVM cannot bound."""
    return lambda s, r, k: (s, *swizzle_dims(r, k, dtype))


def func_name(n: int, in_dtype: str, stages: int = 0, promote: Optional[bool] = None) -> str:
    """The device function's name; `promote`: see device_source."""
    name = f"tefuse_wgmma_m64n{n}k{k_step(storage(in_dtype))}x4_{PTX_TYPE[in_dtype]}" + (f"_s{stages}" if stages else "")
    if not _promoted(in_dtype, promote):
        return name + _fast_suffix(in_dtype, promote)
    return name + ROW_SUM_SUFFIX if stages else name


DESC_SOURCE = """
#ifndef TEFUSE_WGMMA_DESC
#define TEFUSE_WGMMA_DESC
__device__ __forceinline__ unsigned long long tefuse_wgmma_desc_sw128(unsigned int addr) {
  unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);
  d |= 1ull << 16;                          // leading byte offset (unused: swizzled K-major)
  d |= (unsigned long long)(1024 >> 4) << 32;  // stride byte offset: 8 rows x 128 B
  d |= 1ull << 62;                          // 128-byte swizzle
  return d;
}
#endif
"""


def _reg(in_dtype: str) -> str:
    """The inline-asm constraint of an accumulator register: "f" (float32) or "r" (int32)."""
    return "r" if acc_dtype(in_dtype) == "int32" else "f"


def register_fences(n: int, indent: str = "  ", in_dtype: str = "float16", acc: str = "d", offset: int = 0) -> str:
    """Empty asm statements that pin this thread's n / 2 accumulators `acc`[offset:] in registers
    around the wgmma (so the compiler keeps them where the instructions write them)."""
    c = _reg(in_dtype)
    return "\n".join(f'{indent}asm volatile("" : "+{c}"({acc}[{offset + i}]) :: "memory");' for i in range(n // 2))


FAST_SUFFIX = "_fast"  # a float8 product summed whole in the tensor cores' accumulator


def _promoted(in_dtype: str, promote: Optional[bool]) -> bool:
    """Whether rows are summed apart: `promote`, else as the type `promotes`."""
    return promotes(in_dtype) if promote is None else promote and promotes(in_dtype)


def _fast_suffix(in_dtype: str, promote: Optional[bool]) -> str:
    """FAST_SUFFIX for a type that promotes, built not to: its names apart from the promoted ones."""
    return FAST_SUFFIX if promotes(in_dtype) and not _promoted(in_dtype, promote) else ""


def promotes(in_dtype: str) -> bool:
    """Whether a tile row's products are summed apart and then added to the float32
    accumulators: float8. Hopper's fp8 wgmma adds its products with about 14 bits of mantissa
    (DeepSeek-V3's measurement), so summing a whole reduction there loses precision as K grows;
    promoting each 128-deep row, as CUTLASS's default FP8 GEMM and cuBLASLt without fast
    accumulation do, bounds that to one row's sum."""
    return in_dtype in CODE_STORAGE


ROW_SUM_SUFFIX = "_rowsum"
_ROW_SUM_NAME = re.compile(rf"^tefuse_wgmma_m64n(\d+)k\d+x4_\w+_s\d+{ROW_SUM_SUFFIX}$")


def row_sum_lanes(name: str) -> Optional[int]:
    """The floats a thread holds for the row sums of device function `name` (two rows' sums of
    n / 2 each: n), or None where `name` keeps none: the functions that sum promoted rows with
    one batch left in flight take them from the kernel (passes/row_sums.py allocates them)."""
    m = _ROW_SUM_NAME.match(name)
    return int(m.group(1)) if m else None


def row_sum_drain(n: int, half: int) -> tuple[str, str]:
    """Name and source of the function that ends a k loop of promoted rows with a batch in flight:
    wait for the last row, add its sum (in t[] half `half`) to d[]."""
    h = n // 2
    name = f"tefuse_wgmma_rowsum_drain_n{n}_h{half}"
    return name, f"""
#ifndef TEFUSE_WGMMA_ROWSUM_DRAIN_N{n}_H{half}
#define TEFUSE_WGMMA_ROWSUM_DRAIN_N{n}_H{half}
__device__ __forceinline__ void {name}(float* d, float* t) {{
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
{_add_half(n, half * h)}
}}
#endif
"""


def _add_half(n: int, offset: int) -> str:
    """d[] += the float32 row sum in t[offset:] (n / 2 of them), its registers pinned first."""
    return f"""{register_fences(n, "  ", acc="t", offset=offset)}
#pragma unroll
  for (int i = 0; i < {n // 2}; ++i) d[i] += t[{offset} + i];"""


def row_sum_init(n: int) -> tuple[str, str]:
    """Name and source of the function that readies the row sums before the k loop: half 1 zero
    (the first row, into half 0, adds it)."""
    name = f"tefuse_wgmma_rowsum_init_n{n}"
    return name, f"""
#ifndef TEFUSE_WGMMA_ROWSUM_INIT_N{n}
#define TEFUSE_WGMMA_ROWSUM_INIT_N{n}
__device__ __forceinline__ void {name}(float* t) {{
#pragma unroll
  for (int i = {n // 2}; i < {n}; ++i) t[i] = 0.0f;
}}
#endif
"""


def _after_scale_d(in_dtype: str) -> str:
    """wgmma's immediate operands after scale-d: 16-bit types take imm-scale-a/b (1) and
    imm-trans-a/b (0: K-major); tf32 and fp8 read K-major only and take the scales alone;
    integer wgmma takes neither."""
    if in_dtype == "int8":
        return ""
    return ", 1, 1" if in_dtype == "float32" or in_dtype in CODE_STORAGE else ", 1, 1, 0, 0"


def wgmma_row(n: int, in_dtype: str, indent: str = "  ", acc_name: str = "d", offset: int = 0,
              fresh: bool = False) -> str:
    """CUDA statements for one 128-byte tile row of wgmma on descriptors `da`, `db` (four k
    steps, the start address 32 bytes on each) into `acc_name`[offset:]: wgmma.fence, the four,
    commit. fresh: the first instruction overwrites the accumulators (scale-d 0) instead of
    adding to them, so a row summed apart needs no zeroing."""
    t, ks, nreg = PTX_TYPE[in_dtype], k_step(storage(in_dtype)), n // 2
    acc = PTX_ACC[acc_dtype(in_dtype)]
    tail = _after_scale_d(in_dtype)
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"+{_reg(in_dtype)}"({acc_name}[{offset + i}])' for i in range(nreg))
    scale_d, kk_in = (f"%{nreg + 2}", ', "r"(kk)') if fresh else ("1", "")
    body = f"""asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
#pragma unroll
for (int kk = 0; kk < 4; ++kk) {{
  asm volatile(
    "{{\\n.reg .pred p;\\nsetp.ne.b32 p, {scale_d}, 0;\\n"
    "wgmma.mma_async.sync.aligned.m64n{n}k{ks}.{acc}.{t}.{t} "
    "{{{regs}}}, %{nreg}, %{nreg + 1}, p{tail};\\n}}\\n"
    : {outs}
    : "l"(da + 2 * kk), "l"(db + 2 * kk){kk_in});
}}
asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");"""
    return "\n".join(indent + ln if not ln.startswith("#") else ln for ln in body.split("\n")) + "\n"


def device_source(n: int, in_dtype: str, stages: int = 0, promote: Optional[bool] = None) -> str:
    """CUDA source of the device function the intrinsic calls (TVM's cuda func_call puts it
    before the kernel): float* d (N/2 accumulators of this thread), A and B tile pointers.
    stages: 0, the batch waited for before returning; else the k loop's pipeline stages (>= 3),
    one batch left in flight (see the module docstring). For rows summed apart with a batch in
    flight (`row_sum_lanes`) the source defines the function's variants instead, which
    passes/row_sums.py calls (`row_sum_variant`). promote: False sums a float8 product's whole
    reduction in the tensor cores' accumulator, as an int8 one (cuBLASLt's fast accumulation:
    ops/codes.fast_accumulation); None, as the type `promotes`."""
    if stages in (1, 2) or stages < 0:
        raise ValueError(f"wgmma: a batch stays in flight only in a pipeline of 3 or more stages, not {stages}")
    pending = 1 if stages else 0
    d_type = "int" if acc_dtype(in_dtype) == "int32" else "float"
    name = func_name(n, in_dtype, stages, promote)
    # pending 1: every warp's previous batch done (it read the tiles the next copies overwrite)
    after = "\n  __syncthreads();" if pending else ""
    # pending 1, the copies after the product in the loop body: of the stages - 1 copy groups in
    # flight, this step's is the oldest (TVM's pipeline counts its wait for the other order)
    landed = f'  asm volatile("cp.async.wait_group {stages - 2};\\n" ::: "memory");\n' if pending else ""
    if pending and in_dtype == "float32":  # the rounding reads tiles other threads copied
        landed += "  __syncthreads();\n"
    rounding = _TF32_ROUND.format(n8=n * 8) if in_dtype == "float32" else ""
    helpers = _TF32_HELPERS if in_dtype == "float32" else ""

    def function(fname: str, params: str, product: str) -> str:
        return f"""__device__ __forceinline__ void {fname}({d_type}* d, {params}const void* a_tile, const void* b_tile) {{
  unsigned int a_addr = (unsigned int)__cvta_generic_to_shared(a_tile);
  unsigned int b_addr = (unsigned int)__cvta_generic_to_shared(b_tile);
  // this warp's A rows start 16 * (warp % 4) rows (of 128 B) into its warpgroup's 64
  a_addr -= (((threadIdx.y * blockDim.x + threadIdx.x) >> 5) & 3) * (16 * 128);
{landed}{rounding}  // the tiles came in by cp.async (generic proxy); wgmma reads them through the async proxy
  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
  __syncthreads();
  unsigned long long da = tefuse_wgmma_desc_sw128(a_addr);
  unsigned long long db = tefuse_wgmma_desc_sw128(b_addr);
{product}}}
"""

    if row_sum_lanes(name):
        # both variants in each one's source (TVM puts a function's source in once a name)
        guard = name.upper()
        functions = "".join(function(row_sum_variant(name, h, own), "float* t, ", _row_sum(n, in_dtype, h, own) + after + "\n")
                            for h in (0, 1) for own in (False, True))
        functions = f"#ifndef {guard}\n#define {guard}\n{functions}#endif\n"
    else:
        functions = function(name, "", _product(n, in_dtype, pending, after, _promoted(in_dtype, promote)))
    return f"""{helpers}
{DESC_SOURCE}{functions}"""


def _product(n: int, in_dtype: str, pending: int, after: str, promoted: bool) -> str:
    """The device function's product: the row's wgmma into d[], waited for down to `pending`
    batches; rows `promoted` (pending 0), summed apart into t[] (its first instruction
    overwrites, `wgmma_row`'s fresh), waited for and added to d[]."""
    if not promoted:
        fence_regs = register_fences(n, in_dtype=in_dtype)
        return f"""{fence_regs}
{wgmma_row(n, in_dtype)}  asm volatile("wgmma.wait_group.sync.aligned {pending};\\n" ::: "memory");{after}
{fence_regs}
"""
    return f"""  float t[{n // 2}];
{wgmma_row(n, in_dtype, acc_name="t", fresh=True)}  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
{register_fences(n, in_dtype=in_dtype, acc="t")}
#pragma unroll
  for (int i = 0; i < {n // 2}; ++i) d[i] += t[i];
"""


def row_sum_variant(name: str, half: int, own: bool) -> str:
    """The variant of row-sum function `name` that sums its row into half `half` of t[], and
    with `own` waits for that row before returning."""
    return f"{name}_h{half}" + ("_w" if own else "")


def _row_sum(n: int, in_dtype: str, half: int, own: bool) -> str:
    """A row summed apart with a batch in flight (passes/row_sums.py calls the variants in turn):
    the row into t[] half `half` while the other half, the previous row's sum, is waited for
    (`wait_group 1`) and added to d[]. `own`: then wait for this row too (`wait_group 0`), which
    the last call of a loop iteration does: ptxas serializes every wgmma of a loop that reads a
    batch's accumulators after its back edge (C7514), though `wait_group 1` retired that batch."""
    h = n // 2
    into, done = half * h, (1 - half) * h
    wait_own = '\n  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");' if own else ""
    return f"""{register_fences(n, "  ", in_dtype, "t", into)}
{wgmma_row(n, in_dtype, acc_name="t", offset=into, fresh=True)}  asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");
{_add_half(n, done)}{wait_own}"""


# tf32: round the landed tiles to TF32 in place (every thread of the block is here, after the
# barrier that follows cp.async's wait): a warpgroup its own 64 A rows (8 KB, 4 float4 a
# thread), the block B's n rows together; the fence and barrier below publish the writes
_TF32_HELPERS = """#ifndef TEFUSE_ROUND_TF32X4
#define TEFUSE_ROUND_TF32X4
__device__ __forceinline__ float tefuse_rna_tf32(float x) {
  unsigned int u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return __uint_as_float(u);
}
__device__ __forceinline__ void tefuse_round_tf32x4(float4* p) {
  float4 v = *p;
  v.x = tefuse_rna_tf32(v.x); v.y = tefuse_rna_tf32(v.y);
  v.z = tefuse_rna_tf32(v.z); v.w = tefuse_rna_tf32(v.w);
  *p = v;
}
#endif
"""
_TF32_ROUND = """  {{
    const unsigned int tid = threadIdx.y * blockDim.x + threadIdx.x;
    float4* a4 = (float4*)((const char*)a_tile - ((tid >> 5) & 3) * (16 * 128));
#pragma unroll
    for (int i = 0; i < 4; ++i) tefuse_round_tf32x4(a4 + (tid & 127) + 128 * i);
    float4* b4 = (float4*)b_tile;
    for (unsigned int i = tid; i < {n8}; i += blockDim.x * blockDim.y) tefuse_round_tf32x4(b4 + i);
  }}
"""


def _lay_c(i, j):
    """(lane, element) of C[i, j] in a 16x16 accumulator fragment (TVM's mma layout)."""
    return 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + (i // 8) * 2 + j % 2


WAIT_ALL = "tefuse_wgmma_wait_all"
WAIT_ALL_SOURCE = """
#ifndef TEFUSE_WGMMA_WAIT_ALL
#define TEFUSE_WGMMA_WAIT_ALL
__device__ __forceinline__ void tefuse_wgmma_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
}
#endif
"""


def _store_impl(scope: str, dtype: str = "float32", drain: bool = True):
    """TVM's 16x16 mma accumulator store, its two adjacent columns (elements 2p, 2p+1 of a lane)
    one 2-lane vector store: half the shared-memory stores of TVM's element loop (64 -> 32 a
    thread of a 64x128 tile; 16-bit staging, narrow_staging.py, stores 4 bytes a pair, float32 8).
    With `drain`, after `wait_group 0`: with a wgmma batch left in flight by the k loop, the
    accumulators are final only then."""
    from tvm.backend.cuda.op import cuda_func_call

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, c: T.handle) -> None:
        s0, s1 = T.int32(), T.int32()
        C_warp = T.match_buffer(a, (WARP, 8), dtype, scope="warp", offset_factor=1)
        C = T.match_buffer(c, (16, 16), dtype, strides=[s0, s1], scope=scope, offset_factor=1)
        with T.sblock("root"):
            T.reads(C_warp[0:WARP, 0:8])
            T.writes(C[0:16, 0:16])
            for tx in T.thread_binding(0, WARP, "threadIdx.x"):
                if drain:
                    T.evaluate(cuda_func_call(WAIT_ALL, source_code=WAIT_ALL_SOURCE))
                for pair in range(4):
                    for e in T.vectorized(2):
                        C[8 * (pair % 2) + tx // 4, 8 * (pair // 2) + tx % 4 * 2 + e] = C_warp[tx, 2 * pair + e]

    return impl


def store_intrin(mma_store: str, scope: str = "shared.dyn", dtype: str = "float32", drain: bool = True) -> str:
    """Register (once) and name the accumulator store: TVM's `mma_store` intrinsic's description
    (of `dtype` accumulators), `_store_impl` as its implementation; with `drain`, it first waits
    for the wgmma batch a pipelined k loop left in flight."""
    name = f"tefuse_wgmma_{mma_store}" if drain else f"tefuse_wgmma_nowait_{mma_store}"
    return register_once(name, lambda: (TensorIntrin.get(mma_store).desc, _store_impl(scope, dtype, drain)))


def _intrin(n: int, in_dtype: str, scope: str, stages: int = 0, promote: Optional[bool] = None):
    """desc: C[16 x n] += A[16 x BK] * B[n x BK]^T with A and B in their swizzled dims
    (`swizzle_dims`: A (2, 8, 8, E), B (n/8, 8, 8, E)) and C in the warp's mma fragments
    [n/16, 32, 8]; impl: the device function, given this thread's accumulators and the address
    of the warp's first A row and of B's first row (both at chunk 0 of their atom's row)."""
    from tvm.backend.cuda.op import cuda_func_call

    nf, n8 = n // 16, n // 8
    buf = storage(in_dtype)
    e, bk = chunk_elems(buf), bk_of(buf)
    name, src = func_name(n, in_dtype, stages, promote), device_source(n, in_dtype, stages, promote)
    acc = acc_dtype(in_dtype)
    if in_dtype == "float32":  # the GEMM block multiplies float32 operands as they are
        def prod(a, b):
            return a * b
    elif in_dtype in CODE_STORAGE:  # each code decoded, as ops/codes.py's products compute
        def prod(a, b):
            return decode(in_dtype, a) * decode(in_dtype, b)
    else:  # each operand widened to the accumulator's type, as the op computes it
        def prod(a, b):
            return T.Cast(acc, a) * T.Cast(acc, b)

    @T.prim_func(s_tir=True)
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (2, 8, 8, e), buf, align=64, offset_factor=1, scope=scope)
        B = T.match_buffer(b, (n8, 8, 8, e), buf, align=64, offset_factor=1, scope=scope)
        C = T.match_buffer(c, (nf, WARP, 8), acc, align=64, offset_factor=1, scope="warp")
        with T.sblock("root"):
            T.reads(C[0:nf, 0:WARP, 0:8], A[0:2, 0:8, 0:8, 0:e], B[0:n8, 0:8, 0:8, 0:e])
            T.writes(C[0:nf, 0:WARP, 0:8])
            for i, j, k in T.grid(16, n, bk):
                with T.sblock("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    tc, lc = T.meta_var(_lay_c(vi, vj % 16))
                    _ak, a0, a1, a2, a3 = T.meta_var(swizzle_dims(vi, vk, buf))
                    _bk, b0, b1, b2, b3 = T.meta_var(swizzle_dims(vj, vk, buf))
                    T.reads(C[vj // 16, tc, lc], A[a0, a1, a2, a3], B[b0, b1, b2, b3])
                    T.writes(C[vj // 16, tc, lc])
                    C[vj // 16, tc, lc] = C[vj // 16, tc, lc] + prod(A[a0, a1, a2, a3], B[b0, b1, b2, b3])

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (2, 8, 8, e), buf, align=64, offset_factor=1, scope=scope,
                           strides=[T.int32(), T.int32(), T.int32(), T.int32()])
        B = T.match_buffer(b, (n8, 8, 8, e), buf, align=64, offset_factor=1, scope=scope,
                           strides=[T.int32(), T.int32(), T.int32(), T.int32()])
        C = T.match_buffer(c, (nf, WARP, 8), acc, align=64, offset_factor=1, scope="warp")
        with T.sblock("root"):
            T.reads(C[0:nf, 0:WARP, 0:8], A[0:2, 0:8, 0:8, 0:e], B[0:n8, 0:8, 0:8, 0:e])
            T.writes(C[0:nf, 0:WARP, 0:8])
            for tx in T.thread_binding(0, WARP, "threadIdx.x"):
                T.evaluate(cuda_func_call(name, T.address_of(C[0, tx, 0]), A.access_ptr("r"),
                                          B.access_ptr("r"), source_code=src))

    return desc, impl


def wgmma_intrin(n: int, in_dtype: str, scope: str = "shared.dyn", stages: int = 0,
                 promote: Optional[bool] = None) -> str:
    """Register (once) and name the intrinsic for a 16 x n x BK per-warp product (`stages`,
    `promote`: see device_source)."""
    if in_dtype not in PTX_TYPE:
        raise ValueError(f"wgmma intrinsics here take {', '.join(PTX_TYPE)}, not {in_dtype}")
    if n not in N_CHOICES:
        raise ValueError(f"wgmma warp tile N must be a multiple of 16 up to 256, not {n}")
    name = f"tefuse_wgmma_16x{n}x{bk_of(storage(in_dtype))}_{PTX_TYPE[in_dtype]}_{scope.replace('.', '_')}"
    name += (f"_s{stages}" if stages else "") + _fast_suffix(in_dtype, promote)
    return register_once(name, lambda: _intrin(n, in_dtype, scope, stages, promote))
