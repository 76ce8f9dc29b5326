"""The layerwise bisection finds the node a build gets wrong, with few builds."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tefuse.bench.bisect import candidates, first_divergence, infer, tefuse_runner, tensor_error
from tefuse.frontend.reference import onnxruntime_outputs

OPS = ["Relu", "Add", "Mul", "Sigmoid", "Sub", "Tanh"]


def chain(n: int = 24) -> onnx.ModelProto:
    """x -> n0 -> n1 -> ... -> n{n-1}: unary and binary (with a constant) ops in a row."""
    inits = [helper.make_tensor("c", TensorProto.FLOAT, [4], [0.5, -0.25, 1.5, 0.75])]
    nodes, prev = [], "x"
    for k in range(n):
        op = OPS[k % len(OPS)]
        ins = [prev, "c"] if op in ("Add", "Mul", "Sub") else [prev]
        nodes.append(helper.make_node(op, ins, [f"t{k}"], name=f"n{k}"))
        prev = f"t{k}"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


FEEDS = {"x": np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)}


def sabotaged(node: str, fail: bool = False):
    """A runner that is onnxruntime with `node` computing Add where it should Sub (or Sub where
    it should Add), or raising when the cut model holds `node`."""
    def run(model, feeds):
        model = onnx.ModelProto.FromString(model.SerializeToString())
        for n in model.graph.node:
            if n.name == node:
                if fail:
                    raise RuntimeError("launch failed")
                n.op_type = {"Add": "Sub", "Sub": "Add"}[n.op_type]
        run.builds += 1
        return onnxruntime_outputs(model, feeds)
    run.builds = 0
    return run


@pytest.mark.parametrize("node", ["n1", "n7", "n16", "n22"])
def test_finds_the_wrong_node(node):
    d = first_divergence(chain(), FEEDS, sabotaged(node))
    assert d is not None and d.node == node and d.tensor == "t" + node[1:]
    assert d.op_type in ("Add", "Sub") and d.error > 1e-4
    assert d.builds <= 3  # 24 candidates, 8 per build


@pytest.mark.parametrize("node", ["n0", "n11", "n23"])
def test_finds_the_node_whose_cut_fails(node):
    """A cut that fails could fail at any of its tensors: the search halves one at a time."""
    run = sabotaged(node, fail=True)
    d = first_divergence(chain(), FEEDS, run)
    assert d is not None and d.node == node and "launch failed" in d.reason and d.error == np.inf
    assert d.builds <= 2 + 5  # the failed cut of 8, then halving 24 candidates


def test_nothing_wrong_is_none():
    assert first_divergence(chain(), FEEDS, sabotaged("none")) is None


def test_tefuse_build_matches_everywhere():
    assert first_divergence(chain(12), FEEDS, tefuse_runner("llvm")) is None


def test_candidates_skip_constants_and_shape_arithmetic():
    """Both fold at import: taken for evidence, they would pass and mislead the search."""
    m = chain(3)
    m.graph.node.insert(0, helper.make_node("Neg", ["c"], ["nc"], name="folded"))
    m.graph.node.extend([helper.make_node("Shape", ["t2"], ["s"], name="shape"),
                         helper.make_node("Cast", ["s"], ["sf"], name="shape_cast", to=TensorProto.FLOAT)])
    names = [c.node for c in candidates(infer(m))]
    assert names == ["n0", "n1", "n2"]


def test_tensor_error():
    w = np.array([1.0, -2.0, 4.0], np.float32)
    assert tensor_error(w, w, "fp32") == (0.0, "")
    assert tensor_error(w + [0, 0, 0.4], w, "fp32")[0] == pytest.approx(0.1)
    assert tensor_error(np.array([1.0, np.inf, 4.0]), w, "fp32")[0] == np.inf
    mask = np.array([0.0, np.finfo(np.float32).min], np.float32)  # a half build clips it to fp16's max
    assert tensor_error(np.array([0.0, -65504.0]), mask, "fp16") == (0.0, "")
    assert tensor_error(mask.astype("float64"), mask, "fp16") == (0.0, "")  # kept whole in float32
    assert tensor_error(np.array([1, 2]), np.array([1, 3]), "fp32")[0] == np.inf
