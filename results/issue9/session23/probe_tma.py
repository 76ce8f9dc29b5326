"""Probe (not part of tefuse; session 23, CPU only): can a TVM 0.27 kernel take a TMA descriptor?

A PrimFunc binds a `tensormap` handle on the host (tvm_stack_alloca), encodes it with
`T.tensormap_encode_tiled` (a [256, 64] fp16 tensor, 64 x 128 boxes, 128-byte swizzle) before the
kernel, and hands `T.address_of(map)` to a device function through `cuda.func_call`, as the wgmma
intrinsic calls its device function. It compiles with nvcc for sm_90a; the kernel's parameter list
then holds `const __grid_constant__ CUtensorMap A_tensormap`, and libtvm_runtime_cuda.so provides
`runtime.cuTensorMapEncodeTiled` for the host side. Not run on a GPU.

    TVM_CUDA_COMPILE_MODE=nvcc python probe_tma.py
"""
import tvm
from tvm.script import tirx as T

tmap = T.Var("A_tensormap", ty=T.handle("tensormap").ty)
SRC = r'''
#include <cudaTypedefs.h>
__device__ __forceinline__ void tefuse_probe_tma(unsigned long long map, void* a, int x, int y) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(map) : "memory");
}
'''


@T.prim_func(check_well_formed=False)
def f(A: T.Buffer((256, 64), "float16"), B: T.Buffer((256, 64), "float16")):
    T.Bind(T.tvm_stack_alloca("tensormap", 1), var=tmap)
    # rank 2, innermost first: dims (64, 256), byte stride of dim 1 (128), box (64, 64), element strides (1, 1)
    T.tensormap_encode_tiled(tmap, A.data, 64, 256, 128, 64, 64, 1, 1,
                             descriptor_dtype="float16", rank=2, swizzle=3)
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            T.evaluate(T.cuda.func_call("tefuse_probe_tma", T.address_of(tmap), A.data, bx, tx, source_code=SRC))
            for j in range(64):
                B[bx * 64 + tx // 2, j] = A[bx * 64 + tx // 2, j]


if __name__ == "__main__":
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        mod = tvm.compile(tvm.IRModule({"main": f}), target=target).mod
    src = mod.imports[0].inspect_source()
    assert "const __grid_constant__ CUtensorMap A_tensormap" in src, "no descriptor parameter"
    print(src[src.find("extern \"C\" __global__"):][:400])
