"""Cluster split-K: the slices of an output tile's reduction are the CTAs of one thread-block
cluster, and their partial tiles are added through distributed shared memory (sm_90).

What it is for: ResNet-50's deep 7x7 and 14x14 convs at batch 16 have too few output tiles for
the H100 (104 blocks of 64x64 for 2048x7x7->512, one warpgroup an SM, 32 k steps each), and a
lone warpgroup waits on its own latencies (ncu's stall samples on the H100). Split-K across
blocks would write float32 partial sums to global memory and add them in a second kernel; two
warpgroups of one block (sliced K within a block) share the block's barriers and did not help.
Here each slice is a CTA with its own barriers, and the partials never leave the SMs.

How: `sliced_k.slice_reduction` rfactors the reduction (Template.prepare); the wgmma schedule
binds the slice axis to blockIdx.z and leaves the sum's outer rows loop (`sliced_k.stage_sum`,
one part a slice) serial, marked CLUSTER_SUM. After TVM lowers the blocks, `inject`
- gives each CTA its part of the sum's rows (the marked loop's variable becomes blockIdx.z);
- reads the slices' partial tiles from the CTA that computed each: a load of the staging tile at
  slice s goes through a pointer `mapa` gives for CTA s of the cluster (a generic address into
  its shared memory; the slot each CTA writes is its own slice's, so the offsets agree);
- puts a cluster barrier before the sum (every partial tile written), and an arrive after the
  sum's reads with its wait at the end (no CTA exits while a peer still reads its shared memory;
  the epilogue runs in between);
- launches the grid in clusters of the slices along z (`in_clusters`, which takes x and y
  extents too).
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm.ir.expr import TensorLoad
from tvm.script import tirx as T
from tvm_ffi import structural_map, structural_mutate, structural_walk

from ..gemm.sliced_k import CLUSTER_SUM

SOURCE = r"""
#ifndef TEFUSE_CLUSTER_SUM
#define TEFUSE_CLUSTER_SUM
template <typename T>
__device__ __forceinline__ T* tefuse_cluster_map(T* p, unsigned int rank) {
  unsigned long long out;
  asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(out) : "l"((unsigned long long)p), "r"(rank));
  return (T*)out;
}
__device__ __forceinline__ void tefuse_cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// after the sum: this CTA is done reading its peers; the release orders those reads before the
// arrive (no epilogue store precedes it yet), and a peer's wait before its exit pairs with it
__device__ __forceinline__ void tefuse_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void tefuse_cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}
#endif
"""


def _barrier(name: str = "tefuse_cluster_barrier"):
    return tirx.Evaluate(T.cuda.func_call(name, source_code=SOURCE))


def _arrive_after_reads(body, peers):
    """`body` with a cluster arrive after its last top-level statement that reads a peer's tile
    (the epilogue after it overlaps the peers' reads), closed by a wait at its end."""
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]

    def reads_peer(stmt):
        hits = []
        structural_walk(stmt, [(TensorLoad, lambda ld: hits.append(ld) if any(ld.source.same_as(p) for p in peers)
                                else None)])
        return bool(hits)

    last = max(i for i, st in enumerate(stmts) if reads_peer(st))
    return tirx.SeqStmt([*stmts[:last + 1], _barrier("tefuse_cluster_arrive"), *stmts[last + 1:],
                         _barrier("tefuse_cluster_wait")])


def _marked(func):
    found = []
    structural_walk(func.body, [(tirx.For, lambda n: found.append(n) if CLUSTER_SUM in (n.annotations or {}) else None)])
    return found


def _thread_axes(func) -> dict:
    """{thread tag: (its var, its extent)} of the kernel's launch axes."""
    found = {}

    def visit(n):
        if n.attr_key == "thread_extent":
            found[str(n.node.thread_tag)] = (n.node.var, int(n.value))

    structural_walk(func.body, [(tirx.AttrStmt, visit)])
    return found


def in_clusters(body, dims: dict):
    """`body` (a blockIdx attribute's) under thread extents `clusterCtaIdx.<axis>` = extent for
    each of `dims` ({"x": 2, ...}): TVM's runtime then launches the grid in such clusters."""
    for axis, ext in dims.items():
        tag = f"clusterCtaIdx.{axis}"
        iv = tirx.IterVar(tvm.ir.Range(0, ext), tirx.Var(tag.replace(".", "_"), "int32"), 1, tag)
        body = tirx.AttrStmt(iv, "thread_extent", ext, body)
    return body


def _shared_stores(body) -> list:
    found = []
    structural_walk(body, [(tirx.BufferStore, lambda n: found.append(n) if n.buffer.scope().startswith("shared")
                            else None)])
    return found


def _staging(body):
    """The shared buffer the sum reads (the slices' partial tiles)."""
    bufs = {}

    def visit(n):
        if n.source.scope().startswith("shared"):
            bufs[n.source.name] = n.source

    structural_walk(body, [(TensorLoad, visit)])
    if len(bufs) != 1:
        raise ValueError(f"cluster sum: the sum reads {len(bufs)} shared buffers ({', '.join(bufs)}), not one")
    return next(iter(bufs.values()))


def _unroll_slices(body, staging, slices: int):
    """Each loop over the slices (a loop whose variable is a staging load's first index) written
    out once a slice, so that every such load names its slice by a constant."""
    def on_for(n, m):
        n = m.default_mutate(n)
        uses = []
        structural_walk(n.body, [(TensorLoad, lambda ld: uses.append(ld) if ld.source.same_as(staging)
                                  and ld.indices[0].same_as(n.loop_var) else None)])
        if not uses:
            return n
        if int(n.extent) != slices:
            raise ValueError(f"cluster sum: a slice loop of {int(n.extent)}, not {slices}")
        return tirx.SeqStmt([structural_map(n.body, (tirx.Var, lambda v, s=s: tirx.IntImm(v.ty.dtype, s)
                                                     if v.same_as(n.loop_var) else v)) for s in range(slices)])

    return structural_mutate(body, [(tirx.For, on_for)])


def inject(func):
    """`func` with its CLUSTER_SUM loop (if any) made one part a CTA of a cluster: see the module
    docstring. ValueError where the loop is not sliced_k's sum."""
    loops = _marked(func)
    if not loops:
        return func
    if len(loops) > 1:
        raise ValueError("cluster sum: more than one sum loop marked")
    loop = loops[0]
    slices = int(loop.annotations[CLUSTER_SUM])
    if int(loop.extent) != slices:
        raise ValueError(f"cluster sum: the rows loop has {int(loop.extent)} parts, not {slices}")
    axes = _thread_axes(func)
    bz, z_ctas = axes.get("blockIdx.z", (None, None))
    if z_ctas != slices:
        raise ValueError(f"cluster sum: blockIdx.z spans {z_ctas} CTAs, not the {slices} slices")
    if any(tag.startswith("clusterCtaIdx") for tag in axes):  # (a TMA cluster: ranks would not be blockIdx.z)
        raise ValueError("cluster sum: the kernel is already launched in clusters")
    staging = _staging(loop.body)
    if staging.dtype != "float32" or int(staging.shape[0]) != slices:
        raise ValueError(f"cluster sum: partial tiles {staging.dtype} {list(staging.shape)}, not float32 by slice")

    if _shared_stores(loop.body):  # peers read the tile through pointers the memory planner does
        # not see: a shared buffer written after the sum could be placed over it
        raise ValueError("cluster sum: the sum or its epilogue writes shared memory")
    body = structural_map(loop.body, (tirx.Var, lambda v: bz if v.same_as(loop.loop_var) else v))
    body = _unroll_slices(body, staging, slices)
    # each CTA keeps only its own slice's partial tile: slot 0 of a one-slot buffer (the same
    # shared allocation, a slice's size), written there and read there by its peers
    own = _one_slot(staging, staging.name, staging.data, staging.scope())
    ptr_ty = tvm.ir.PointerType(tvm.ir.PrimType(staging.dtype), "global")
    base = T.address_of(tirx.BufferLoad(own, [tirx.IntImm("int32", 0)] * len(staging.shape)))
    peers, binds = [], []
    for s in range(slices):
        ptr = tirx.Var(f"{staging.name}_cta{s}", ptr_ty)
        peers.append(_one_slot(staging, f"{staging.name}_cta{s}", ptr, "global"))
        binds.append(tirx.Bind(ptr, T.cuda.func_call("tefuse_cluster_map", base, tirx.IntImm("uint32", s),
                                                      source_code=SOURCE, return_type=ptr_ty)))
        binds.append(tirx.DeclBuffer(peers[-1], data=ptr))

    def on_load(ld, m):
        if not ld.source.same_as(staging):
            return m.default_mutate(ld)
        s = ld.indices[0]
        if not isinstance(s, tirx.IntImm):
            raise ValueError("cluster sum: a partial tile read at a slice that is not a constant")
        return tirx.BufferLoad(peers[int(s.value)], [tirx.IntImm(s.ty.dtype, 0), *ld.indices[1:]])

    body = structural_mutate(body, [(TensorLoad, on_load)])
    new = tirx.SeqStmt([_barrier(), *binds, _arrive_after_reads(body, peers)])

    def on_for(n, m):
        return new if n.same_as(loop) else m.default_mutate(n)

    def on_store(n, m):  # the fragments' store into this CTA's slot
        n = m.default_mutate(n)
        if not n.buffer.same_as(staging):
            return n
        if not n.indices[0].same_as(bz):
            raise ValueError("cluster sum: a partial tile stored at a slot other than the CTA's own")
        return tirx.BufferStore(own, n.value, [tirx.IntImm(n.indices[0].ty.dtype, 0), *n.indices[1:]])

    def on_alloc(n, m):
        n = m.default_mutate(n)
        return tirx.AllocBuffer(own, n.annotations) if n.buffer.same_as(staging) else n

    def on_attr(n, m):
        n = m.default_mutate(n)
        if n.attr_key == "thread_extent" and n.node.thread_tag == "blockIdx.z":
            return tirx.AttrStmt(n.node, n.attr_key, n.value, in_clusters(n.body, {"z": slices}))
        return n

    handlers = [(tirx.For, on_for), (tirx.AttrStmt, on_attr), (tirx.BufferStore, on_store), (tirx.AllocBuffer, on_alloc)]
    return func.with_body(structural_mutate(func.body, handlers))


def _one_slot(staging, name: str, data, scope: str):
    """`staging` (slices x rows x columns) as a buffer of one slice at `data`."""
    return tirx.decl_buffer([1, *staging.shape[1:]], staging.dtype, name, data=data, strides=staging.strides,
                            scope=scope)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.InjectClusterSum")
def InjectClusterSum(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return inject(func)
