"""ONNX indexing ops (Gather, GatherElements, GatherND, ScatterND, ScatterElements, OneHot, ArgMax,
ArgMin, TopK; NonZero refused): tefuse on llvm vs onnxruntime, indices constant or computed at
run time; an embedding lookup's kernels; a tiny exported BertModel end to end."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

import tefuse
from tests.frontend.ort_check import matches_onnxruntime
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime")


def model(nodes, inputs, outputs, inits=None, opset=18):
    """inputs/outputs: (name, elem type, shape); inits: name -> array."""
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return onnx.shape_inference.infer_shapes(m)  # fills the output shapes left as None


def check(m, feeds, exact=True):
    """tefuse (llvm) vs onnxruntime on every output; returns the imported graph and the build."""
    return matches_onnxruntime(m, feeds, rtol=1e-5, atol=1e-5, exact=exact)


def ops(graph):
    return [n.op for n in graph.nodes if n.is_op]


# -- Gather ----------------------------------------------------------------------------------
def test_token_ids_index_an_embedding_table(rng):
    table = rng.standard_normal((30, 8)).astype(np.float32)
    m = model([helper.make_node("Gather", ["table", "ids"], ["y"])], [("ids", T.INT64, [2, 5])],
              [("y", T.FLOAT, [2, 5, 8])], {"table": table})
    ids = rng.integers(-30, 30, (2, 5))  # negative ids count from the end
    graph, _ = check(m, {"ids": ids})
    assert ops(graph) == ["take"]


@pytest.mark.parametrize("axis", [1, -1])
def test_gather_of_run_time_data_at_run_time_indices(rng, axis):
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)],
              [("x", T.FLOAT, [3, 4, 5]), ("i", T.INT32, [2])], [("y", T.FLOAT, None)])
    dim = 4 if axis == 1 else 5
    check(m, {"x": rng.standard_normal((3, 4, 5)).astype(np.float32), "i": np.array([dim - 1, -dim], np.int32)})


@pytest.mark.parametrize("indices, want", [([2], ["slice", "reshape"]), ([[3, 1], [-1, 0]], ["take"]),
                                           ([0, 1, 2, 3], ["slice", "reshape"]), ([3, 1], ["slice", "reshape"]),
                                           ([1, 1], ["take"])])
def test_constant_indices_are_a_slice_when_they_form_one_strided_run(rng, indices, want):
    idx = np.asarray(indices, np.int64)
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [("x", T.FLOAT, [2, 4, 3])],
              [("y", T.FLOAT, None)], {"i": idx})
    graph, _ = check(m, {"x": rng.standard_normal((2, 4, 3)).astype(np.float32)})
    assert [o for o in ops(graph) if o != "reshape" or "reshape" in want] == want


def test_embedding_position_add_and_layer_norm_match_onnxruntime_in_one_kernel(rng):
    """BERT's embeddings: Gather(word table, ids) + Gather(position table, positions), then
    LayerNormalization. Both lookups and the add are layer_norm's prologue (fusion/fuse_ops.py:
    PROLOGUE_OPAQUE), computed in its row reads: one kernel."""
    inits = {"words": rng.standard_normal((40, 16)).astype(np.float32),
             "positions": rng.standard_normal((12, 16)).astype(np.float32),
             "g": rng.standard_normal(16).astype(np.float32), "b": rng.standard_normal(16).astype(np.float32)}
    nodes = [helper.make_node("Gather", ["words", "ids"], ["w"]),
             helper.make_node("Gather", ["positions", "pos"], ["p"]),
             helper.make_node("Add", ["w", "p"], ["e"]),
             helper.make_node("LayerNormalization", ["e", "g", "b"], ["y"], epsilon=1e-12)]
    m = model(nodes, [("ids", T.INT64, [2, 6]), ("pos", T.INT64, [2, 6])], [("y", T.FLOAT, [2, 6, 16])], inits)
    feeds = {"ids": rng.integers(0, 40, (2, 6)), "pos": np.tile(np.arange(6), (2, 1))}
    _, cg = check(m, feeds, exact=False)
    assert [[n.op for n in k.group.nodes] for k in cg.kernels] == [["take", "take", "add", "layer_norm"]]


# -- GatherElements, GatherND ------------------------------------------------------------------
def test_gather_elements_at_run_time_indices(rng):
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
              [("x", T.FLOAT, [3, 4]), ("i", T.INT64, [3, 6])], [("y", T.FLOAT, [3, 6])])
    check(m, {"x": rng.standard_normal((3, 4)).astype(np.float32), "i": rng.integers(-4, 4, (3, 6))})


@pytest.mark.parametrize("batch_dims, idx_shape", [(0, [2, 2]), (1, [2, 3, 1])])
def test_gather_nd_at_run_time_indices(rng, batch_dims, idx_shape):
    m = model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)],
              [("x", T.FLOAT, [2, 3, 4]), ("i", T.INT64, idx_shape)], [("y", T.FLOAT, None)])
    check(m, {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), "i": rng.integers(-2, 2, idx_shape)})


@pytest.mark.parametrize("op, attrs, idx", [("GatherElements", {"axis": 0}, [[0, 5]]),
                                            ("GatherND", {}, [[1, -4]])])
def test_constant_indices_out_of_range_name_the_node(op, attrs, idx):
    m = model([helper.make_node(op, ["x", "i"], ["y"], name="pick", **attrs)], [("x", T.FLOAT, [3, 2])],
              [("y", T.FLOAT, None)], {"i": np.asarray(idx, np.int64)})
    with pytest.raises(ModelImportError, match=rf"node 'pick' \({op}, opset 18\): index (5|-4) is out of range"):
        import_onnx(m)


# -- scatters --------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_at_constant_indices_reads_slot_tables_without_a_scan(rng, reduction):
    """Duplicates (rows 1 and 3 twice) fold in one layer each; `none` has none (distinct rows)."""
    idx = np.array([[1], [3], [-1], [1]], np.int64) if reduction != "none" else np.array([[1], [-1]], np.int64)
    m = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
              [("x", T.FLOAT, [5, 3]), ("u", T.FLOAT, [len(idx), 3])], [("y", T.FLOAT, [5, 3])], {"i": idx})
    graph, _ = check(m, {"x": rng.standard_normal((5, 3)).astype(np.float32),
                         "u": rng.standard_normal((len(idx), 3)).astype(np.float32)}, exact=False)
    assert "scatter_nd" not in ops(graph) and "take" in ops(graph)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd_at_run_time_indices(rng, reduction):
    m = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
              [("x", T.FLOAT, [4, 3, 2]), ("i", T.INT64, [3, 2]), ("u", T.FLOAT, [3, 2])],
              [("y", T.FLOAT, [4, 3, 2])])
    idx = np.array([[0, 1], [3, -1], [1, 0]], np.int64)
    graph, _ = check(m, {"x": rng.standard_normal((4, 3, 2)).astype(np.float32), "i": idx,
                         "u": rng.standard_normal((3, 2)).astype(np.float32)}, exact=False)
    assert "scatter_nd" in ops(graph)


@pytest.mark.parametrize("op, reduction", [("ScatterElements", "add"), ("ScatterElements", "none"),
                                           ("Scatter", None)])
def test_scatter_elements_at_run_time_indices(rng, op, reduction):
    attrs = {"axis": 1} if reduction is None else {"axis": 1, "reduction": reduction}
    m = model([helper.make_node(op, ["x", "i", "u"], ["y"], **attrs)],
              [("x", T.FLOAT, [3, 5]), ("i", T.INT64, [2, 3]), ("u", T.FLOAT, [2, 3])], [("y", T.FLOAT, [3, 5])],
              opset=10 if op == "Scatter" else 18)
    idx = np.array([[0, 4, -2], [1, 2, 3]], np.int64)  # distinct per row: `none` is defined
    check(m, {"x": rng.standard_normal((3, 5)).astype(np.float32), "i": idx,
              "u": rng.standard_normal((2, 3)).astype(np.float32)}, exact=False)


def test_an_unknown_reduction_names_the_node():
    m = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="put", reduction="sum")],
              [("x", T.FLOAT, [3]), ("i", T.INT64, [1, 1]), ("u", T.FLOAT, [1])], [("y", T.FLOAT, [3])])
    with pytest.raises(ModelImportError, match=r"node 'put' \(ScatterND, opset 18\): reduction='sum'"):
        import_onnx(m, check=False)


# -- OneHot, ArgMax/ArgMin, TopK, NonZero ---------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0])
def test_one_hot(rng, axis):
    m = model([helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=axis)],
              [("i", T.INT64, [2, 3]), ("values", T.FLOAT, [2])], [("y", T.FLOAT, None)],
              {"depth": np.array(5, np.int64)})
    check(m, {"i": np.array([[0, 4, -1], [7, -5, 2]], np.int64), "values": np.array([0.5, 2.0], np.float32)})


def test_one_hot_of_a_run_time_depth_asks_for_a_constant():
    m = model([helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="hot")],
              [("i", T.INT64, [3]), ("depth", T.INT64, []), ("values", T.FLOAT, [2])], [("y", T.FLOAT, None)])
    with pytest.raises(ModelImportError, match=r"node 'hot' \(OneHot, opset 18\): depth 'depth' must be a constant"):
        import_onnx(m)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("attrs", [{}, {"axis": -1, "keepdims": 0, "select_last_index": 1}])
def test_arg_reductions(rng, op, attrs):
    m = model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", T.FLOAT, [3, 4, 5])], [("y", T.INT64, None)])
    check(m, {"x": rng.integers(-2, 2, (3, 4, 5)).astype(np.float32)})


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_values_and_indices(rng, largest):
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)],
              [("x", T.FLOAT, [3, 9])], [("v", T.FLOAT, [3, 4]), ("i", T.INT64, [3, 4])],
              {"k": np.array([4], np.int64)})
    x = rng.standard_normal((3, 9)).astype(np.float32)
    x[0, 2] = x[0, 7]  # a tie: the lower index first
    graph, cg = check(m, {"x": x})
    assert ops(graph) == ["topk", "gather_elements"] and cg.num_kernels == 2


def test_topk_k_beyond_the_axis_names_the_node():
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="best")], [("x", T.FLOAT, [2, 3])],
              [("v", T.FLOAT, None), ("i", T.INT64, None)], {"k": np.array([4], np.int64)})
    with pytest.raises(ModelImportError, match=r"node 'best' \(TopK, opset 18\): K=4 outside 1\.\.3"):
        import_onnx(m, check=False)


def test_nonzero_is_refused_by_name_in_one_line():
    m = model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [("x", T.FLOAT, [3])],
              [("y", T.INT64, None)])
    with pytest.raises(ModelImportError) as e:
        import_onnx(m)
    (line,) = [ln for ln in str(e.value).splitlines() if "nz" in ln]
    assert "node 'nz' (NonZero, opset 18): its output shape is the count of nonzero elements" in line


def test_a_constant_nonzero_still_folds():
    m = model([helper.make_node("NonZero", ["c"], ["nz"]), helper.make_node("Cast", ["nz"], ["f"], to=T.FLOAT),
               helper.make_node("Add", ["x", "f"], ["y"])],
              [("x", T.FLOAT, [1, 2])], [("y", T.FLOAT, [1, 2])], {"c": np.array([0, 3, 0, 5], np.float32)})
    check(m, {"x": np.zeros((1, 2), np.float32)})


# -- a tiny BERT exported by torch ------------------------------------------------------------------
def _tiny_bert():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import io

    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64)
    cfg._attn_implementation = "eager"  # (torch's sdpa export adds IsNaN after each softmax)
    bert = transformers.BertModel(cfg).eval()

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask):
            out = self.bert(input_ids=ids, attention_mask=mask)
            return out.last_hidden_state, out.pooler_output

    f = io.BytesIO()
    example = (torch.zeros(2, 8, dtype=torch.int64), torch.ones(2, 8, dtype=torch.int64))
    torch.onnx.export(Outputs(), example, f, input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooler_output"], opset_version=17, dynamo=False)
    return onnx.load_from_string(f.getvalue())


def test_a_tiny_exported_bert_matches_onnxruntime(rng):
    """Word-embedding Gather of the token ids, position ids, the attention mask's arithmetic, in
    fp32 and fp16 (a fully masked sequence included)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's TorchScript exporter is deprecated, and chatty
        m = _tiny_bert()
    graph = import_onnx(m)
    ids = rng.integers(0, 100, (2, 8))
    mask = np.ones((2, 8), np.int64)
    mask[0, 5:] = 0
    mask[1, :] = 0  # fully masked: PyTorch's float32 mask gives uniform attention
    feeds = {"input_ids": ids, "attention_mask": mask}
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for precision, tol in (("fp32", 1e-4), ("fp16", 2e-2)):
        got = tefuse.build(graph, "llvm", precision=precision).run(**feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=precision)
