"""What users find: the facade's names, GraphBuilder's op methods, `tefuse ops`."""
from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

import tefuse
from tefuse.cli import main


def test_the_facade_exports_the_user_api():
    from tefuse import FusionPlan, GraphBuilder, TensorDesc, build, import_onnx
    from tefuse.driver import build as driver_build
    from tefuse.frontend.onnx import import_onnx as onnx_import
    from tefuse.graph.ir import GraphBuilder as IrBuilder
    from tefuse.plan import FusionPlan as PlanFP, TensorDesc as PlanTD

    assert (FusionPlan, TensorDesc, GraphBuilder, build, import_onnx) == (PlanFP, PlanTD, IrBuilder, driver_build,
                                                                         onnx_import)
    assert set(tefuse.__all__) <= set(dir(tefuse))
    for name in tefuse.__all__:
        assert getattr(tefuse, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        tefuse.nope  # noqa: B018


def test_import_tefuse_loads_tvm_only_when_a_name_needs_it():
    code = ("import sys, tefuse; a = 'tvm' in sys.modules; tefuse.TefuseError; b = 'tvm' in sys.modules; "
            "tefuse.GraphBuilder; print(a, b, 'tvm' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["False", "False", "True"], res.stderr


def test_every_op_is_a_graph_builder_method_with_a_real_signature():
    from tefuse.graph.ir import GraphBuilder
    from tefuse.ops import get_op, list_ops

    assert len(list_ops()) >= 50
    for name in list_ops():
        opdef = get_op(name)
        method = GraphBuilder.__dict__.get(name)
        assert inspect.isfunction(method) and method.__name__ == name, name
        assert "<lambda>" not in repr(getattr(GraphBuilder(), name))
        assert name in dir(GraphBuilder())
        params = inspect.signature(method).parameters
        keyword = {p.name: p.default for p in params.values() if p.kind is p.KEYWORD_ONLY}
        assert keyword.pop("name") is None
        assert keyword == opdef.attrs, name
        positional = [p for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        if opdef.num_inputs is None:
            assert [p.kind for p in positional[1:]] == [inspect.Parameter.VAR_POSITIONAL], name
        else:
            assert len(positional) == 1 + opdef.num_inputs, name
        assert opdef.doc and method.__doc__.startswith(opdef.doc), name


def test_generated_methods_build_what_op_builds():
    from tefuse import GraphBuilder

    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    w = b.const(np.ones((4, 3, 3, 3), np.float32), name="w")
    y = b.conv2d(x, w, padding=1, name="c")
    z = b.op("conv2d", x, w, padding=1, name="c2")
    assert y.attrs == z.attrs and y.shape == z.shape == (1, 4, 8, 8)
    assert b.clip(y, max=6.0).attrs == {"min": float("-inf"), "max": 6.0}
    assert b.concat(y, z, axis=1).shape == (1, 8, 8, 8)
    with pytest.raises(tefuse.GraphError, match=r"'r'.*unknown attribute.*'alpha'"):
        b.relu(y, alpha=0.1, name="r")  # errors still name the node
    v = b.conv2d(x=x, weight=w, padding=1)  # inputs by keyword, as the signature shows
    assert v.inputs == [x, w] and v.shape == (1, 4, 8, 8)
    with pytest.raises(AttributeError, match="unknown op 'frobnicate'"):
        b.frobnicate  # noqa: B018
    assert "Node" in repr(inspect.signature(GraphBuilder.relu))


def test_help_shows_the_op_signature_and_doc():
    from tefuse import GraphBuilder

    import pydoc
    text = pydoc.render_doc(GraphBuilder.batch_norm, renderer=pydoc.plaintext)
    assert "batch_norm(self, x, gamma, beta, mean, var, *, axis=1, epsilon=1e-05, name=None)" in text
    assert "Inference batch-norm" in text and "<lambda>" not in text


def test_ops_command_lists_tefuse_and_onnx_ops(capsys):
    from tefuse.frontend.onnx import supported_ops
    from tefuse.ops import list_ops

    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{len(list_ops())} tefuse ops")
    listed = {ln.split()[0] for ln in out.split("\n\n")[0].splitlines()[2:]}
    assert listed == set(list_ops())
    assert f"{len(supported_ops())} ONNX op types imported" in out and "BatchNormalization" in out
    assert main(["ops", "--onnx"]) == 0
    assert capsys.readouterr().out.split() == sorted(supported_ops())
    assert main(["ops", "conv2d"]) == 0
    assert capsys.readouterr().out.startswith("GraphBuilder.conv2d(self, x, weight, *, strides=1")
    assert main(["ops", "nope"]) == 2
