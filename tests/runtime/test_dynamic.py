"""One build over dim ranges: an ONNX CNN with a named batch and a transformer encoder with named
batch and sequence length, built once for llvm, run at several sizes against onnxruntime, saved
and loaded; sizes out of range or inputs that disagree are one DynamicShapeError line."""
import numpy as np
import onnxruntime as ort
import pytest

import tefuse
from tefuse.errors import DynamicShapeError, TefuseError
from tefuse.frontend.onnx import import_onnx
from tefuse.graph.dims import DimRange
from tefuse.runtime.artifact import load, save
from tests.frontend.dynamic_models import HIDDEN, cnn, encoder


def _ort(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _cnn_feeds(rng, n):
    return {"x": rng.standard_normal((n, 3, 8, 8)).astype("float32")}


def _encoder_feeds(rng, b, s):
    return {k: rng.standard_normal((b, s, HIDDEN)).astype("float32") for k in ("x", "pos")}


def _check(cg, sess, feeds):
    got = cg.run(**feeds)
    want = sess.run(None, feeds)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def dynamic_cnn():
    return tefuse.build(import_onnx(cnn("N"), dynamic=True), "llvm", dynamic={"N": "1:4:8"})


@pytest.fixture(scope="module")
def dynamic_encoder():
    return tefuse.build(import_onnx(encoder("B", "S"), dynamic=True), "llvm", dynamic={"B": "1:2:4", "S": "1:8:16"})


def test_cnn_one_build_runs_every_batch_in_range(dynamic_cnn):
    sess, rng = _ort(cnn("N")), np.random.default_rng(0)
    for n in (1, 3, 8):
        _check(dynamic_cnn, sess, _cnn_feeds(rng, n))


def test_cnn_dynamic_build_has_the_exact_builds_kernels(dynamic_cnn):
    exact = tefuse.build(import_onnx(cnn(4)), "llvm")
    assert dynamic_cnn.num_kernels == exact.num_kernels
    assert [k.group.name for k in dynamic_cnn.kernels] == [k.group.name for k in exact.kernels]


def test_encoder_one_build_runs_every_batch_and_length_in_range(dynamic_encoder):
    sess, rng = _ort(encoder("B", "S")), np.random.default_rng(1)
    for b, s in ((1, 1), (2, 5), (4, 16)):
        _check(dynamic_encoder, sess, _encoder_feeds(rng, b, s))


def test_encoder_dynamic_build_has_the_exact_builds_kernels(dynamic_encoder):
    exact = tefuse.build(import_onnx(encoder(2, 8)), "llvm")
    assert dynamic_encoder.num_kernels == exact.num_kernels


def test_inputs_that_disagree_on_a_dim_are_one_line(dynamic_encoder):
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((2, 7, HIDDEN)).astype("float32"),
             "pos": rng.standard_normal((2, 5, HIDDEN)).astype("float32")}
    with pytest.raises(DynamicShapeError) as e:
        dynamic_encoder.run(**feeds)
    msg = str(e.value)
    assert "\n" not in msg and "'S'" in msg and "'pos'" in msg and "'x'" in msg


def test_buffers_planned_for_the_range_max_and_weights_uploaded_once(dynamic_cnn):
    rng = np.random.default_rng(3)
    for n in (2, 8, 5):
        dynamic_cnn.run(**_cnn_feeds(rng, n))
    exact = tefuse.build(import_onnx(cnn(8)), "llvm")
    exact.run(**_cnn_feeds(rng, 8))
    mem, want = dynamic_cnn.memory(), exact.memory()
    assert mem["buffers"] == want["buffers"]
    weights = sum(n.value.nbytes for n in dynamic_cnn.graph.constants if n.value.size > 1)
    assert mem["params"] == want["params"] == weights


def test_saved_dynamic_artefact_keeps_ranges_and_runs_two_sizes(dynamic_encoder, tmp_path):
    path = tmp_path / "encoder.tefuse"
    save(dynamic_encoder, path)
    loaded = load(path)
    assert loaded.dim_ranges == {"B": DimRange(1, 2, 4), "S": DimRange(1, 8, 16)}
    sess, rng = _ort(encoder("B", "S")), np.random.default_rng(4)
    for b, s in ((3, 2), (1, 11)):
        _check(loaded, sess, _encoder_feeds(rng, b, s))
    with pytest.raises(DynamicShapeError) as e:
        loaded.run(**_encoder_feeds(rng, 2, 17))
    msg = str(e.value)
    assert isinstance(e.value, TefuseError) and "\n" not in msg
    assert "'S'" in msg and "'x'" in msg and "1:8:16" in msg


def test_a_symbolic_dim_without_a_range_is_refused_at_build():
    with pytest.raises(DynamicShapeError, match=r"dim 'N' has no range.*--dynamic N=") as e:
        tefuse.build(import_onnx(cnn("N"), dynamic=True), "llvm")
    assert "\n" not in str(e.value)


def test_a_range_for_a_dim_no_input_has_is_refused():
    with pytest.raises(DynamicShapeError, match="'M', which no graph input has"):
        tefuse.build(import_onnx(cnn("N"), dynamic=True), "llvm", dynamic={"N": "1:8", "M": "1:2"})
