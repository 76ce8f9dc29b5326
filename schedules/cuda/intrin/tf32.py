"""tf32 tensor intrinsics: mma.sync m16n8k8 (.tf32 operands, float32 accumulators).

TVM 0.27 registers none, its CUDA codegen has no float32 wmma fragments, and ldmatrix moves
16-bit elements only; so operands go shared -> registers by plain loads in the PTX fragment
layout (a0..a3 at rows g, g+8 and columns t, t+4 of a 16x8 tile; b0, b1 at rows t, t+4 of an
8x8 one; g = lane / 4, t = lane % 4), and each 16x16x8 tile is two m16n8k8 instructions. The
accumulators use the 16x16 fp32 layout of TVM's own mma fill/store intrinsics (every m16n8kX
shares it). The tensor cores read a float32's top 19 bits; the ops round operands to TF32
first (ops/value.round_tf32), so what they multiply is what the llvm target computes.
"""
from __future__ import annotations

from tvm.runtime import convert
from tvm.script import tirx as T

from ...intrin import register_once

WARP = 32
F32 = "float32"


def lay_a(i, k):
    """(lane, element) holding A[i, k] of a 16x8 tile."""
    return 4 * (i % 8) + k % 4, i // 8 + 2 * (k // 4)


def lay_b(k, n):
    """(lane, element) holding B[k, n] of an 8x16 tile (two 8x8 halves along n)."""
    return 4 * (n % 8) + k % 4, k // 4 + 2 * (n // 8)


def lay_c(i, j):
    """(lane, element) holding C[i, j] of a 16x16 accumulator tile (TVM's mma store layout)."""
    return 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + (i // 8) * 2 + j % 2


def _a_at(lane, e):
    return lane // 4 + 8 * (e % 2), lane % 4 + 4 * (e // 2)


def _b_at(lane, e):  # (k, n)
    return lane % 4 + 4 * (e % 2), lane // 4 + 8 * (e // 2)


def _load_intrin(operand: str, scope: str):
    """shared [rows, cols] -> warp [32 lanes, 4]; operand: "a" (16x8, [m, k]), "b" (8x16,
    [k, n]) or "b_trans" (16x8, [n, k])."""
    rows, cols = (8, 16) if operand == "b" else (16, 8)
    if operand == "a":
        lay, at = lay_a, _a_at
    elif operand == "b":
        lay, at = lay_b, _b_at
    else:
        lay = lambda n, k: lay_b(k, n)  # noqa: E731
        at = lambda lane, e: _b_at(lane, e)[::-1]  # noqa: E731

    @T.prim_func(s_tir=True)
    def desc(warp_handle: T.handle, shared_handle: T.handle) -> None:
        shared = T.match_buffer(shared_handle, (rows, cols), F32, align=64, offset_factor=cols, scope=scope)
        warp = T.match_buffer(warp_handle, (WARP, 4), F32, align=64, offset_factor=cols, scope="warp")
        with T.sblock("root"):
            T.reads(shared[0:rows, 0:cols])
            T.writes(warp[0:WARP, 0:4])
            for ax0, ax1 in T.grid(rows, cols):
                with T.sblock("shared_warp"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    T.reads(shared[v0, v1])
                    lane, e = T.meta_var(lay(v0, v1))
                    T.writes(warp[lane, e])
                    warp[lane, e] = shared[v0, v1]

    @T.prim_func(s_tir=True)
    def impl(warp_handle: T.handle, shared_handle: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        shared = T.match_buffer(shared_handle, (rows, cols), F32, align=64, offset_factor=cols, scope=scope,
                                strides=[s0, s1])
        warp = T.match_buffer(warp_handle, (WARP, 4), F32, align=64, offset_factor=cols, scope="warp")
        with T.sblock("root"):
            T.reads(shared[0:rows, 0:cols])
            T.writes(warp[0:WARP, 0:4])
            for tx in T.thread_binding(0, WARP, "threadIdx.x"):
                for e in T.unroll(4):
                    r, c = T.meta_var(at(tx, e))
                    warp[tx, e] = shared[r, c]

    return desc, impl


def _mma_intrin(b_trans: bool):
    """C[16x16] += A[16x8] * B[8x16] (B given as [n, k] when b_trans) as two m16n8k8."""
    b_off = 8 if b_trans else 16  # the B tile is [n, k] (16x8) or [k, n] (8x16); one layout maps both

    @T.prim_func(s_tir=True)
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (WARP, 4), F32, align=64, offset_factor=8, scope="warp")
        B = T.match_buffer(b, (WARP, 4), F32, align=64, offset_factor=b_off, scope="warp")
        C = T.match_buffer(c, (WARP, 8), F32, align=64, offset_factor=16, scope="warp")
        with T.sblock("root"):
            T.reads(C[0:WARP, 0:8], A[0:WARP, 0:4], B[0:WARP, 0:4])
            T.writes(C[0:WARP, 0:8])
            for i, j, k in T.grid(16, 16, 8):
                with T.sblock("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    ta, la = T.meta_var(lay_a(vi, vk))
                    tb, lb = T.meta_var(lay_b(vk, vj))
                    tc, lc = T.meta_var(lay_c(vi, vj))
                    T.reads(C[tc, lc], A[ta, la], B[tb, lb])
                    T.writes(C[tc, lc])
                    C[tc, lc] = C[tc, lc] + A[ta, la] * B[tb, lb]

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (WARP, 4), F32, align=64, offset_factor=8, scope="warp")
        B = T.match_buffer(b, (WARP, 4), F32, align=64, offset_factor=b_off, scope="warp")
        C = T.match_buffer(c, (WARP, 8), F32, align=64, offset_factor=16, scope="warp")
        with T.sblock("root"):
            T.reads(C[0:WARP, 0:8], A[0:WARP, 0:4], B[0:WARP, 0:4])
            T.writes(C[0:WARP, 0:8])
            for tx in T.thread_binding(0, WARP, "threadIdx.x"):
                T.evaluate(T.ptx_legacy.mma(
                    "m16n8k8", "row", "col", "tf32", "tf32", "fp32",
                    A.data, A.elem_offset + tx * convert(4), B.data, B.elem_offset + tx * convert(4),
                    C.data, C.elem_offset + tx * convert(8), False, dtype=F32))
                T.evaluate(T.ptx_legacy.mma(
                    "m16n8k8", "row", "col", "tf32", "tf32", "fp32",
                    A.data, A.elem_offset + tx * convert(4), B.data, B.elem_offset + tx * convert(4) + convert(2),
                    C.data, C.elem_offset + tx * convert(8) + convert(4), False, dtype=F32))

    return desc, impl


def tf32_mma_group(load_scope: str, b_nk: bool) -> dict[str, str]:
    """Intrinsic names for a float32 GEMM on tf32 mma.sync, operands and the accumulator
    staging tile in `load_scope` (shared or shared.dyn); fill/store are TVM's fp32 ones
    (registered by gemm/tiles.intrin_names, as every group's TVM names are)."""
    sfx = load_scope.replace(".", "_")
    b = "b_trans" if b_nk else "b"
    return {
        "load_a": register_once(f"tf32_mma_load_a_{sfx}", lambda: _load_intrin("a", load_scope)),
        "load_b": register_once(f"tf32_mma_load_{b}_{sfx}", lambda: _load_intrin(b, load_scope)),
        "compute": register_once(f"tf32_mma_m16n8k8{'_trans_b' if b_nk else ''}", lambda: _mma_intrin(b_nk)),
        "init": "mma_fill_16x16_f32",
        "store": f"mma_store_16x16_f32_{sfx}_simple_",
    }
