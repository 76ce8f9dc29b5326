"""`tefuse build`: chain specs to CUDA source / PTX / summary through the real CLI entry."""
import re
import shutil

import pytest

from tefuse.cli import main
from tefuse.codegen.ptx import cuda_kernel_names
from tefuse.plan.spec import parse_chain
from tefuse.errors import TefuseError

CHAINS = ["conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu", "conv2d(k=64,r=3,pad=1)+bias+add+relu"]


@pytest.mark.parametrize("chain", CHAINS)
def test_build_emits_one_cuda_kernel(chain, capsys):
    assert main(["build", chain, "-i", "1x64x56x56", "-t", "cuda", "-e", "cuda", "--no-db", "--no-cache"]) == 0
    src = capsys.readouterr().out
    assert len(cuda_kernel_names(src)) == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_build_emits_ptx(capsys):
    assert main(["build", CHAINS[0], "-i", "1x64x56x56", "-t", "cuda", "-e", "ptx", "--no-db", "--no-cache"]) == 0
    ptx = capsys.readouterr().out
    assert ".target sm_90" in ptx
    assert ptx.count(".entry") == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_build_emits_ptx_of_a_model_with_a_wgmma_kernel(tmp_path, capsys):
    """An fp16 ONNX conv on sm_90: its conv is a wgmma kernel, whose PTX only sm_90a accepts; each
    kernel's PTX is compiled for its own arch (one source for sm_90 failed with nvcc's errors)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = (np.random.default_rng(0).standard_normal((64, 64, 3, 3)) / 24).astype("float32")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64, 14, 14])],
                          [numpy_helper.from_array(w, "w")])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    assert main(["build", str(path), "--precision", "fp16", "-t", "cuda", "-e", "ptx", "--no-db", "--no-cache"]) == 0
    ptx = capsys.readouterr().out
    assert re.search(r"\.target sm_90a\b", ptx) and "wgmma.mma_async" in ptx


def test_split_k_and_no_split_k(capsys):
    """ResNet-50's 512-channel 3x3 conv at batch 1 on cuda: the conv's partial products and their
    sum with the epilogue (two kernels); --no-split-k keeps one."""
    args = ["build", "conv2d(k=512,r=3,pad=1)+bias+relu", "-i", "1x7x7x512", "--layout", "NHWC", "--dtype",
            "float16", "-t", "cuda", "-e", "summary", "--no-db", "--no-cache"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 kernels for 4 ops" in out and "[split_sum, bias_add, relu]" in out
    assert main([*args, "--no-split-k"]) == 0
    out = capsys.readouterr().out
    assert "1 kernels for 3 ops" in out and "split_sum" not in out


def test_split_k_with_a_count(capsys):
    """--split-k N splits a conv the default leaves whole (a 512-deep reduction) into N slices;
    a count below 2 is one clear line from argparse."""
    args = ["build", "conv2d(k=2048,r=1)+bias+relu", "-i", "1x7x7x512", "--layout", "NHWC", "--dtype",
            "float16", "-t", "cuda", "-e", "summary", "--no-db", "--no-cache"]
    assert main(args) == 0
    assert "1 kernels for 3 ops" in capsys.readouterr().out
    assert main([*args, "--split-k", "4"]) == 0
    assert "2 kernels for 4 ops" in capsys.readouterr().out
    assert main([*args, "--split-k", "1"]) == 2
    assert "expected a slice count of 2 or more, got '1'" in capsys.readouterr().err


def test_build_summary_cpu(capsys):
    assert main(["build", "conv2d(k=8,r=1)+relu", "-i", "1x4x8x8", "--no-db", "--no-cache"]) == 0
    assert "1 kernels for 2 ops on llvm" in capsys.readouterr().out


def test_bad_spec_is_a_clear_error(capsys):
    assert main(["build", "conv2d(k=8,r=1)+frobnicate", "-i", "1x4x8x8", "--no-db"]) == 1
    assert "unknown activation 'frobnicate'" in capsys.readouterr().err


def test_parse_chain_params():
    g = parse_chain("conv(k=32,r=3,pad=0-1-1-0,stride=2)+add+leaky_relu(alpha=0.2)", (1, 8, 16, 16))
    conv = g.node("s0_conv2d")
    assert conv.attrs["padding"] == (0, 1, 1, 0) and conv.attrs["strides"] == 2
    assert g.outputs[0].attrs["alpha"] == 0.2 and g.outputs[0].shape == (1, 32, 8, 8)
    with pytest.raises(TefuseError, match="key=value"):
        parse_chain("conv2d(3)", (1, 8, 16, 16))


@pytest.mark.parametrize("attention,want", [("auto", 1), ("unfused", 0)])
def test_attention_option(tmp_path, capsys, monkeypatch, attention, want):
    """An fp16 MultiheadAttention export (head dim 16) on cuda: one flash-attention kernel by
    default; --attention unfused keeps scores, softmax and product."""
    import numpy as np
    import onnx

    import tests.frontend.test_onnx_attention as mha

    for name, value in dict(B=1, L=20, H=2, D=16, E=32).items():
        monkeypatch.setattr(mha, name, value)
    path = tmp_path / "mha.onnx"
    onnx.save(mha.mha_block(np.random.default_rng(0)), str(path))
    assert main(["build", str(path), "--precision", "fp16", "-t", "cuda", "-e", "summary", "--no-db",
                 "--no-cache", "--attention", attention]) == 0
    out = capsys.readouterr().out
    assert out.count("[flash_attention") == want
    assert ("softmax" in out) is (want == 0)


HOPPER_CHAIN = [CHAINS[0], "-i", "16x56x56x64", "--layout", "NHWC", "--precision", "fp16",
                "--no-db", "--no-cache"]


def test_a_hopper_fp16_chain_declares_its_conv_weight_ohwi(capsys):
    """The chain's graph for sm_90 is the one its FusionPlan compiles: the weight input OHWI, the
    conv reading it so (the wgmma template's B, K-major); for sm_80 it stays HWIO."""
    assert main(["build", *HOPPER_CHAIN, "-t", "cuda:sm_90", "-e", "graph"]) == 0
    assert re.search(r"s0_weight\W.*float16\[64,3,3,64\]", capsys.readouterr().out)
    assert main(["build", *HOPPER_CHAIN, "-t", "cuda:sm_80", "-e", "graph"]) == 0
    assert re.search(r"s0_weight\W.*float16\[3,3,64,64\]", capsys.readouterr().out)


@pytest.mark.parametrize("options, want", [
    (["--precision", "fp16"], r"float16\[64,3,3,64\]"), (["--precision", "bf16"], r"bfloat16\[64,3,3,64\]"),
    (["--precision", "fp16", "--dtype", "float32"], r"float32\[3,3,64,64\]"),  # float32 kept: cast in the kernel
    (["--precision", "tf32"], r"float32\[64,3,3,64\]")])
def test_a_chains_tensors_take_the_precisions_type_unless_dtype_names_one(capsys, options, want):
    """`--precision fp16` alone builds an fp16 chain (a FusionPlan's fp16 descriptors), whose weight
    Hopper's wgmma reads OHWI; an explicit --dtype float32 keeps float32 tensors, cast in the kernel."""
    args = [CHAINS[0], "-i", "16x56x56x64", "--layout", "NHWC", *options, "--no-db", "--no-cache"]
    assert main(["build", *args, "-t", "cuda:sm_90", "-e", "graph"]) == 0
    assert re.search(r"s0_weight\W.*" + want, capsys.readouterr().out)


@pytest.mark.slow
def test_a_hopper_fp16_chain_builds_to_wgmma(capsys):
    assert main(["build", *HOPPER_CHAIN, "-t", "cuda:sm_90", "-e", "cuda"]) == 0
    src = capsys.readouterr().out
    assert len(cuda_kernel_names(src)) == 1 and "wgmma" in src


def test_horizontal_option_merges_independent_kernels(tmp_path, capsys, monkeypatch):
    """--horizontal: three independent branches of a model, one launch; --no-horizontal wins over
    TEFUSE_HORIZONTAL=1."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in ("Relu", "Sigmoid", "Tanh")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info(op.lower(), TensorProto.FLOAT, [2, 8])
                           for op in ("Relu", "Sigmoid", "Tanh")])
    path = tmp_path / "branches.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    args = ["build", str(path), "--no-db", "--no-cache"]
    assert main(args + ["--horizontal"]) == 0
    assert "1 kernels for 3 ops on llvm" in capsys.readouterr().out
    monkeypatch.setenv("TEFUSE_HORIZONTAL", "1")
    assert main(args + ["--no-horizontal"]) == 0
    assert "3 kernels for 3 ops on llvm" in capsys.readouterr().out
    assert main(args) == 0
    assert "1 kernels for 3 ops on llvm" in capsys.readouterr().out


def test_siblings_and_its_older_spelling_sibling_convs(tmp_path, capsys):
    """Two 1x1 convs (with relu) on one input, concatenated: one wide conv kernel with
    --siblings (or --sibling-convs); a kernel each by default."""
    from tests.commands.models import sibling_convs

    path = tmp_path / "siblings.onnx"
    sibling_convs(path)
    args = ["build", str(path), "-t", "llvm", "-e", "summary", "--no-db", "--no-cache"]
    assert main([*args, "--sibling-convs"]) == 0
    merged = capsys.readouterr().out
    assert main(args) == 0
    apart = capsys.readouterr().out
    count = lambda out: int(re.search(r"(\d+) kernels for", out).group(1))  # noqa: E731
    assert count(merged) == count(apart) - 1, (merged, apart)
    assert main([*args, "--siblings"]) == 0  # the name that says Linears merge too
    assert count(capsys.readouterr().out) == count(merged)
