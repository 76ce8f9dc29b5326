"""Build precision on the CPU: fp16/bf16 graphs keep their float32 interface, convert weights
once, keep statistics in float32, and match numpy within the precision's tolerance."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import BuildError, GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.ir import CONST
from tefuse.graph.precision import convert_precision


def _conv_chain(rng, layout="NCHW"):
    b = GraphBuilder()
    shape = (2, 16, 12, 12) if layout == "NCHW" else (2, 12, 12, 16)
    x = b.input("x", shape)
    w = rng.standard_normal((32, 16, 3, 3) if layout == "NCHW" else (3, 3, 16, 32)).astype("float32") * 0.1
    y = b.conv2d(x, b.const(w, name="w"), padding=1, layout=layout)
    y = b.relu(b.bias_add(y, b.const(rng.standard_normal(32).astype("float32"), name="bias"),
                          axis=1 if layout == "NCHW" else 3))
    return b.build(y), shape


def _mlp_softmax(rng):
    b = GraphBuilder()
    x = b.input("x", (4, 64))
    h = b.relu(b.dense(x, b.const(rng.standard_normal((48, 64)).astype("float32") * 0.2, name="w1")))
    return b.build(b.softmax(b.dense(h, b.const(rng.standard_normal((10, 48)).astype("float32") * 0.2,
                                                name="w2")), axis=-1)), (4, 64)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("make", [_conv_chain, _mlp_softmax], ids=["conv_chain", "mlp_softmax"])
def test_low_precision_matches_fp32_within_tolerance(make, precision):
    rng = np.random.default_rng(0)
    g, shape = make(rng)
    x = rng.standard_normal(shape).astype("float32")
    want = tefuse.build(g, "llvm").run(x)[0]
    cg = tefuse.build(g, "llvm", precision=precision)
    got = cg.run(x)[0]
    assert got.dtype == np.float32 and got.shape == want.shape
    scale = np.abs(want).max()
    err = np.abs(got - want).max() / scale
    assert err < (4e-3 if precision == "fp16" else 3e-2), err  # fp16 has 11 bits, bf16 8
    assert err > 0  # it really computed in lower precision
    assert cg.num_kernels == tefuse.build(g, "llvm").num_kernels  # the casts fused, no kernel of their own


def _mlp_softmax_inside(rng):
    """softmax between two products (attention's place for it), not the graph's output."""
    b = GraphBuilder()
    x = b.input("x", (4, 64))
    h = b.dense(x, b.const(rng.standard_normal((48, 64)).astype("float32") * 0.2, name="w1"))
    p = b.softmax(h, axis=-1)
    return b.build(b.dense(p, b.const(rng.standard_normal((10, 48)).astype("float32") * 0.2, name="w2")))


def test_conversion_keeps_interface_converts_weights_and_leaves_softmax_in_fp16():
    g = _mlp_softmax_inside(np.random.default_rng(1))
    h = convert_precision(g, "fp16")
    assert [i.dtype for i in h.inputs] == ["float32"] and [o.dtype for o in h.outputs] == ["float32"]
    assert [o.name for o in h.outputs] == [o.name for o in g.outputs]
    consts = {n.name: n for n in h.nodes if n.op == "constant"}
    assert consts["w1"].dtype == "float16" and consts["w1"].value.dtype == np.float16
    dense = [n for n in h.nodes if n.op == "dense"]
    assert all(n.dtype == "float16" for n in dense)
    # softmax keeps its statistics in float32 itself (tests/ops/test_reduce.py): fp16 in and out
    (sm,) = [n for n in h.nodes if n.op == "softmax"]
    assert sm.dtype == "float16" and sm.inputs[0].op == "dense"
    x = np.random.default_rng(2).standard_normal((4, 64)).astype("float32")
    want = tefuse.build(g, "llvm").run(x)[0]
    got = tefuse.build(g, "llvm", precision="fp16").run(x)[0]
    assert 0 < np.abs(got - want).max() <= 4e-3 * np.abs(want).max()


def test_a_softmax_output_stays_float32_without_a_cast_kernel():
    """softmax is opaque (no epilogue): as the graph's float32 output it computes in float32
    (its input cast fuses into the dense before it) rather than leave a cast kernel after it."""
    g, _ = _mlp_softmax(np.random.default_rng(1))
    h = convert_precision(g, "fp16")
    (sm,) = [n for n in h.nodes if n.op == "softmax"]
    assert sm.dtype == "float32" and sm.inputs[0].op == "cast" and h.outputs == [sm]


def _reread_outputs(kind: str):
    """`a` an output and read by another output: elementwise (and `a` given twice), by a softmax
    kept in float32 (read through a cast), before or after `a`, or by a reduction; or the input,
    or a constant read by a float32 LayerNorm or by a low-precision add, as an output."""
    b = GraphBuilder()
    x = b.input("x", (2, 4))
    a = b.op("add", x, x, name="a")
    c = b.const(np.array([0.1, -1e3 / 3, 7.3, 1e-3], np.float32), name="c")
    if kind.startswith("const"):
        out = (b.layer_norm(x, c, b.const(np.zeros(4, np.float32))) if kind == "const_ln"
               else b.op("add", x, c))
        return b.build([out, c])
    return b.build({"relu": [b.relu(a), a, a], "softmax": [b.op("softmax", a), a],
                    "softmax_last": [a, b.op("softmax", a)],
                    "reduce": [b.relu(b.op("reduce_sum", a, axes=[1])), a], "input": [b.relu(x), x]}[kind])


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("kind", ["relu", "softmax", "softmax_last", "reduce", "input", "const_ln", "const_add"])
def test_an_output_another_output_reads_keeps_its_name_once(kind, precision):
    """Each output cast back under its own name, read where it was (two nodes named `a` were
    refused as a graph before); an input or a constant given as an output comes back as it was,
    float32 and exact (it came back as its rounded low-precision copy)."""
    g = _reread_outputs(kind)
    xs = np.array([[-1, 2, -3, 4], [0.5, 1, 2, -2]], np.float32) * 1000.1
    want = tefuse.build(g, "llvm").run(xs)
    got = tefuse.build(g, "llvm", precision=precision).run(xs)
    assert [v.dtype for v in got] == [w.dtype for w in want]
    for w, v in zip(want, got):
        np.testing.assert_allclose(v, w, rtol=1e-2, atol=1e-2 * np.abs(w).max())
    if kind in ("input", "const_ln", "const_add"):
        np.testing.assert_array_equal(got[1], want[1])
    h = convert_precision(g, precision)
    assert [o.name for o in h.outputs] == [o.name for o in g.outputs]
    if kind == "relu":
        assert h.outputs[1] is h.outputs[2]


def test_fp32_and_an_fp16_graph_are_left_alone():
    g, _ = _conv_chain(np.random.default_rng(2))
    assert convert_precision(g, "fp32") is g
    b = GraphBuilder()
    x = b.input("x", (1, 8), "float16")
    h = b.build(b.relu(x))
    assert [n.dtype for n in convert_precision(h, "fp16").nodes] == ["float16", "float16"]


def test_unknown_precisions_are_refused_by_name():
    g, _ = _conv_chain(np.random.default_rng(3))
    with pytest.raises(GraphError, match="unknown precision 'fp4'"):
        tefuse.build(g, "llvm", precision="fp4")


def tf32(a: np.ndarray) -> np.ndarray:
    """numpy's TF32 rounding (to nearest, ties away from zero), written apart from the op's."""
    a = np.asarray(a, np.float32)
    mag = np.abs(a).astype(np.float64)
    exp = np.floor(np.log2(np.where(mag > 0, mag, 1)))
    ulp = 2.0 ** (exp - 10)
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.sign(a) * np.floor(mag / ulp + 0.5) * ulp
        return np.where(np.isfinite(a) & (mag > 0), r, a).astype(np.float32)


@pytest.mark.parametrize("make", [_conv_chain, _mlp_softmax], ids=["conv_chain", "mlp_softmax"])
def test_tf32_rounds_the_operands_of_matrix_products_only(make):
    rng = np.random.default_rng(5)
    g, shape = make(rng)
    t = convert_precision(g, "tf32")
    assert {n.attrs.get("math") for n in t.nodes if n.op in ("conv2d", "dense")} == {"tf32"}
    assert all("math" not in n.attrs for n in t.nodes if n.op not in ("conv2d", "dense"))
    assert [n.dtype for n in t.nodes] == [n.dtype for n in g.nodes]  # float32 throughout
    x = rng.standard_normal(shape).astype("float32")
    got = tefuse.build(g, "llvm", precision="tf32").run(x)[0]
    # the same graph with its inputs and weights rounded by numpy, computed in fp32
    consts = {np.asarray(n.value).ndim: np.asarray(n.value) for n in g.nodes if n.op == CONST}
    want32 = tefuse.build(g, "llvm").run(x)[0]
    b = GraphBuilder()
    if make is _conv_chain:
        xi = b.input("x", shape)
        y = b.conv2d(xi, b.const(tf32(consts[4]), name="w"), padding=1)
        y = b.relu(b.bias_add(y, b.const(consts[1], name="bias"), axis=1))
        want = tefuse.build(b.build(y), "llvm").run(tf32(x))[0]
    else:  # a second dense's input is the first's output: rounded inside the graph, not here
        want = None
    scale = np.abs(want32).max()
    if want is not None:
        assert np.abs(got - want).max() <= 1e-5 * scale
    assert 0 < np.abs(got - want32).max() <= 1e-2 * scale  # tf32, not fp32, and close to it


def test_tf32_round_matches_numpy_including_ties_inf_and_nan():
    from tvm import te

    import tvm
    from tefuse.ops.value import round_tf32

    vals = np.array([1.0, 1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 1 + 2**-12, 3.14159265, -2.7182817,
                     1e-30, 6.1e-5, np.finfo(np.float32).max, np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    x = te.placeholder(vals.shape, "float32", name="x")
    y = te.compute(vals.shape, lambda i: round_tf32(x[i]), name="y")
    f = tvm.compile(te.create_prim_func([x, y]), target="llvm")
    out = tvm.runtime.empty(vals.shape, "float32", tvm.cpu())
    f(tvm.runtime.tensor(vals, tvm.cpu()), out)
    got = out.numpy()
    want = tf32(vals)
    assert got[9] == np.inf  # the largest float32 rounds past the largest TF32 value, as cvt.rna does
    np.testing.assert_array_equal(got[~np.isnan(vals)], want[~np.isnan(vals)])
    assert np.isnan(got[12])
    assert got[1] == 1 + 2**-10 and got[3] == -(1 + 2**-10)  # ties away from zero


def test_fusion_plan_compiles_to_one_fp16_kernel_with_float32_arguments():
    from tefuse.plan import FusionPlan, TensorDesc

    rng = np.random.default_rng(4)
    plan = FusionPlan(TensorDesc((1, 8, 10, 10)))
    conv = plan.add_conv(TensorDesc((16, 8, 3, 3)), padding=1)
    bias = plan.add_bias()
    plan.add_activation("relu")
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    w = rng.standard_normal((16, 8, 3, 3)).astype("float32") * 0.2
    bv = rng.standard_normal(16).astype("float32")
    args = plan.new_args()
    args.set_conv(conv, w)
    args.set_bias(bias, bv)
    want = plan.compile("llvm").execute(x, args)
    got = plan.compile("llvm", precision="fp16").execute(x, args)
    assert plan.compiled.num_kernels == 1 and got.dtype == np.float32
    assert 0 < np.abs(got - want).max() / np.abs(want).max() < 4e-3


def test_an_unknown_math_mode_is_refused_by_name():
    b = GraphBuilder()
    x = b.input("x", (4, 8))
    with pytest.raises(GraphError, match="math='TF32': use 'fp32' or 'tf32'"):
        b.dense(x, b.const(np.ones((3, 8), "float32")), math="TF32")


def _dense_layer_norm(rng, dtype="float32", consumed=False):
    """dense -> layer_norm as the graph's output (a transformer's last hidden state), optionally
    also read by a second dense (hidden states returned at every layer)."""
    b = GraphBuilder()
    x = b.input("x", (4, 32), dtype)
    h = b.dense(x, b.const((rng.standard_normal((32, 32)) * 0.2).astype(dtype), name="w1"))
    ln = b.layer_norm(h, b.const(rng.standard_normal(32).astype(dtype), name="g"),
                      b.const(rng.standard_normal(32).astype(dtype), name="beta"))
    outs = [ln]
    if consumed:
        outs.append(b.dense(ln, b.const((rng.standard_normal((8, 32)) * 0.2).astype(dtype), name="w2")))
    return b.build(outs)


@pytest.mark.parametrize("consumed", [False, True], ids=["output", "output_and_consumed"])
def test_a_float32_layer_norm_output_costs_no_extra_kernel(consumed):
    """Kept float32 as an output, layer_norm reads its float32 constants as they were (no fp16
    round trip, no cast kernel each) and a consumer inside the graph gets it cast down."""
    rng = np.random.default_rng(7)
    g = _dense_layer_norm(rng, consumed=consumed)
    x = rng.standard_normal((4, 32)).astype("float32")
    fp32 = tefuse.build(g, "llvm")
    cg = tefuse.build(g, "llvm", precision="fp16")
    assert cg.num_kernels == fp32.num_kernels
    assert [o.dtype for o in convert_precision(g, "fp16").outputs] == ["float32"] * len(g.outputs)
    for got, want in zip(cg.run(x), fp32.run(x)):
        assert got.dtype == np.float32
        assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_an_fp16_graph_ending_in_layer_norm_is_taken_as_it_is():
    g = _dense_layer_norm(np.random.default_rng(8), dtype="float16")
    h = convert_precision(g, "fp16")
    assert all(n.dtype == "float16" for n in h.nodes) and not any(n.op == "cast" for n in h.nodes)
    assert tefuse.build(g, "llvm", precision="fp16").num_kernels == tefuse.build(g, "llvm").num_kernels


# -- attention masks in half precision ---------------------------------------------------------
F32_MIN = float(np.finfo(np.float32).min)  # torch.finfo(torch.float32).min, what exporters write


def _masked_attention(form: str):
    """A small self-attention with an attention mask as exporters write it: `additive`,
    (1.0 - Cast(mask)) * finfo(float32).min added to the scores (BERT); `where_min` and
    `where_inf`, Where(mask, scores, finfo.min / -inf) broadcast over the query axis."""
    from onnx import TensorProto as T, helper, numpy_helper

    n = helper.make_node
    nodes = [n("Transpose", ["x"], ["xt"], perm=[0, 2, 1]), n("MatMul", ["x", "xt"], ["s0"]),
             n("Mul", ["s0", "scale"], ["s"])]
    consts = {"scale": np.float32(0.5), "axes": np.array([1], np.int64)}
    if form == "additive":
        nodes += [n("Cast", ["mask"], ["mf"], to=T.FLOAT), n("Sub", ["one", "mf"], ["inv"]),
                  n("Mul", ["inv", "low"], ["ext"]), n("Unsqueeze", ["ext", "axes"], ["ext3"]),
                  n("Add", ["s", "ext3"], ["masked"])]
        consts.update(one=np.float32(1.0), low=np.float32(F32_MIN))
    else:
        nodes += [n("Cast", ["mask"], ["mb"], to=T.BOOL), n("Unsqueeze", ["mb", "axes"], ["mb3"]),
                  n("Where", ["mb3", "s", "low"], ["masked"])]
        consts.update(low=np.float32(F32_MIN if form == "where_min" else -np.inf))
    nodes += [n("Softmax", ["masked"], ["p"], axis=-1), n("MatMul", ["p", "x"], ["y"])]
    g = helper.make_graph(nodes, "masked_attention",
                          [helper.make_tensor_value_info("x", T.FLOAT, [2, 6, 8]),
                           helper.make_tensor_value_info("mask", T.INT64, [2, 6])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2, 6, 8])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("form", ["additive", "where_min", "where_inf"])
def test_masked_attention_in_half_precision_matches_onnxruntime_fp32(form, precision):
    """Sequence 0 masked after 4 tokens, sequence 1 fully masked. Its rows: uniform attention in
    the float32 model with finfo.min (no NaN, no overflow to -inf in fp16), NaN with -inf, as
    PyTorch and onnxruntime give them. The mask arithmetic and its saturation join the scores'
    kernel: the one kernel more than fp32 is x's cast to fp16 (read by both products)."""
    ort = pytest.importorskip("onnxruntime")
    from tefuse.frontend.onnx import import_onnx

    m = _masked_attention(form)
    x = (np.random.default_rng(9).standard_normal((2, 6, 8)) * 3).astype(np.float32)  # scores up to ~100
    mask = np.array([[1, 1, 1, 1, 0, 0], [0] * 6], np.int64)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "mask": mask})[0]
    graph = import_onnx(m)
    cg = tefuse.build(graph, "llvm", precision=precision)
    got = cg.run(x=x, mask=mask)[0]
    assert got.dtype == np.float32
    if form == "where_inf":
        assert np.isnan(want[1]).all()
    else:
        np.testing.assert_allclose(want[1], np.broadcast_to(x[1].mean(0), (6, 8)), rtol=1e-5, atol=1e-5)
    tol = 1e-2 if precision == "fp16" else 6e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(x).max(), equal_nan=True)
    groups = [[n.op for n in k.group.nodes] for k in cg.kernels]
    assert groups.count(["cast"]) == 1 and len(groups) - 1 == tefuse.build(graph, "llvm").num_kernels


def test_mask_arithmetic_stays_float32_and_saturates_into_fp16():
    """The finfo.min constant is kept as it is, the ops reading it (and the add reading them)
    compute in float32, and their result enters fp16 through a clip to +-65504."""
    from tefuse.frontend.onnx import import_onnx

    h = convert_precision(import_onnx(_masked_attention("additive")), "fp16")
    by_name = {n.name: n for n in h.nodes}
    assert by_name["low"].dtype == "float32" and by_name["low"].value == np.float32(F32_MIN)
    assert by_name["ext"].dtype == by_name["masked"].dtype == "float32"
    (sm,) = [n for n in h.nodes if n.op == "softmax"]
    cast = sm.inputs[0]
    assert sm.dtype == "float16" and cast.op == "cast" and cast.inputs[0].op == "clip"
    assert cast.inputs[0].attrs["min"] == -65504.0 and cast.inputs[0].inputs[0] is by_name["masked"]


@pytest.mark.parametrize("precision, big", [("fp16", 65504.0), ("bf16", 3.3895313892515355e38)])
def test_constants_beyond_the_low_range_saturate_instead_of_overflowing(precision, big):
    from tefuse.graph.precision import LOW, to_low

    v = np.array([2.0 ** 20, F32_MIN, np.inf, -np.inf, np.nan, 1.5, 0.0], np.float32)
    got = to_low(v, LOW[precision]).astype(np.float64)
    want = np.array([min(2.0 ** 20, big), -big, np.inf, -np.inf, np.nan, 1.5, 0.0])
    np.testing.assert_array_equal(got, want)


def test_an_int32_accumulator_is_dequantized_in_float32_under_fp16():
    """An int8 product's int32 accumulator reaches past a half's 65504: its cast to float and its
    dequantize scale stay float32, so fp16 builds of int8 models do not overflow to inf; what
    reads the scaled value (bias, ReLU, a residual add) is fp16, as the float model's activations."""
    import tefuse
    from tefuse.graph import GraphBuilder
    from tefuse.graph.precision import convert_precision

    b = GraphBuilder()
    acc = b.input("acc", (4, 8), "int32")
    y = b.op("mul", b.op("cast", acc, dtype="float32"), b.const(np.full((8,), 1e-3, np.float32), name="s"))
    y = b.relu(b.op("add", y, b.const(np.ones((8,), np.float32), name="bias")))
    g = convert_precision(b.build(y), "fp16")
    cast = next(n for n in g.nodes if n.op == "cast" and n.inputs[0].name == "acc")
    assert cast.dtype == "float32"
    assert {n.op: n.dtype for n in g.nodes if n.op in ("mul", "add", "relu")} == {
        "mul": "float32", "add": "float16", "relu": "float16"}
    a = np.random.default_rng(0).integers(-2_000_000, 2_000_000, (4, 8)).astype(np.int32)
    got = tefuse.build(g, "llvm").run(acc=a)[0]
    want = np.maximum(a * np.float32(1e-3) + 1, 0)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-3)


def test_a_dequantize_read_as_an_activation_gives_the_working_precision_only_for_one_byte_codes():
    """One-byte codes dequantized into an fp16 add (a quantized residual) come out fp16; wider
    codes, and a dequantize that is the model's output, stay float32 and exact."""
    b = GraphBuilder()
    q8, q16, x = b.input("q8", (4,), "int8"), b.input("q16", (4,), "int16"), b.input("x", (4,))
    one = lambda: b.const(np.array(1.0, np.float32))  # noqa: E731
    d8 = b.op("dequantize_linear", q8, one(), b.const(np.array(0, np.int8)))
    d16 = b.op("dequantize_linear", q16, one(), b.const(np.array(0, np.int16)))
    g = b.build([b.add(x, d8), d16])
    got = convert_precision(g, "fp16")
    dtypes = {n.inputs[0].dtype: n.dtype for n in got.nodes if n.op == "dequantize_linear"}
    assert dtypes == {"int8": "float16", "int16": "float32"}
    codes = np.array([30001, 2049, 70, -32767], np.int16)
    out = tefuse.build(g, "llvm", precision="fp16").run(q8=np.ones(4, np.int8), q16=codes, x=np.zeros(4, np.float32))
    np.testing.assert_array_equal(out[1], codes.astype(np.float32))


def test_a_value_only_quantized_again_is_computed_in_float32_from_the_sums_to_the_codes():
    """An int8 product's epilogue that stores codes alone (scale, bias, ReLU, QuantizeLinear):
    nothing is stored in float, so it stays float32 from the int32 sums to the codes, with no
    clip to the half's range and no conversions; a value also stored (an output) is fp16."""
    def graph(stored: bool):
        b = GraphBuilder()
        acc = b.input("acc", (4, 8), "int32")
        y = b.op("mul", b.op("cast", acc, dtype="float32"), b.const(np.full((8,), 1e-3, np.float32), name="s"))
        y = b.relu(b.op("add", y, b.const(np.linspace(-1, 1, 8).astype(np.float32), name="bias")))
        q = b.op("quantize_linear", y, b.const(np.array(0.02, np.float32), name="qs"),
                 b.const(np.array(0, np.int8), name="qz"), dtype="int8", reciprocal=True)
        return b.build([q, y] if stored else [q])

    g = convert_precision(graph(False), "fp16")
    assert {n.op: n.dtype for n in g.nodes if n.op in ("mul", "add", "relu")} == {
        "mul": "float32", "add": "float32", "relu": "float32"}
    assert not [n for n in g.nodes if n.op == "clip"]
    a = np.random.default_rng(0).integers(-3000, 3000, (4, 8)).astype(np.int32)
    y = np.maximum(a * np.float32(1e-3) + np.linspace(-1, 1, 8).astype(np.float32), 0)
    want = np.clip(np.rint(y * (np.float32(1) / np.float32(0.02))), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(tefuse.build(g, "llvm").run(acc=a)[0], want)
    stored = convert_precision(graph(True), "fp16")
    assert {n.op: n.dtype for n in stored.nodes if n.op in ("add", "relu")} == {"add": "float16", "relu": "float16"}


def test_an_add_of_two_convs_sums_is_not_computed_in_float32_before_a_quantize():
    """A stage's first residual add joins its conv's sums with its downsample conv's: fusion
    gives the add to one of them, and the other's output is stored, so neither chain is float32
    (a float32 downsample output would double its bytes); the add reads fp16."""
    b = GraphBuilder()
    a1, a2 = b.input("a1", (4, 8), "int32"), b.input("a2", (4, 8), "int32")
    s = lambda: b.const(np.full((8,), 1e-3, np.float32))  # noqa: E731
    y1 = b.op("mul", b.op("cast", a1, dtype="float32"), s())
    y2 = b.op("mul", b.op("cast", a2, dtype="float32"), s())
    q = b.op("quantize_linear", b.relu(b.op("add", y1, y2)), b.const(np.array(0.02, np.float32)),
             b.const(np.array(0, np.int8)), dtype="int8", reciprocal=True)
    g = convert_precision(b.build(q), "fp16")
    assert {n.op: n.dtype for n in g.nodes if n.op in ("add", "relu")} == {"add": "float16", "relu": "float16"}


def test_a_float32_scale_read_both_as_it_was_and_in_fp16_gets_a_name_of_its_own():
    """The ONNX package's light ResNet-50 (random weights) calibrated on normal inputs: its
    activations grow past fp16's range, so some quantize scales are kept float32 for their
    QuantizeLinear while the residual's DequantizeLinear of the same codes reads them in fp16.
    Both constants once had the one name (a build failed: duplicate node names); the float32 one
    is now renamed and keeps its value."""
    import json
    from pathlib import Path

    from tefuse.bench.scaleout import zoo_resnet50
    from tefuse.driver import prepare_graph
    from tefuse.frontend.onnx import import_onnx
    from tefuse.graph.calibration import Calibration

    cal = Calibration.from_json((Path(__file__).parent / "data" / "light_resnet50_int8_calibration.json").read_text())
    graph = prepare_graph(import_onnx(zoo_resnet50()), "cuda:sm_90", precision="int8", calibration=cal)
    names = [n.name for n in graph.nodes]
    assert len(names) == len(set(names))
    twins = [n for n in graph.nodes if n.op == CONST and n.name.endswith("_x_scale_f32") and n.dtype == "float32"]
    assert twins
    thresholds = json.loads(cal.to_json())["thresholds"]
    for t in twins:
        assert t.value == np.float32(thresholds[t.name[:-len("_x_scale_f32")]] / 127)
    low = {n.name: n.dtype for n in graph.nodes}
    assert any(low.get(t.name[:-len("_f32")]) == "float16" for t in twins)
