"""The quantized accuracy bench: seeded images, top-1 agreement, and one int8 build on llvm
against onnxruntime."""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tefuse.bench import accuracy


def test_images_are_seeded_batched_and_the_last_batch_padded():
    a = list(accuracy.images(5, 2, seed=3))
    b = list(accuracy.images(5, 2, seed=3))
    assert [n for _, n in a] == [2, 2, 1] and all(x.shape == (2, 3, 224, 224) for x, _ in a)
    assert all(np.array_equal(x, y) for (x, _), (y, _) in zip(a, b))
    assert np.array_equal(a[2][0][1], a[2][0][0])  # padding repeats the batch's first image
    assert not np.array_equal(a[0][0], next(accuracy.images(5, 2, seed=4))[0])


def test_agreement_counts_top1_matches_and_ignores_padding():
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((4, 3)), 4), (rng.standard_normal((4, 3)), 3)]
    same = lambda x: x  # noqa: E731
    a = accuracy.agreement(same, same, batches)
    assert (a.top1, a.rel_err_mean, a.rel_err_max, a.images, len(a.flip_margins)) == (1.0, 0.0, 0.0, 7, 0)
    assert len(a.margins) == 7
    # the reference's top-1 moved for the first image of each batch (the padding's row too: ignored)
    moved = lambda x: np.where(np.arange(len(x))[:, None] == 0, -x, x)  # noqa: E731
    a = accuracy.agreement(same, moved, batches)
    flips = [k for k, (x, _) in enumerate(batches) if np.argmax(x[0]) != np.argmax(-x[0])]
    assert a.images == 7 and a.top1 == (7 - len(flips)) / 7 and a.rel_err_max >= a.rel_err_mean > 0
    # the margins of the images that changed class are the reference's (-x) margins of those rows
    want = sorted(float(accuracy.margins(-batches[k][0][:1])[0]) for k in flips)
    assert sorted(a.flip_margins.tolist()) == want


def test_margins_are_the_top_two_logits_gap_over_the_largest_magnitude():
    m = accuracy.margins(np.array([[1.0, 3.0, -4.0], [2.0, 2.0, 0.0], [0.0, 0.0, 0.0]]))
    assert np.allclose(m, [0.5, 0.0, 0.0])


def _tiny_classifier(path):
    """A 3-channel stem conv (float), a 16-channel conv and a classifier (both quantizable)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype("float32"), n) for n, s in
             [("w1", (16, 3, 4, 4)), ("w2", (16, 16, 3, 3)), ("fc", (16, 10))]]
    nodes = [helper.make_node("Conv", ["input", "w1"], ["c1"], strides=[8, 8]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("MatMul", ["f", "fc"], ["logits"])]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 3, 224, 224])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_an_int8_build_is_compared_with_onnxruntime_over_the_seeded_images(tmp_path):
    from tefuse.calibrate import calibrate
    from tefuse.frontend.onnx import import_onnx

    path = _tiny_classifier(tmp_path / "tiny.onnx")
    graph = import_onnx(onnx.load(str(path)))
    samples = [{"input": x} for x, _ in accuracy.images(8, 4, seed=1)]
    cal = calibrate(graph, samples, "max")
    assert len(cal.thresholds) == 2  # the 16-channel conv and the classifier; the stem stays float
    row = accuracy.accuracy_case("tiny", path, cal, "int8", "llvm", inputs=10, batch=4)
    assert (row.inputs, row.batch) == (10, 4)
    assert (row.extra["quantized_products"], row.extra["quantized_shortcuts"]) == (2, 0)
    assert 0.7 <= row.top1_agreement <= 1.0 and 0 < row.rel_err_mean <= row.rel_err_max < 0.2
    assert row.ok == (row.top1_agreement >= 0.99)
    assert row.extra["changed_class"] == round((1 - row.top1_agreement) * row.inputs)
    assert set(row.extra["reference_margin_quantiles"]) == {"0.01", "0.05", "0.5"}
    out = accuracy.report([row], "python -m tefuse.bench.accuracy --models tiny")
    assert json.loads(json.dumps(out))["summary"]["tiny/int8"]["top1_agreement"] == row.top1_agreement


def test_an_fp16_row_takes_no_calibration_and_reads_the_same_images(tmp_path):
    path = _tiny_classifier(tmp_path / "tiny.onnx")
    row = accuracy.accuracy_case("tiny", path, None, "fp16", "llvm", inputs=8, batch=4)
    assert "calibrator" not in row.extra and row.inputs == 8
    assert 0 < row.rel_err_max < 1e-2  # half precision's error, far below the int8 row's
    assert row.ok == (row.top1_agreement == 1.0)
