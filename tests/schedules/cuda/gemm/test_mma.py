"""The mma.sync/wmma tensor-core template (MmaGemm) without a GPU: its CUDA and PTX hold mma/wmma
and cp.async, its tiling and padding compute the right numbers (the same schedule, untensorized,
run on llvm), a tensor-core template is the untuned choice for fp16/bf16/tf32 GEMMs and convs
only, and the tf32 fragment layouts are the ones the PTX ISA gives for mma.sync m16n8k8."""
from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.compile import device_compile
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx, ptx_arch, cuda_kernel_names
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.graph.precision import convert_precision
from tefuse.plan.spec import parse_chain
from tefuse.schedules.cuda.gemm import template as tc
from tefuse.schedules.cuda.gemm import tiles
from tefuse.codegen.schedule import find_template
from tefuse.schedules.cuda.gemm.template import MmaGemm, b_rows_along_k, pass_config
from tefuse.target import make_target

NAME = "tensorcore_gemm"
TENSOR_CORE = (NAME, "wgmma_gemm")  # mma.sync/wmma, and Hopper's wgmma


def untuned(info, target):
    """The tensor-core template an untuned build takes for this group and target."""
    return find_template(target, info.anchor_kind, info=info)[0]


def _dense(m, n, k, dtype, batch=None):
    b = GraphBuilder()
    if batch:
        x, w = b.input("x", (batch, m, k), dtype), b.input("w", (batch, k, n), dtype)
        return b.build(b.matmul(x, w))
    x, w, bias = b.input("x", (m, k), dtype), b.input("w", (n, k), dtype), b.input("bias", (n,), dtype)
    return b.build(b.relu(b.bias_add(b.dense(x, w), bias, axis=1)))


def _gelu_dense(m, n, k, dtype="float16"):
    """ViT's MLP fc1: GELU's erf is an op TVM's vectorizer scalarizes."""
    b = GraphBuilder()
    x, w, bias = b.input("x", (m, k), dtype), b.input("w", (n, k), dtype), b.input("bias", (n,), dtype)
    return b.build(b.gelu(b.bias_add(b.dense(x, w), bias, axis=1)))


def _normalized_dense(m, n, k, dtype):
    """A LayerNorm-like prologue: a per-row scale (one value per vector of a row) and a
    per-column gain computed while the tiles load."""
    b = GraphBuilder()
    x, s, g = b.input("x", (m, k), dtype), b.input("s", (m, 1), dtype), b.input("g", (k,), dtype)
    return b.build(b.dense(b.mul(b.mul(x, s), g), b.input("w", (n, k), dtype)))


def _scores(m, n, k, dtype, batch=3):
    """Attention's q @ k^T: B reaches the GEMM through a transpose of [.., N, K] data."""
    b = GraphBuilder()
    q, kk = b.input("q", (batch, m, k), dtype), b.input("k", (batch, n, k), dtype)
    return b.build(b.matmul(q, b.transpose(kk, axes=(0, 2, 1))))


def _rows_permuted(l, bsz, e, dtype):
    """An output projection whose rows go back to batch-first [B, L, E] with the residual, all in
    the epilogue (fusion's row permutation: each row stays whole, so stores stay vectors)."""
    b = GraphBuilder()
    x, w = b.input("x", (l * bsz, e), dtype), b.input("w", (e, e), dtype)
    y = b.reshape(b.bias_add(b.dense(x, w), b.input("bias", (e,), dtype), axis=1), shape=(l, bsz, e))
    return b.build(b.add(b.transpose(y, axes=(1, 0, 2)), b.input("res", (bsz, l, e), dtype)))


def _split_hwio_conv(n, hw, c, k, splits, dtype="float16"):
    """A split-K conv's partial products with its weight a runtime HWIO operand (a chain's; B is
    [K, N], so mma.sync, not wgmma): [S, N, OH, OW, K] float32 (graph/split_k.py)."""
    b = GraphBuilder()
    x, w = b.input("x", (n, hw, hw, c), dtype), b.input("w", (3, 3, c, k), dtype)
    return b.build(b.conv2d(x, w, padding=1, layout="NHWC", split_k=splits))


CASES = {
    "conv_nhwc_split_hwio": lambda: _split_hwio_conv(1, 7, 64, 32, 4),
    "conv_nchw_bn_relu": lambda: parse_chain("conv2d(k=32,r=3,pad=1)+bias+batch_norm+relu", (2, 16, 10, 10),
                                             "float16", "NCHW"),
    "conv_nhwc_residual": lambda: parse_chain("conv2d(k=32,r=3,pad=1)+bias+add+relu", (2, 10, 10, 16), "float16",
                                              "NHWC"),
    "conv_c3_7x7_s2": lambda: parse_chain("conv2d(k=16,r=7,stride=2,pad=3)+bias+relu", (1, 3, 30, 30), "float16",
                                          "NCHW"),
    "dense_awkward_197": lambda: _dense(197, 96, 72, "float16"),
    "dense_gelu_197": lambda: _gelu_dense(197, 96, 72),
    "conv_nhwc_bn_relu": lambda: parse_chain("conv2d(k=32,r=1)+bias+batch_norm+relu", (2, 10, 10, 16), "float16",
                                             "NHWC"),
    "batched_matmul": lambda: _dense(37, 40, 24, "float16", batch=3),
    "dense_bf16": lambda: _dense(49, 64, 48, "bfloat16"),
    "attention_scores": lambda: _scores(37, 40, 24, "float16"),
    "dense_rows_permuted": lambda: _rows_permuted(37, 3, 64, "float16"),
    "dense_normalized_prologue": lambda: _normalized_dense(197, 64, 96, "float16"),
    # float32 graphs built with precision tf32 (operands rounded to TF32, mma.sync m16n8k8)
    "conv_nchw_tf32": lambda: convert_precision(
        parse_chain("conv2d(k=32,r=3,pad=1)+bias+batch_norm+relu", (2, 16, 10, 10), "float32", "NCHW"), "tf32"),
    "conv_nhwc_tf32_c3": lambda: convert_precision(
        parse_chain("conv2d(k=16,r=7,stride=2,pad=3)+bias+relu", (1, 30, 30, 3), "float32", "NHWC"), "tf32"),
    "dense_awkward_197_tf32": lambda: convert_precision(_dense(197, 96, 72, "float32"), "tf32"),
    "batched_matmul_tf32": lambda: convert_precision(_dense(37, 40, 24, "float32", batch=3), "tf32"),
    "attention_scores_tf32": lambda: convert_precision(_scores(37, 40, 24, "float32"), "tf32"),
}
TF32_CASES = sorted(c for c in CASES if c.endswith("tf32") or "_tf32_" in c)


def _group(graph):
    (group,) = fuse_graph(graph)
    return group


# fp16/bf16/tf32 dense GEMMs (B stored [N, K]): Hopper's untuned choice is wgmma (test_wgmma.py)
WGMMA_CASES = {"dense_awkward_197", "dense_bf16", "dense_normalized_prologue", "dense_awkward_197_tf32",
               "dense_rows_permuted", "dense_gelu_197"}


@pytest.mark.parametrize("case,arch", [(c, "sm_90") for c in sorted(CASES)] + [(c, "sm_80") for c in sorted(WGMMA_CASES)])
def test_cuda_and_ptx_use_tensor_cores_and_cp_async(case, arch):
    # every prologue fused, also where Hopper's rule would give it a kernel of its own (test_prologue)
    cg = tefuse.build(CASES[case](), f"cuda:{arch}", prologue=lambda candidate: True)
    (k,) = cg.kernels
    assert k.template in TENSOR_CORE
    src = k.source("cuda")
    assert "mma" in src and "cp.async" in src
    if case in WGMMA_CASES and arch == "sm_90":
        assert "tefuse_wgmma_m64n" in src and "mma.sync" not in src
        assert re.search(r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+(k16\.f32\.(f16\.f16|bf16\.bf16)|k8\.f32\.tf32\.tf32)",
                         compile_to_ptx(src, "sm_90a"))
        return
    ptx = compile_to_ptx(src, arch)
    mma = (r"m16n8k8\.row\.col\.f32\.tf32\.tf32" if case in TF32_CASES
           else r"m16n8k16\.row\.col\.f32\.(f16\.f16|bf16\.bf16)")
    assert re.search(r"\bmma\.sync\.aligned\." + mma + r"\.f32", ptx), ptx[:400]
    assert "cp.async" in ptx


def test_wmma_variant_compiles_to_wmma():
    group = _group(CASES["dense_awkward_197"]())
    lowered = lower_group(group)
    target = make_target("cuda")
    t = MmaGemm()
    space = t.space(lowered.info, target)
    cfg = space.from_values({**t.fallback(lowered.info, target, space).values, "intrin": "wmma"})
    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, target)
    mod = device_compile(sch.mod, target, pass_config("wmma", target))
    src = mod.imports[0].inspect_source()
    assert "wmma::mma_sync" in src
    assert "wmma.mma.sync" in compile_to_ptx(src)


@pytest.mark.parametrize("case,trans", [("attention_scores", False), ("batched_matmul", True)])
def test_a_transposed_b_is_staged_n_by_k_and_streamed(case, trans):
    """q @ k^T reads k's rows (K fastest) through the transpose: B is staged [N, K] and copied by
    16-byte cp.async like A, so no ldmatrix transposes it. A true (K, N) B (batched_matmul) is
    staged (K, N) and transposed by ldmatrix .trans. Read as (K, N), the scores' B copy had loaded
    one element per 3 KB row (ViT-B/16's QK^T: 0.093 ms a layer at batch 32)."""
    (k,) = tefuse.build(CASES[case](), "cuda:sm_80").kernels
    src = k.source("cuda")
    assert ("ldmatrix.sync.aligned.m8n8.x4.trans" in src) == trans
    copies = re.findall(r"ptx_cp_async\w*_16\w*\(buf_dyn_shmem_ptr, [^;]*in_(\w+?)_ptr", src)
    assert {"q", "k"} <= set(copies) if case == "attention_scores" else copies


def test_the_permuted_rows_are_stored_as_vectors():
    """The epilogue writes each row of the permuted output as vectors (sm_80's mma and sm_90's
    wgmma; 4 halves where the masked tail limits the store, 8 elsewhere)."""
    for arch in ("sm_80", "sm_90"):
        (k,) = tefuse.build(CASES["dense_rows_permuted"](), f"cuda:{arch}").kernels
        assert re.search(r"\*\((uint4|half4)\*\)\(out_\w+_ptr \+", k.source("cuda")), arch


def _rand(shape, dtype, rng):
    a = rng.standard_normal(shape).astype("float32")
    if dtype == "bfloat16":
        import ml_dtypes

        return a.astype(ml_dtypes.bfloat16)
    return a.astype(dtype)


def test_a_per_row_prologue_operand_keeps_the_tile_loads_vectorized():
    """mean and rstd of a LayerNorm prologue are one value per row: the A tile still loads
    16 bytes at a time (ViT's fc1 ran 10x slower with element loads), on the mma (sm_80) and
    the wgmma (sm_90) paths."""
    for arch in ("sm_80", "sm_90"):
        # fused (on sm_90 the prologue rule would give the normalisation a kernel of its own)
        (k,) = tefuse.build(CASES["dense_normalized_prologue"](), f"cuda:{arch}",
                            prologue=lambda candidate: True).kernels
        loads = re.findall(r"\*\(uint4\*\)\(in_x_ptr \+", k.source("cuda"))
        assert loads, f"{arch}: the x operand is not loaded 8 halves at a time"


def _patch_embedding():
    """Like ViT's patch embedding, a float32 NCHW conv with C=3 and 16x16 windows, built in fp16
    (so NHWC, its input cast and transposed while the tiles load); windows overlapping (stride 8),
    as ViT's own (stride 16) is now a matmul on patches (graph/patches.py)."""
    b = GraphBuilder()
    w = np.random.default_rng(0).standard_normal((32, 3, 16, 16)).astype("float32") * 0.05
    y = b.conv2d(b.input("x", (1, 3, 64, 64)), b.const(w, name="w"), strides=8)
    return b.build(b.relu(y))


def _vector_constructors(src: str):
    """(lanes of the type, arguments given) for every make_int4/make_longlong4/... call."""
    for m in re.finditer(r"\bmake_[a-z]+([1-4])\(", src):
        depth, args, i = 1, 1, m.end()
        while depth:
            ch = src[i]
            depth += ch == "("
            depth -= ch == ")"
            args += ch == "," and depth == 1
            i += 1
        yield int(m.group(1)), args


def test_a_gathered_tile_copy_stays_scalar():
    """Its A tile reads `k % 3` and strided rows: vectorizing that copy gave int32x8 index
    arithmetic (`make_longlong4` with 8 arguments) that CUDA 12's nvcc refused; the H100 could
    not build ViT. Only copies whose lanes read consecutive elements are vectorized."""
    cg = tefuse.build(_patch_embedding(), "cuda", precision="fp16")
    (k,) = [k for k in cg.kernels if k.template in TENSOR_CORE and "conv2d" in k.group.name]
    src = k.source("cuda")
    assert "longlong4" not in src
    for n, args in _vector_constructors(src):
        assert args == n, f"make_*{n} called with {args} arguments"
    # the weights (on sm_90 an OHWI copy, in_w_nk) still move 16 bytes at a time
    assert re.search(r"ptx_cp_async\w*_16\w*\([^;]*in_w\w*_ptr", src)
    compile_to_ptx(src, _ptx_arch(src))
    x = np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype("float32")
    want = tefuse.build(_patch_embedding(), "llvm").run(x=x)[0]
    got = tefuse.build(_patch_embedding(), "llvm", precision="fp16").run(x=x)[0]
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_a_copy_that_starts_off_alignment_stays_scalar():
    """A slice starting at column 1 reads consecutive elements, but its 16-byte vectors would
    start 2 bytes off: cp.async needs its size's alignment."""
    b = GraphBuilder()
    x = b.slice(b.input("x", (256, 72), "float16"), starts=(1,), ends=(65,), axes=(1,))
    (k,) = tefuse.build(b.build(b.dense(x, b.input("w", (32, 64), "float16"))), "cuda").kernels
    src = k.source("cuda")
    assert k.template in TENSOR_CORE
    assert not re.search(r"ptx_cp_async\w*_16\w*\([^;]*in_x_ptr", src) and "(uint4*)(in_x_ptr" not in src


@pytest.mark.parametrize("case", ["conv_nchw_bn_relu", "conv_nhwc_residual", "conv_c3_7x7_s2", "dense_awkward_197",
                                  "conv_nhwc_split_hwio", "batched_matmul", "attention_scores", "dense_rows_permuted",
                                  "dense_normalized_prologue", *TF32_CASES])
def test_tiling_and_padding_compute_the_right_numbers_on_llvm(case):
    """The template's schedule with plain loops (llvm cannot run tensor-core intrinsics): every
    tile, pad and masked tail as on the GPU, compared with the CPU template's result."""
    graph = CASES[case]()
    group = _group(graph)
    lowered = lower_group(group)
    cuda = make_target("cuda")
    t = untuned(lowered.info, cuda)
    space = t.space(lowered.info, cuda)
    cfg = t.fallback(lowered.info, cuda, space)
    sch = s_tir.Schedule(lowered.func)
    llvm = make_target("llvm")
    t.apply(sch, lowered.info, cfg, llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    rng = np.random.default_rng(0)
    args = [_rand(p.shape, p.dtype, rng) * (0.2 if "weight" in p.name else 1) for p in lowered.params]
    for p, a in zip(lowered.params, args):
        if p.name.endswith("_var"):
            a[...] = np.abs(a) + 0.5
    dev = tvm.cpu()
    outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in group.outputs]
    lib["main"](*[tvm.runtime.tensor(a, dev) for a in args], *outs)
    want = tefuse.build(graph, "llvm").run(**{p.name: a for p, a in zip(lowered.params, args)})[0]
    got = outs[0].numpy().astype(np.float32)
    scale = np.abs(want.astype(np.float32)).max()
    # tf32: both sides multiply the same rounded operands in float32; only summation order differs
    assert np.abs(got - want.astype(np.float32)).max() <= (1e-5 if case in TF32_CASES else 1e-2) * scale


def test_chosen_for_low_precision_only():
    def templates(graph):
        return [k.template for k in tefuse.build(graph, "cuda").kernels]

    assert templates(parse_chain("conv2d(k=32,r=3,pad=1)+relu", (1, 16, 8, 8), "float32", "NCHW")) != [NAME]
    g32 = parse_chain("conv2d(k=32,r=3,pad=1)+relu", (1, 16, 8, 8), "float32", "NCHW")
    assert [k.template for k in tefuse.build(g32, "cuda", precision="tf32").kernels] == [NAME]
    assert templates(parse_chain("conv2d(k=32,r=3,pad=1)+relu", (1, 16, 8, 8), "float16", "NCHW")) == [NAME]
    assert templates(parse_chain("conv2d(k=16,r=3,pad=1,depthwise=1)+relu", (1, 16, 8, 8), "float16",
                                 "NCHW")) != [NAME]
    # an fp32 graph built with precision=fp16: casts in the prologue, tensor cores all the same
    g = parse_chain("conv2d(k=32,r=3,pad=1)+bias+relu", (1, 16, 8, 8), "float32", "NCHW")
    assert [k.template for k in tefuse.build(g, "cuda", precision="fp16").kernels] == [NAME]


def test_cli_builds_one_tensor_core_kernel_for_an_fp16_chain(capsys):
    """The README's command: `tefuse build CHAIN -i 16x64x56x56 --precision fp16 -t cuda -e cuda`."""
    from tefuse.cli import main

    rc = main(["build", "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu", "-i", "16x64x56x56", "--precision", "fp16",
               "-t", "cuda", "-e", "cuda", "--no-db", "--no-cache"])
    out = capsys.readouterr().out
    assert rc == 0
    assert len(cuda_kernel_names(out)) == 1  # definitions (TVM may also print a declaration)
    assert "mma.sync" in out and "cp.async" in out


def test_tf32_fragment_layouts_follow_the_ptx_isa():
    """Emulate mma.sync.m16n8k8 .tf32 with the PTX ISA's fragment description (written out
    here, independently of intrin/tf32.py): lanes hold what the intrinsics' layouts say, and
    the two instructions of a 16x16x8 tile produce A @ B in the accumulator layout."""
    from tefuse.schedules.cuda.intrin import tf32 as L

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((16, 8)), rng.standard_normal((8, 16))
    a_reg, b_reg, c_reg = np.zeros((32, 4)), np.zeros((32, 4)), np.zeros((32, 8))
    for i in range(16):
        for k in range(8):
            a_reg[L.lay_a(i, k)] = A[i, k]
    for k in range(8):
        for n in range(16):
            b_reg[L.lay_b(k, n)] = B[k, n]
    for lane in range(32):  # the loads' per-lane addresses invert the layouts
        for e in range(4):
            assert a_reg[lane, e] == A[L._a_at(lane, e)] and b_reg[lane, e] == B[L._b_at(lane, e)]
    for half in range(2):  # PTX ISA, "Matrix fragments for mma.m16n8k8" (.tf32), per instruction
        for lane in range(32):
            g, t = lane // 4, lane % 4
            a = {(g, t): a_reg[lane, 0], (g + 8, t): a_reg[lane, 1], (g, t + 4): a_reg[lane, 2],
                 (g + 8, t + 4): a_reg[lane, 3]}
            b = {(t, g): b_reg[lane, 2 * half], (t + 4, g): b_reg[lane, 2 * half + 1]}
            for (r, c), v in a.items():
                assert v == A[r, c]
            for (r, c), v in b.items():
                assert v == B[r, 8 * half + c]
        for lane in range(32):  # c0..c3 at rows g, g+8, columns 2t, 2t+1 of the n-half
            g, t = lane // 4, lane % 4
            for e, (r, c) in enumerate([(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]):
                c_reg[lane, 4 * half + e] = A[r] @ B[:, 8 * half + c]
    C = np.zeros((16, 16))
    for i in range(16):
        for j in range(16):
            C[i, j] = c_reg[L.lay_c(i, j)]
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)


def _relu_gemm_onnx(m, k, n, act="Relu", op="Gemm"):
    """x -> Relu (or LeakyRelu) -> Gemm (B as (N, K)) or MatMul: an activation prologue on the A operand."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(3).standard_normal((n, k) if op == "Gemm" else (k, n)).astype("float32") / 8
    nodes = [helper.make_node(act, ["x"], ["r"], **({"alpha": 0.1} if act == "LeakyRelu" else {})),
             helper.make_node(op, ["r", "w"], ["y"], **({"transB": 1} if op == "Gemm" else {}))]
    g = helper.make_graph(nodes, "act_gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), w


def _ptx_arch(src: str) -> str:
    """A Hopper wgmma kernel is compiled for sm_90a (its kernel target), the rest for sm_90."""
    return ptx_arch(src, "sm_90")


def _bool_vectors_wider_than_4(src: str) -> bool:
    return "boolx" in src or re.search(r"\bushort(8|16)\b", src) is not None


@pytest.mark.parametrize("m,k,n,act,op", [(64, 64, 64, "Relu", "Gemm"), (100, 72, 40, "Relu", "MatMul"),
                                          (197, 96, 72, "LeakyRelu", "Gemm")])
def test_a_select_prologue_builds_for_cuda(m, k, n, act, op):
    """relu(x) feeding a GEMM in fp16: the A copy computes `x < 0 ? 0 : x` while loading. 8
    wide, its condition was a bool x8, which TVM's CUDA codegen cannot print ("Cannot convert
    type T.boolx8 to CUDA type"); such a copy is now vectorized 4 wide (ushort4 conditions)."""
    model, w = _relu_gemm_onnx(m, k, n, act, op)
    # the ReLU fused as a prologue (on sm_90 the prologue rule would run it as its own kernel)
    cg = tefuse.build(tefuse.import_onnx(model), "cuda", precision="fp16", prologue=lambda candidate: True)
    (kern,) = [kk for kk in cg.kernels if kk.template in TENSOR_CORE]
    src = kern.source("cuda")
    assert "in_x_ptr" in src and not _bool_vectors_wider_than_4(src)
    assert re.search(r"\*\((float4|half4|uint2)\*\)\(in_x_ptr", src), "the A prologue's loads are no longer vectors"
    compile_to_ptx(src, _ptx_arch(src))
    # numerics of the same graph on llvm (the CPU template), and the template's own tiling on llvm
    x = np.random.default_rng(4).standard_normal((m, k)).astype("float32")
    r = np.where(x > 0, x, (0.1 if act == "LeakyRelu" else 0.0) * x)
    want = r @ (w.T if op == "Gemm" else w)
    got = tefuse.build(tefuse.import_onnx(model), "llvm", precision="fp16").run(x=x)[0]
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def _select_dense(m, n, k, prologue=True):
    b = GraphBuilder()
    x, w, bias = b.input("x", (m, k), "float16"), b.input("w", (n, k), "float16"), b.input("bias", (n,), "float16")
    return b.build(b.relu(b.bias_add(b.dense(b.relu(x) if prologue else x, w), bias, axis=1)))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])  # mma.sync; wgmma (Hopper's untuned dense)
@pytest.mark.parametrize("m,n", [(128, 128), (100, 72)])
def test_select_prologue_and_epilogue_with_every_vector_width(m, n, arch):
    """Both the A copy (a ReLU prologue) and the epilogue store (a ReLU epilogue) under the
    vec_out=8 knob: the CUDA source builds and its PTX compiles; the same schedule run on
    llvm (plain loops) gives numpy's numbers."""
    k = 64
    group = _group(_select_dense(m, n, k))
    lowered = lower_group(group)
    llvm = make_target("llvm")
    t = untuned(lowered.info, make_target(f"cuda:{arch}"))
    space = t.space(lowered.info, make_target(f"cuda:{arch}"))
    cfg = space.from_values({**t.fallback(lowered.info, make_target(f"cuda:{arch}"), space).values, "vec_out": 8})
    cuda = t.compile_target(lowered.info, cfg, make_target(f"cuda:{arch}"))
    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, cuda)
    src = device_compile(sch.mod, cuda, pass_config(cfg["intrin"], cuda)).imports[0].inspect_source()
    assert not _bool_vectors_wider_than_4(src)
    assert ("tefuse_wgmma_" in src) == (arch == "sm_90")
    compile_to_ptx(src, _ptx_arch(src) if arch == "sm_90" else arch)

    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    rng = np.random.default_rng(5)
    x, w, bias = (rng.standard_normal(s).astype("float16") for s in ((m, k), (n, k), (n,)))
    feed = {"x": x, "w": w, "bias": bias}
    dev = tvm.cpu()
    out = tvm.runtime.empty(group.outputs[0].shape, group.outputs[0].dtype, dev)
    lib["main"](*[tvm.runtime.tensor(feed[p.name], dev) for p in lowered.params], out)
    want = np.maximum(np.maximum(x.astype("float32"), 0) @ w.astype("float32").T + bias.astype("float32"), 0)
    assert np.abs(out.numpy().astype("float32") - want).max() <= 1e-2 * np.abs(want).max()


def _output_stores(src: str, out: str):
    """The statements of a CUDA source that store to the output buffer `out`: (vector, scalar)."""
    vector = re.findall(r"\*\((?:half[248]|uint[24]|ushort[24])\*\)\(" + out + r"_ptr \+", src)
    scalar = re.findall(out + r"_ptr\[[^\]]*\] =", src)
    return vector, scalar


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case,out,vec_out", [("gelu", "out_gelu_2", 4), ("gelu", "out_gelu_2", 8),
                                             ("bn_relu", "out_s3_relu", 8)])
def test_an_epilogue_computed_narrower_is_still_stored_in_vectors(case, out, vec_out, arch):
    """GELU's float32 constants (TVM's CUDA codegen prints none 8 wide) and a ReLU's select (no
    bool x8 in CUDA): the epilogue is computed 4 wide into registers, and the output still stored
    `vec_out` wide, never an element (2 bytes) a thread; the PTX compiles."""
    graph = (_gelu_dense(128, 128, 64) if case == "gelu" else
             parse_chain("conv2d(k=128,r=1)+bias+batch_norm+relu", (2, 8, 8, 64), "float16", "NHWC"))
    lowered = lower_group(_group(graph))
    target = make_target(f"cuda:{arch}")
    t = untuned(lowered.info, target)
    space = t.space(lowered.info, target)
    cfg = space.from_values({**t.fallback(lowered.info, target, space).values, "vec_out": vec_out})
    cuda = t.compile_target(lowered.info, cfg, target)
    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, cuda)
    src = device_compile(sch.mod, cuda, pass_config(cfg["intrin"], cuda)).imports[0].inspect_source()
    vector, scalar = _output_stores(src, out)
    assert vector and not scalar, (vector, scalar)
    if case == "bn_relu":  # BN (no rsqrt) vectorizes: computed 4 wide into the registers, not a lane at a time
        assert not re.search(out + r"_local_ptr\[\d+\] =", src)
        # its scale (gamma / sqrt(var + eps)) is per column: computed before the store loop (hoist.py)
        store_loop = src[src.rindex("for (int"):]
        assert "sqrtf" in src and "sqrtf" not in store_loop and re.search(r"float4 inv\d+ =", src)
    assert ("(uint4*)(" + out) in src if vec_out == 8 else ("(half4*)(" + out) in src
    assert not _bool_vectors_wider_than_4(src)
    compile_to_ptx(src, _ptx_arch(src) if arch == "sm_90" else arch)


def _store_bank_conflicts(stride: int) -> int:
    """The worst bank conflict of the fragment stores into a staging tile of row stride `stride`
    (float32 words): TVM's mma store writes C[8 * (e % 4 // 2) + lane // 4, 8 * (e // 4) +
    lane % 4 * 2 + e % 2] for e in 0..7, which nvcc pairs (e, e + 1) into 8-byte stores; an 8-byte
    store is served half a warp at a time, a wavefront per distinct 128-byte line a bank sees."""
    worst = 1
    for e in range(0, 8, 2):
        for half in (range(16), range(16, 32)):
            lines = {}
            for lane in half:
                row, col = 8 * (e % 4 // 2) + lane // 4, 8 * (e // 4) + lane % 4 * 2
                for word in (row * stride + col, row * stride + col + 1):
                    lines.setdefault(word % 32, set()).add(word // 32)
            worst = max(worst, max(len(v) for v in lines.values()))
    return worst


@pytest.mark.parametrize("bn", sorted({t[1] for t in tc.TILES}))
def test_padded_staging_rows_make_the_accumulator_stores_conflict_free(bn):
    assert _store_bank_conflicts(tiles.staging_row_stride(bn)) == 1
    assert _store_bank_conflicts(bn) == 4  # unpadded: four rows of a half warp on the same banks


@pytest.mark.parametrize("intrin,arch,bn", [("wgmma", "sm_90a", 128), ("wgmma", "sm_90a", 64), ("mma", "sm_80", 128),
                                            ("wmma", "sm_80", 64)])
def test_the_staging_tile_rows_are_padded_in_the_kernel(intrin, arch, bn):
    """The padding reaches the CUDA source (a storage_align set before tensorize would be lost)."""
    b = GraphBuilder()
    x, w = b.input("x", (2, 16, 16, 64), "float16"), b.input("w", (bn, 1, 1, 64), "float16")
    y = b.conv2d(x, w, layout="NHWC", weight_layout="OHWI")
    (group,) = fuse_graph(b.build(b.relu(b.bias_add(y, b.input("bias", (bn,), "float16"), axis=3))))
    low = lower_group(group)
    target = make_target(f"cuda:{arch}")
    sch = s_tir.Schedule(low.func)
    wgmma = intrin == "wgmma"
    cfg = dict(BM=128, BN=bn, WM=16 if wgmma else 64, WN=bn if wgmma else bn // 2, BK=64 if wgmma else 32,
               stages=2, intrin=intrin, vec_out=8)
    tc.apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, cfg, target)
    src = device_compile(sch.mod, target, pass_config(intrin, target)).imports[0].inspect_source()
    stride = tiles.staging_row_stride(bn)
    assert stride == bn + 8
    if intrin == "wmma":  # wmma::store_matrix_sync(ptr, frag, ldm, mem_row_major)
        assert re.search(rf"store_matrix_sync\([^;]*, {stride}, nvcuda::wmma::mem_row_major\)", src)
    else:  # the mma layout's row: lane / 4
        assert re.search(rf"\(\(\(int\)threadIdx\.x\) >> 2\) \* {stride}\)", src), src[:2000]


def test_the_space_refuses_pipelines_past_a_blocks_shared_memory():
    """Deep pipelines of big tiles need more shared memory than an sm_90 block may opt into: the
    space refuses them (no tuning trial spent), by the same bytes the build would refuse."""
    from tefuse.codegen.compile import KernelSpec, compile_kernel
    from tefuse.errors import BuildError
    from tefuse.schedules.cuda.gemm.tiles import pipeline_smem_bytes
    from tefuse.target import device_caps

    group = _group(parse_chain("conv2d(k=256,r=3,pad=1)+relu", (8, 28, 28, 256), "float16", "NHWC"))
    low = lower_group(group)
    tgt = make_target("cuda:sm_90")
    t = MmaGemm()
    space = t.space(low.info, tgt)
    optin = device_caps(tgt).smem_optin
    big = space.from_values({**t.fallback(low.info, tgt, space).values, "tile": (128, 128, 64, 64), "bk": 64,
                             "stages": 8})
    need = pipeline_smem_bytes(128, 128, 64, 8, 2, b_rows_along_k(low.info))
    assert need > optin and not space.admits(big.index)
    assert space.admits(space.from_values({**big.values, "stages": 3}).index)
    with pytest.raises(BuildError, match=f"{need} bytes of dynamic shared memory"):
        compile_kernel(KernelSpec(group.name, low.func, low.info, t, big), tgt)
    # the same for an NCHW conv (an OIHW weight: N rows of K), a dense and a batched [K, N] product
    for graph in (parse_chain("conv2d(k=256,r=3,pad=1)+relu", (8, 256, 28, 28), "float16", "NCHW"),
                  _dense(512, 256, 512, "float16"), _dense(512, 256, 512, "float16", batch=2)):
        g = _group(graph)
        low2 = lower_group(g)
        cfg = t.space(low2.info, tgt).from_values(big.values)
        need2 = pipeline_smem_bytes(128, 128, 64, 8, 2, b_rows_along_k(low2.info))
        with pytest.raises(BuildError, match=f"{need2} bytes of dynamic shared memory"):
            compile_kernel(KernelSpec(g.name, low2.func, low2.info, t, cfg), tgt)
