"""Tensor intrinsics for one 16x16x16 MFMA step (float16 or float32 A and B, float32 accumulators).

A wavefront of 64 lanes holds each 16x16 operand as 4 values a lane (TVM's "warp" scope,
buffers [64, 4]), in the f16 instruction's layout (AMD's CDNA ISA guides):

    A[i, k]: lane i + 16 * (k // 4), slot k % 4   (lane l: row l % 16, columns 4 * (l // 16) + s)
    B[k, j]: lane j + 16 * (k // 4), slot k % 4   (lane l: column l % 16, rows 4 * (l // 16) + s)
    C[i, j]: lane j + 16 * (i // 4), slot i % 4   (lane l: column l % 16, rows 4 * (l // 16) + s)

float16 is one `v_mfma_f32_16x16x16_f16`. float32 keeps the same layout and issues four
`v_mfma_f32_16x16x4_f32`, the s-th on slot s of A and B: that instruction reads A[l % 16, l // 16]
and B[l // 16, l % 16] from lane l, so step s pairs A's column 4 * (l // 16) + s with B's row of
the same index, and the four steps sum all 16. Both write C in the same layout, so the schedule
is one for either dtype. (CDNA's fp32 MFMA multiplies in full fp32, unlike a TF32 mode: it is
no accuracy trade, hence no knob; gfx942's xf32 instructions are not used.)

TVM 0.27 has similar intrinsics in tvm.s_tir.tensor_intrin.rocm (fp32 there as 16x4 tiles), but
importing that package parses every CUDA intrinsic too (24 s on a 2-core machine, inside a
tuning build's timeout); these parse in well under a second. Registered per dtype, on first use.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm.script import tirx as T

from ..intrin import register_once

TILE = 16
LANES = 64
SLOTS = TILE * TILE // LANES  # 4 values a lane
# in dtype -> (LLVM intrinsic, its k: steps a 16x16x16 tile takes TILE // k of them)
MFMA = {"float16": ("llvm.amdgcn.mfma.f32.16x16x16f16", 16), "float32": ("llvm.amdgcn.mfma.f32.16x16x4f32", 4)}
DTYPES = tuple(MFMA)

FILL = "tefuse_rocm_mfma_fill_16x16_f32"
STORE = "tefuse_rocm_mfma_store_16x16_f32_shared"


@dataclass(frozen=True)
class Intrins:
    """Names of the five intrinsics a 16x16x16 tile of one input dtype is tensorized with."""

    fill: str
    load_a: str
    load_b: str
    mma: str
    store: str


def names(dtype: str) -> Intrins:
    short = {"float16": "f16", "float32": "f32"}[dtype]
    return Intrins(FILL, f"tefuse_rocm_mfma_load_a_16x16_{short}_shared",
                   f"tefuse_rocm_mfma_load_b_16x16_{short}_shared", f"tefuse_rocm_mfma_{short}{short}f32_16x16x16",
                   STORE)


def lane_a(i, k):
    return i + TILE * (k // SLOTS), k % SLOTS


def lane_b(k, j):
    return j + TILE * (k // SLOTS), k % SLOTS


lane_c = lane_b  # the accumulator is laid out as B is


def rows_a(lane, slot):
    """The inverse of lane_a: the (row, column) of A a lane's slot holds."""
    return lane % TILE, (lane // TILE) * SLOTS + slot


def rows_b(lane, slot):
    """The inverse of lane_b (and lane_c)."""
    return (lane // TILE) * SLOTS + slot, lane % TILE


def _fill():
    @T.prim_func(s_tir=True)
    def desc(c: T.handle) -> None:
        C = T.match_buffer(c, (LANES, SLOTS), "float32", scope="warp")
        with T.sblock("root"):
            T.reads()
            T.writes(C[0:LANES, 0:SLOTS])
            for i, j in T.grid(TILE, TILE):
                with T.sblock("fill"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    lane, slot = T.meta_var(lane_c(vi, vj))
                    T.reads()
                    T.writes(C[lane, slot])
                    C[lane, slot] = T.float32(0)

    @T.prim_func(s_tir=True)
    def impl(c: T.handle) -> None:
        C = T.match_buffer(c, (LANES, SLOTS), "float32", scope="warp", offset_factor=1)
        with T.sblock("root"):
            T.reads()
            T.writes(C[0:LANES, 0:SLOTS])
            tx = T.env_thread("threadIdx.x")
            T.launch_thread(tx, LANES)
            for s in T.serial(SLOTS):
                C[tx, s] = T.float32(0)

    return desc, impl


def _load(dtype: str, is_b: bool):
    to_lane = lane_b if is_b else lane_a
    from_lane = rows_b if is_b else rows_a

    @T.prim_func(s_tir=True)
    def desc(r: T.handle, m: T.handle) -> None:
        M = T.match_buffer(m, (TILE, TILE), dtype, scope="shared", offset_factor=1)
        R = T.match_buffer(r, (LANES, SLOTS), dtype, scope="warp", offset_factor=1)
        with T.sblock("root"):
            T.reads(M[0:TILE, 0:TILE])
            T.writes(R[0:LANES, 0:SLOTS])
            for i, j in T.grid(TILE, TILE):
                with T.sblock("load"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    lane, slot = T.meta_var(to_lane(vi, vj))
                    T.reads(M[vi, vj])
                    T.writes(R[lane, slot])
                    R[lane, slot] = M[vi, vj]

    @T.prim_func(s_tir=True)
    def impl(r: T.handle, m: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        M = T.match_buffer(m, (TILE, TILE), dtype, scope="shared", offset_factor=1, strides=[s0, s1])
        R = T.match_buffer(r, (LANES, SLOTS), dtype, scope="warp", offset_factor=1)
        with T.sblock("root"):
            T.reads(M[0:TILE, 0:TILE])
            T.writes(R[0:LANES, 0:SLOTS])
            tx = T.env_thread("threadIdx.x")
            T.launch_thread(tx, LANES)
            for s in T.serial(SLOTS):
                row, col = T.meta_var(from_lane(tx, s))
                R[tx, s] = M[row, col]

    return desc, impl


def _mma(dtype: str):
    intrin, k = MFMA[dtype]
    widen = (lambda v: v) if dtype == "float32" else (lambda v: T.Cast("float32", v))  # as the compute reads

    @T.prim_func(s_tir=True)
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (LANES, SLOTS), dtype, scope="warp", offset_factor=1)
        B = T.match_buffer(b, (LANES, SLOTS), dtype, scope="warp", offset_factor=1)
        C = T.match_buffer(c, (LANES, SLOTS), "float32", scope="warp", offset_factor=1)
        with T.sblock("root"):
            T.reads(C[0:LANES, 0:SLOTS], A[0:LANES, 0:SLOTS], B[0:LANES, 0:SLOTS])
            T.writes(C[0:LANES, 0:SLOTS])
            for i, j, kk in T.grid(TILE, TILE, TILE):
                with T.sblock("mma"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
                    lc, sc = T.meta_var(lane_c(vi, vj))
                    la, sa = T.meta_var(lane_a(vi, vk))
                    lb, sb = T.meta_var(lane_b(vk, vj))
                    T.reads(C[lc, sc], A[la, sa], B[lb, sb])
                    T.writes(C[lc, sc])
                    C[lc, sc] = C[lc, sc] + widen(A[la, sa]) * widen(B[lb, sb])

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (LANES, SLOTS), dtype, scope="warp", offset_factor=1)
        B = T.match_buffer(b, (LANES, SLOTS), dtype, scope="warp", offset_factor=1)
        C = T.match_buffer(c, (LANES, SLOTS), "float32", scope="warp", offset_factor=1)
        with T.sblock("root"):
            T.reads(A[0:LANES, 0:SLOTS], B[0:LANES, 0:SLOTS], C[0:LANES, 0:SLOTS])
            T.writes(C[0:LANES, 0:SLOTS])
            tx = T.env_thread("threadIdx.x")
            T.launch_thread(tx, LANES)
            if k == TILE:  # one instruction on the 4 slots (parsed statically: k is a Python int)
                C[tx, T.ramp(0, 1, SLOTS)] = T.call_llvm_pure_intrin(
                    T.llvm_lookup_intrinsic_id(intrin), A[tx, T.ramp(0, 1, SLOTS)], B[tx, T.ramp(0, 1, SLOTS)],
                    C[tx, T.ramp(0, 1, SLOTS)], T.int32(0), T.int32(0), T.int32(0), dtype="float32x4")
            else:
                for s in T.unroll(SLOTS):  # slot s: the reduction's columns 4 * (lane // 16) + s
                    C[tx, T.ramp(0, 1, SLOTS)] = T.call_llvm_pure_intrin(
                        T.llvm_lookup_intrinsic_id(intrin), A[tx, s], B[tx, s],
                        C[tx, T.ramp(0, 1, SLOTS)], T.int32(0), T.int32(0), T.int32(0), dtype="float32x4")

    return desc, impl


def _store():
    @T.prim_func(s_tir=True)
    def desc(c: T.handle, m: T.handle) -> None:
        C = T.match_buffer(c, (LANES, SLOTS), "float32", scope="warp")
        M = T.match_buffer(m, (TILE, TILE), "float32", scope="shared")
        with T.sblock("root"):
            T.reads(C[0:LANES, 0:SLOTS])
            T.writes(M[0:TILE, 0:TILE])
            for i, j in T.grid(TILE, TILE):
                with T.sblock("store"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    lane, slot = T.meta_var(lane_c(vi, vj))
                    T.reads(C[lane, slot])
                    T.writes(M[vi, vj])
                    M[vi, vj] = C[lane, slot]

    @T.prim_func(s_tir=True)
    def impl(c: T.handle, m: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        C = T.match_buffer(c, (LANES, SLOTS), "float32", scope="warp", offset_factor=1)
        M = T.match_buffer(m, (TILE, TILE), "float32", scope="shared", offset_factor=1, strides=[s0, s1])
        with T.sblock("root"):
            T.reads(C[0:LANES, 0:SLOTS])
            T.writes(M[0:TILE, 0:TILE])
            tx = T.env_thread("threadIdx.x")
            T.launch_thread(tx, LANES)
            for s in T.serial(SLOTS):
                row, col = T.meta_var(rows_b(tx, s))
                M[row, col] = C[tx, s]

    return desc, impl


def register(dtype: str) -> Intrins:
    """Register the five intrinsics of one input dtype with TVM (once a process); their names."""
    n = names(dtype)
    register_once(n.fill, _fill)
    register_once(n.load_a, lambda: _load(dtype, False))
    register_once(n.load_b, lambda: _load(dtype, True))
    register_once(n.mma, lambda: _mma(dtype))
    register_once(n.store, _store)
    return n
