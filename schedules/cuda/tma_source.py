"""CUDA source of the TMA mainloop (sm_90a): a block's whole k loop in one device function, its
operand tiles brought by the Tensor Memory Accelerator, shared by the CTAs of a thread-block
cluster through multicast.

Why: at batch 16 the ResNet-50 convs that leave few blocks an SM stream their operand tiles
through L2 (a tiling of BM x BN reads A once a column of blocks and B once a row), and cuDNN runs
them in clusters of 4 CTAs whose TMA loads land in every CTA of the cluster that needs the tile: a
cluster of CM x CN CTAs reads A CN times fewer and B CM times fewer and keeps its small tiles. (The
L2's bandwidth turned out not to be the bound, ncu in session 24: 27% of it, one warpgroup an SM
waiting on its loads; the mainloop's own control of stages and warps is what may matter more.)

How (CUTLASS's Hopper mainloop, without warp specialisation):
- Shared memory (1024-aligned inside the buffer TVM allocates): `stages` stages of A [BM][64]
  then B [BN][64], each row 128 bytes in the 128-byte swizzle (the map's SWIZZLE_128B writes the
  layout wgmma's descriptors read), then a `full` and an `empty` mbarrier a stage.
- Thread 0 issues the loads: `arrive.expect_tx` of the stage's bytes on its `full` barrier, then
  its share of A (BM / CN rows, multicast to the CN CTAs of its cluster row) and of B (BN / CM
  rows, multicast to the CM CTAs of its cluster column). A multicast lands at the same offset of
  each destination and completes bytes on that CTA's own `full` barrier.
- Every warp waits on the stage's `full` barrier (phase parity = use of the stage mod 2), issues
  its warpgroup's four wgmma (m64nBNk16) and keeps one batch in flight: after `wait_group 1`
  the previous step's tiles are read, and the warp's lane 0 arrives on that stage's `empty`
  barrier in every CTA of the cluster, relaxed: the stage's only readers are the wgmma the warp
  has waited for (arrives with release at cluster scope took 2-3x the kernel's time on the H100,
  results/issue9/session24). Thread 0 waits for the stage's `empty` barrier (every warp
  of the cluster done with it) before loading step + stages - 1 into it: a multicast writes into
  its peers' tiles too.
- Thread 0 prefetches the two maps' descriptors before its first load.
- No trap in the barrier waits: ptxas serializes every wgmma of a kernel with a trap on a
  divergent path (its info C7518), the cause of the mainloop's doubled time in session 24-25's
  runs (found on the CPU after the last GPU call: `ptxas -v`).
- A cluster barrier after the barriers' init (a peer's multicast may not land on an
  uninitialised barrier) and one at the end (no CTA leaves, or reuses its shared memory for the
  accumulators' staging, while a peer may still arrive on its barriers).
- Then thread 0 invalidates the barriers (`mbarrier.inval`) before the caller's epilogue stages
  the accumulators over them: PTX leaves reusing a valid mbarrier's memory undefined, and on the
  H100 a cluster kernel whose staging tile covered the barriers read those 32 bytes back wrong
  (results/issue9/session25: 128x128 tiles at 2 stages, row 120 columns 64-71 of each tile).
- The tensor maps are encoded on the host (tirx.tensormap_encode_tiled) and reach the kernel as
  `const __grid_constant__ CUtensorMap` parameters; rows past the operand (M = 784 at 7x7) and
  columns past K are filled with zeros by the TMA unit.
"""
from __future__ import annotations

from .cluster_sum import SOURCE as CLUSTER_SOURCE  # tefuse_cluster_barrier
from .tensor_intrin_wgmma import DESC_SOURCE, PTX_TYPE, bk_of, register_fences, wgmma_row

ROW_BYTES = 128  # one swizzled tile row: BK elements
ALIGN = 1024  # a 128-byte-swizzle atom (8 rows): where every tile must start

COMMON = r"""
#ifndef TEFUSE_TMA_COMMON
#define TEFUSE_TMA_COMMON
#include <cuda.h>
__device__ __forceinline__ void tefuse_mbar_init(unsigned int bar, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
// No __trap() on a lost arrival here: a trap on this divergent path makes ptxas serialize every
// wgmma of the kernel (C7518, "compiler-inserted WG.DP in divergent path"), which doubled the
// mainloop's time on the H100 (sessions 24-25). A lost arrival hangs the launch instead.
__device__ __forceinline__ void tefuse_mbar_wait(unsigned int bar, unsigned int parity) {
  unsigned int done = 0;
  while (!done) {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  }
}
__device__ __forceinline__ void tefuse_mbar_expect(unsigned int bar, unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tefuse_mbar_arrive_cluster(unsigned int bar, unsigned int cta) {
  unsigned int remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(cta));
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}
__device__ __forceinline__ void tefuse_tma_2d(unsigned int dst, unsigned long long map, int c0, int c1,
                                              unsigned int bar, unsigned short mask) {
  if (mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
  }
}
#endif
"""


def func_name(bm: int, bn: int, stages: int, ktiles: int, cm: int, cn: int, in_dtype: str) -> str:
    return f"tefuse_tma_m{bm}n{bn}s{stages}k{ktiles}c{cm}x{cn}_{PTX_TYPE[in_dtype]}"


def shared_bytes(bm: int, bn: int, stages: int) -> int:
    """Bytes the mainloop needs of the buffer it is handed: the stages, two barriers a stage, and
    room to align the first tile."""
    return stages * (bm + bn) * ROW_BYTES + 16 * stages + ALIGN


def check(bm: int, bn: int, stages: int, cm: int, cn: int, in_dtype: str) -> None:
    """ValueError where the mainloop cannot run this config (what the tuner skips)."""
    if in_dtype not in ("float16", "bfloat16"):
        raise ValueError(f"the TMA mainloop takes float16/bfloat16 operands, not {in_dtype}")
    if stages < 2:
        raise ValueError("the TMA mainloop needs 2 stages or more (a stage is refilled after its reader's next step)")
    if cm * cn > 8 or cm < 1 or cn < 1:
        raise ValueError(f"a cluster of {cm}x{cn} CTAs: 1 to 8 of them")
    for rows, parts, what in ((bm, cn, "BM / CN"), (bn, cm, "BN / CM")):
        if rows % parts or (rows // parts) % 8 or rows // parts > 256:
            raise ValueError(f"{what} must be whole 8-row swizzle atoms, at most 256 rows ({rows}/{parts})")


def device_source(bm: int, bn: int, stages: int, ktiles: int, cm: int, cn: int, in_dtype: str) -> str:
    """The device function `func_name(...)(float* d, unsigned long long ma, unsigned long long mb,
    void* smem)`: ma, mb the maps' addresses (kernel parameters); d this thread's BN / 2
    accumulators (its warp's rows of its warpgroup's m64nBN tile, TVM's fragment layout),
    accumulated onto (the caller zeroes them)."""
    check(bm, bn, stages, cm, cn, in_dtype)
    fence = register_fences(bn)
    stage = (bm + bn) * ROW_BYTES
    warps = bm // 16
    ctas = cm * cn
    mask_a = f"(unsigned short)((({(1 << cn) - 1}u) << (cy * {cn})))" if cn > 1 else "0"
    mask_b = (f"(unsigned short)({' | '.join(f'(1u << (cx + {y * cn}))' for y in range(cm))})"
              if cm > 1 else "0")
    sync = "tefuse_cluster_barrier();" if ctas > 1 else "__syncthreads();"
    release = (f"for (unsigned int c = 0; c < {ctas}; ++c) tefuse_mbar_arrive_cluster(empty + 8 * ps, c);"
               if ctas > 1 else 'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"(empty + 8 * ps) : "memory");')
    name = func_name(bm, bn, stages, ktiles, cm, cn, in_dtype)
    return DESC_SOURCE + COMMON + CLUSTER_SOURCE + f"""
__device__ __forceinline__ void {name}(float* d, unsigned long long ma, unsigned long long mb, void* smem) {{
  const unsigned int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const unsigned int warp = tid >> 5, lane = tid & 31;
  const unsigned int base = ((unsigned int)__cvta_generic_to_shared(smem) + {ALIGN - 1}u) & ~{ALIGN - 1}u;
  const unsigned int full = base + {stages * stage}u, empty = full + {8 * stages}u;
  unsigned int cx = 0, cy = 0, nctas = 0;
  asm volatile("mov.u32 %0, %%cluster_ctaid.x;\\n" : "=r"(cx));
  asm volatile("mov.u32 %0, %%cluster_ctaid.y;\\n" : "=r"(cy));
  asm volatile("mov.u32 %0, %%cluster_nctarank;\\n" : "=r"(nctas));
  if (nctas != {ctas}u) __trap();  // launched without its cluster: the multicasts would go astray
  if (tid == 0) {{
    asm volatile("prefetch.tensormap [%0];\\n" :: "l"(ma) : "memory");
    asm volatile("prefetch.tensormap [%0];\\n" :: "l"(mb) : "memory");
    for (int s = 0; s < {stages}; ++s) {{
      tefuse_mbar_init(full + 8 * s, 1);
      tefuse_mbar_init(empty + 8 * s, {warps * ctas});
    }}
    asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");
  }}
  {sync}
  const int m0 = blockIdx.y * {bm}, n0 = blockIdx.x * {bn};
  const unsigned short mask_a = {mask_a}, mask_b = {mask_b};
  if (tid == 0) {{
    for (int kt = 0; kt < {min(stages, ktiles)}; ++kt) {{
      const unsigned int a = base + kt * {stage}u;
      tefuse_mbar_expect(full + 8 * kt, {stage}u);
      tefuse_tma_2d(a + cx * {bm // cn * ROW_BYTES}u, ma, kt * {bk_of(in_dtype)}, m0 + (int)cx * {bm // cn}, full + 8 * kt, mask_a);
      tefuse_tma_2d(a + {bm * ROW_BYTES}u + cy * {bn // cm * ROW_BYTES}u, mb, kt * {bk_of(in_dtype)}, n0 + (int)cy * {bn // cm}, full + 8 * kt, mask_b);
    }}
  }}
{fence}
  const unsigned int a_off = (warp >> 2) * {64 * ROW_BYTES}u;
  for (int kt = 0; kt < {ktiles}; ++kt) {{
    const int s = kt % {stages};
    const unsigned int a = base + s * {stage}u;
    tefuse_mbar_wait(full + 8 * s, (kt / {stages}) & 1);
    const unsigned long long da = tefuse_wgmma_desc_sw128(a + a_off);
    const unsigned long long db = tefuse_wgmma_desc_sw128(a + {bm * ROW_BYTES}u);
{wgmma_row(bn, in_dtype, "    ")}    asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");
    if (kt > 0) {{
      const int ps = (kt - 1) % {stages};
      if (lane == 0) {{ {release} }}
      const int next = kt - 1 + {stages};
      if (tid == 0 && next < {ktiles}) {{
        tefuse_mbar_wait(empty + 8 * ps, ((kt - 1) / {stages}) & 1);
        const unsigned int na = base + ps * {stage}u;
        tefuse_mbar_expect(full + 8 * ps, {stage}u);
        tefuse_tma_2d(na + cx * {bm // cn * ROW_BYTES}u, ma, next * {bk_of(in_dtype)}, m0 + (int)cx * {bm // cn}, full + 8 * ps, mask_a);
        tefuse_tma_2d(na + {bm * ROW_BYTES}u + cy * {bn // cm * ROW_BYTES}u, mb, next * {bk_of(in_dtype)}, n0 + (int)cy * {bn // cm}, full + 8 * ps, mask_b);
      }}
    }}
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
{fence}
  {sync}
  if (tid == 0) {{
    for (int s = 0; s < {2 * stages}; ++s)
      asm volatile("mbarrier.inval.shared::cta.b64 [%0];\\n" :: "r"(full + 8 * s) : "memory");
  }}
  __syncthreads();
}}
"""
