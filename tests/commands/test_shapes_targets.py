"""--shape on build, tune and run; `-t cuda` and the GPU present; cuda without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.cli import main
from tefuse.commands import build as B
from tefuse.target import has_gpu

from .models import small_cnn

CHAIN = "conv2d(k=8,r=1)+relu"


@pytest.fixture
def batch_n(tmp_path, tefuse_dirs):
    return str(small_cnn(tmp_path / "cnn_n.onnx", batch="N"))


@pytest.mark.parametrize("command", [["build"], ["run"], ["tune", "--trials", "1"]])
def test_a_symbolic_dim_asks_for_the_shape_option(batch_n, capsys, command):
    assert main([command[0], batch_n, *command[1:]]) == 2
    err = capsys.readouterr().err
    assert "'x' is Nx3x8x8 (--shape x=1x3x8x8)" in err and "input_shapes" not in err


def test_shape_fixes_the_batch_on_build_and_run(batch_n, capsys):
    assert main(["build", batch_n, "--shape", "x=2x3x8x8", "-e", "graph"]) == 0
    assert "%x: float32[2,3,8,8]" in capsys.readouterr().out
    assert main(["build", batch_n, "--shape", "2x3x8x8", "-e", "graph"]) == 0  # the only input: NAME= optional
    assert "%x: float32[2,3,8,8]" in capsys.readouterr().out
    assert main(["run", batch_n, "--shape", "x=4x3x8x8", "--iterations", "1"]) == 0
    assert "output prob: float32[4, 5]" in capsys.readouterr().out


# a tune per batch; the build's --shape tests cover the option by default
@pytest.mark.slow
def test_shape_fixes_the_batch_on_tune(batch_n, tmp_path, capsys):
    log = tmp_path / "t.jsonl"
    assert main(["tune", batch_n, "--shape", "x=2x3x8x8", "--trials", "1", "--tuner", "grid",
                 "--log", str(log), "-j", "1"]) == 0
    from tefuse.tune.database import Database
    assert any("|2x" in r.workload for r in Database(log).records())


@pytest.mark.parametrize("argv,message", [
    (["--shape", "y=1x3x8x8"], "--shape names unknown input(s) ['y']"),
    (["--shape", "x=1x3x8x8", "--shape", "x=2x3x8x8"], "given twice"),
    (["--shape", "x=0x3x8x8"], "expected positive dims"),
    (["-i", "1x3x8x8"], "for an ONNX model use --shape"),
])
def test_bad_shapes_are_usage_errors(batch_n, capsys, argv, message):
    assert main(["build", batch_n, *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_chain_takes_its_shape_from_shape_or_input(capsys):
    for argv in (["-i", "1x4x8x8"], ["--shape", "1x4x8x8"], ["--shape", "x=1x4x8x8"]):
        assert main(["build", CHAIN, *argv, "-e", "graph"]) == 0
        assert "float32[1,4,8,8]" in capsys.readouterr().out


def test_cuda_takes_the_architecture_of_the_gpu_present(monkeypatch):
    monkeypatch.setattr(B, "gpu_arch", lambda: "sm_86")
    assert str(B.resolve_target("cuda").attrs["arch"]) == "sm_86"
    assert str(B.resolve_target("gpu").attrs["arch"]) == "sm_86"
    assert str(B.resolve_target("cuda:sm_80").attrs["arch"]) == "sm_80"  # given: kept
    assert B.resolve_target("llvm").kind.name == "llvm"
    monkeypatch.setattr(B, "gpu_arch", lambda: None)
    assert str(B.resolve_target("cuda").attrs["arch"]) == "sm_90"  # no GPU: the default


def test_gpu_arch_reads_the_compute_version(monkeypatch):
    import tvm

    import tefuse.target

    class Dev:
        compute_version = "8.6"

    monkeypatch.setattr(tefuse.target, "has_gpu", lambda kind="cuda": True)
    monkeypatch.setattr(tvm, "cuda", lambda index=0: Dev())
    assert B.gpu_arch() == "sm_86"
    monkeypatch.setattr(tefuse.target, "has_gpu", lambda kind="cuda": False)
    assert B.gpu_arch() is None


@pytest.mark.skipif(has_gpu("cuda"), reason="checks the message given without a GPU")
def test_running_on_cuda_without_a_gpu_is_one_line(batch_n, capsys):
    assert main(["run", batch_n, "--shape", "x=1x3x8x8", "-t", "cuda"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CUDA GPU on this machine" in err and "-e cuda|ptx" in err
    assert main(["bench", CHAIN, "-t", "cuda"]) == 1
    assert "no CUDA GPU" in capsys.readouterr().err
    # the Python API says so too, instead of TVM's "Device API cuda is not enabled"
    b = tefuse.GraphBuilder()
    x = b.input("x", (2, 3))
    cg = tefuse.build(b.build(b.relu(x)), "cuda")
    with pytest.raises(tefuse.TefuseError, match="compiled for cuda and there is no cuda device here"):
        cg.run(np.ones((2, 3), np.float32))
    assert "__global__" in cg.source("cuda")


def test_emit_dot_draws_one_box_per_kernel(batch_n, capsys):
    import re

    from tefuse.commands.build import load_graph
    from tefuse.fusion import fuse_graph

    assert main(["build", batch_n, "--shape", "x=1x3x8x8", "-e", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph tefuse {") and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}")
    clusters = re.findall(r'subgraph "cluster_\d+" \{\n    label="kernel (\d+): (\w+)"', dot)

    class Args:
        spec, shape, input = batch_n, ["x=1x3x8x8"], None
    graph = load_graph(Args)
    groups = fuse_graph(graph)
    assert [name for _, name in clusters] == [g.name for g in groups] and len(groups) == 6
    declared = re.findall(r'^\s*"([^"]+)" \[', dot, flags=re.M)
    ops = [n.name for n in graph.nodes if n.is_op]
    assert sorted(d for d in declared if d in ops) == sorted(ops)  # each op once, in its box
    for src, dst in re.findall(r'^\s*"([^"]+)" -> "([^"]+)";', dot, flags=re.M):
        assert src in declared and dst in declared
