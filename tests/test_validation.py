"""Validation at the edge: chain specs and FusionPlan refuse bad values with one clear line
(integers where integers are meant, never truncated), checked when the step is added."""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.cli import main
from tefuse.errors import PlanStateError, TefuseError, UnsupportedFusion
from tefuse.plan import FusionPlan, TensorDesc
from tefuse.plan.spec import parse_chain

BAD_SPECS = {
    "conv2d(k=8.5)": "k must be an integer >= 1, got 8.5",
    "conv2d(k=abc)": "k must be an integer >= 1, got 'abc'",
    "conv2d(r=2.5)": "r must be an integer >= 1, got 2.5",
    "conv2d(k=8,r=2.7)": "r must be an integer >= 1, got 2.7",  # not truncated to 2
    "conv2d(k=8,depthwise=1)": "depthwise=1 gives k=4 (the input channels); k=8 conflicts",
    "conv2d(k=0)": "k must be an integer >= 1, got 0",
    "conv2d(depthwise=1,k=8)": "depthwise=1 gives k=4 (the input channels); k=8 conflicts",
    "conv2d(depthwise=1,groups=2)": "depthwise=1 gives groups=4 (the input channels); groups=2 conflicts",
    "conv2d(k=8))": "bad chain item 'conv2d(k=8))' in 'conv2d(k=8))': unbalanced parentheses",
    "conv2d(k=(8))": "unbalanced parentheses",
    "conv2d(pad=-1-1-1-1)": "pad must be N or N-N or N-N-N-N with integers >= 0, got '-1-1-1-1'",
    "conv2d(pad=-1)": "pad must be N or N-N or N-N-N-N with integers >= 0, got -1",
    "conv2d(pad=1-1-1)": "pad must be N or N-N or N-N-N-N with integers >= 0, got (1, 1, 1)",
    "conv2d(stride=1.5)": "stride must be N or N-N with integers >= 1, got 1.5",
    "conv2d(dilation=0)": "dilation must be N or N-N with integers >= 1, got 0",
    "conv2d(k=8,groups=3)": "groups=3 must divide the input channels (4) and k (8)",
    "conv2d(k=8)+batch_norm(eps=abc)": "eps must be a positive number, got 'abc'",
    "conv2d(k=8)+batch_norm(eps=0)": "eps must be a positive number, got 0",
    "conv2d(k=8)+batch_norm(epsilon=1)": "unknown batch_norm parameter(s) ['epsilon']",
    "conv2d(k=8)+leaky_relu(alpha=abc)": "step 1 (leaky_relu): alpha must be a number, got 'abc'",
    "conv2d(k=8)+leaky_relu(beta=1)": "unknown parameter(s) ['beta']; leaky_relu takes: alpha",
    "conv2d(k=8)+relu(alpha=1)": "unknown parameter(s) ['alpha']; relu takes: none",
    "conv2d(k=8)+gelu(approximate=fast)": "approximate must be 'none' or 'tanh', got 'fast'",
    "conv2d(k=8)+bias(x=1)": "bias takes no parameters, got ['x']",
    "conv2d(k=8)+add(x=1)": "add takes no parameters, got ['x']",
}


@pytest.mark.parametrize("spec", sorted(BAD_SPECS))
def test_bad_spec_is_refused(spec):
    with pytest.raises(TefuseError) as e:
        parse_chain(spec, (1, 4, 8, 8))
    msg = str(e.value)
    assert BAD_SPECS[spec] in msg and "\n" not in msg


@pytest.mark.parametrize("spec", ["conv2d(k=8.5)", "conv2d(k=8))", "conv2d(pad=-1-1-1-1)",
                                  "conv2d(k=8)+leaky_relu(alpha=abc)"])
def test_bad_spec_cli_one_line(spec, capsys):
    assert main(["build", spec, "-i", "1x4x8x8", "--no-db", "--no-cache"]) == 1  # a tefuse error, exit 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("tefuse build: error: ") and BAD_SPECS[spec] in err, err


GOOD_SPECS = {
    "conv2d(k=8,pad=1-2)+relu": (1, 8, 8, 10),
    "conv2d(k=8,pad=0-1-1-0,stride=2-1)+relu": (1, 8, 4, 7),
    "conv2d(depthwise=1,k=4)+relu6": (1, 4, 6, 6),
    "conv2d(depthwise=1,groups=4)": (1, 4, 6, 6),
    "conv2d(k=8,kh=1,kw=3,dilation=2)+gelu(approximate=tanh)": (1, 8, 8, 4),
    "conv2d(k=8)+batch_norm(eps=1e-3)+clip(min=0,max=6)": (1, 8, 6, 6),
    "conv2d(k=8)+leaky_relu(alpha=1)": (1, 8, 6, 6),
}


@pytest.mark.parametrize("spec", sorted(GOOD_SPECS))
def test_good_spec(spec):
    assert parse_chain(spec, (1, 4, 8, 8)).outputs[0].shape == GOOD_SPECS[spec]


def test_depthwise_keeps_its_meaning():
    conv = parse_chain("conv2d(depthwise=1)", (1, 4, 8, 8)).node("s0_conv2d")
    assert conv.attrs["groups"] == 4 and conv.inputs[1].shape == (4, 1, 3, 3)


# -- FusionPlan ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["flaot32", "float", "f32", "float33"])
def test_dtype_typo_refused_at_construction(dtype):
    with pytest.raises(UnsupportedFusion, match=f"unknown dtype '{dtype}'"):
        FusionPlan(TensorDesc((1, 4, 8, 8), dtype))


@pytest.mark.parametrize("shape", [(1, 4, 8.5, 8), (1, 4, "8", 8), 7])
def test_shape_must_be_integers(shape):
    with pytest.raises(UnsupportedFusion, match="shape must be a tuple of integers"):
        TensorDesc(shape)


def _plan():
    return FusionPlan(TensorDesc((1, 4, 8, 8)))


@pytest.mark.parametrize("kw,msg", [
    ({"padding": 1.5}, "padding must be an integer or a tuple of integers, got 1.5"),
    ({"padding": (1, 1.5)}, "padding must be an integer or a tuple of integers"),
    ({"padding": -1}, "padding must be int"),
    ({"stride": 1.5}, "stride must be an integer or a tuple of integers, got 1.5"),
    ({"stride": 0}, "strides and dilation must be >= 1"),
    ({"dilation": "2"}, "dilation must be an integer or a tuple of integers, got '2'"),
    ({"groups": 2.0}, "groups must be a positive integer, got 2.0"),
    ({"groups": True}, "groups must be a positive integer, got True"),
])
def test_conv_params_refused_when_added(kw, msg):
    p = _plan()
    with pytest.raises(UnsupportedFusion, match="step 0 \\(conv2d\\)") as e:
        p.add_conv(TensorDesc((8, 4, 3, 3)), **kw)
    assert msg in str(e.value)


@pytest.mark.parametrize("kind,params,msg", [
    ("leaky_relu", {"alpha": "0.1"}, "alpha must be a number, got '0.1'"),
    ("leaky_relu", {"alpha": "x"}, "alpha must be a number, got 'x'"),  # refused here, not at compile
    ("leaky_relu", {"alpha": None}, "alpha must be a number, got None"),
    ("clip", {"min": 0, "maximum": 6}, "unknown parameter(s) ['maximum']; clip takes: max, min"),
    ("elu", {"alpha": float("nan")}, "alpha must be a number, got nan"),
    ("gelu", {"approximate": True}, "approximate must be 'none' or 'tanh', got True"),
])
def test_activation_params_checked_when_added(kind, params, msg):
    p = _plan()
    p.add_conv(TensorDesc((8, 4, 3, 3)))
    with pytest.raises(UnsupportedFusion) as e:
        p.add_activation(kind, **params)
    assert msg in str(e.value) and str(e.value).startswith("step 1")
    p.add_activation(kind)  # the plan is still usable


@pytest.mark.parametrize("eps", ["1e-5", 0, -1e-3, None])
def test_batch_norm_epsilon(eps):
    p = _plan()
    with pytest.raises(UnsupportedFusion, match="epsilon must be a positive number"):
        p.add_batch_norm(epsilon=eps)


def test_execute_without_args_is_a_clear_error():
    p = _plan()
    p.add_activation("relu")
    p.compile("llvm")
    x = np.ones((1, 4, 8, 8), "float32")
    with pytest.raises(PlanStateError, match="args must be the OperatorArgs from plan.new_args\\(\\), got NoneType"):
        p.execute(x, None)
    np.testing.assert_array_equal(p.execute(x, p.new_args()), x)
