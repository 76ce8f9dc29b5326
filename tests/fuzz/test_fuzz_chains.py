"""Property-based fuzzing: random conv chains through FusionPlan and small DAGs through the
graph API, built for llvm and compared with numpy. The default suite runs 150 cases (90 chains,
60 DAGs); `-m slow` runs thousands (TEFUSE_FUZZ_EXAMPLES overrides either)."""
from __future__ import annotations

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import tefuse  # noqa: E402
from tefuse.plan import FusionPlan, TensorDesc  # noqa: E402
from tests import reference as R  # noqa: E402

ACTS = ["relu", "relu6", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "hardswish", "elu", "identity"]
BINS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum}


def _settings(default: int, slow: int):
    n = int(os.environ.get("TEFUSE_FUZZ_EXAMPLES", 0)) or default
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def conv_chains(draw):
    c = draw(st.sampled_from([1, 2, 3, 4, 6]))
    h, w = draw(st.integers(3, 9)), draw(st.integers(3, 9))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dil = draw(st.integers(1, 2))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(4))
    stride = draw(st.integers(1, 2))
    if h + pad[0] + pad[2] < dil * (kh - 1) + 1 or w + pad[1] + pad[3] < dil * (kw - 1) + 1:
        kh = kw = 1
    groups = draw(st.sampled_from([g for g in (1, 2, c) if c % g == 0]))
    k = groups * draw(st.integers(1, 3))
    steps = draw(st.lists(st.sampled_from(["bias", "bn", "act", "bin"]), max_size=3))
    acts = [draw(st.sampled_from(ACTS)) for _ in steps]
    bins = [draw(st.sampled_from(sorted(BINS))) for _ in steps]
    seed = draw(st.integers(0, 2**31 - 1))
    return dict(c=c, h=h, w=w, kh=kh, kw=kw, dil=dil, pad=pad, stride=stride, groups=groups, k=k,
                steps=steps, acts=acts, bins=bins, seed=seed)


def _run_chain(spec):
    rng = np.random.default_rng(spec["seed"])
    x = rng.standard_normal((1, spec["c"], spec["h"], spec["w"])).astype("float32")
    wshape = (spec["k"], spec["c"] // spec["groups"], spec["kh"], spec["kw"])
    wt = rng.standard_normal(wshape).astype("float32")
    plan = FusionPlan(TensorDesc(x.shape))
    hc = plan.add_conv(TensorDesc(wshape), stride=spec["stride"], padding=spec["pad"],
                       dilation=spec["dil"], groups=spec["groups"])
    args = plan.new_args()
    args.set_conv(hc, wt)
    ref = R.conv2d(x.astype(np.float64), wt.astype(np.float64), strides=spec["stride"], padding=spec["pad"],
                   dilation=spec["dil"], groups=spec["groups"])
    last = "conv2d"
    for step, act, op in zip(spec["steps"], spec["acts"], spec["bins"]):
        k = ref.shape[1]
        if step == "bias" and last == "conv2d":
            b = rng.standard_normal(k).astype("float32")
            args.set_bias(plan.add_bias(), b)
            ref = ref + b.reshape(1, -1, 1, 1)
        elif step == "bn":
            g, be, m = (rng.standard_normal(k).astype("float32") for _ in range(3))
            v = (rng.random(k) + 0.5).astype("float32")
            args.set_batch_norm(plan.add_batch_norm(epsilon=1e-3), g, be, m, v)
            ref = R.batch_norm(ref, g, be, m, v, eps=1e-3)
        elif step == "bin":
            o = rng.standard_normal(ref.shape).astype("float32")
            args.set_elementwise(plan.add_elementwise(op), o)
            ref = BINS[op](ref, o)
        else:
            plan.add_activation(act)
            ref = R.UNARY[act](ref)
        last = plan._steps[-1].kind
    plan.compile("llvm")
    return plan.execute(x, args), ref


@pytest.mark.parametrize("n", [int(os.environ.get("TEFUSE_FUZZ_EXAMPLES", 0)) or 90])
def test_fuzz_conv_chains(n):
    @_settings(n, n)
    @given(conv_chains())
    def prop(spec):
        got, ref = _run_chain(spec)
        assert got.shape == ref.shape, spec
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(ref).max())),
                                   err_msg=str(spec))

    prop()


@st.composite
def dags(draw):
    """A small DAG over one or two inputs: unary and binary ops, any value reusable."""
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 6)))
    n_in = draw(st.integers(1, 2))
    ops = []
    for i in range(draw(st.integers(1, 6))):
        avail = n_in + i
        if draw(st.booleans()):
            ops.append(("u", draw(st.sampled_from(["relu", "tanh", "sigmoid", "abs", "neg", "square"])),
                        draw(st.integers(0, avail - 1))))
        else:
            ops.append(("b", draw(st.sampled_from(sorted(BINS))), draw(st.integers(0, avail - 1)),
                        draw(st.integers(0, avail - 1))))
    outs = sorted(set(draw(st.lists(st.integers(n_in, n_in + len(ops) - 1), min_size=1, max_size=2))))
    return shape, n_in, ops, outs, draw(st.integers(0, 2**31 - 1))


def _run_dag(shape, n_in, ops, outs, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(shape).astype("float32") for _ in range(n_in)]
    b = tefuse.GraphBuilder()
    nodes = [b.input(f"x{i}", shape) for i in range(n_in)]
    vals = [x.astype(np.float64) for x in xs]
    for op in ops:
        if op[0] == "u":
            nodes.append(b.op(op[1], nodes[op[2]]))
            vals.append(R.UNARY[op[1]](vals[op[2]]) if op[1] in R.UNARY else
                        {"abs": np.abs, "neg": np.negative, "square": np.square}[op[1]](vals[op[2]]))
        else:
            nodes.append(b.op(op[1], nodes[op[2]], nodes[op[3]]))
            vals.append(BINS[op[1]](vals[op[2]], vals[op[3]]))
    g = b.build([nodes[o] for o in outs])
    got = tefuse.build(g, "llvm").run(*xs)
    return got, [vals[o] for o in outs]


@pytest.mark.parametrize("n", [int(os.environ.get("TEFUSE_FUZZ_EXAMPLES", 0)) or 60])
def test_fuzz_small_dags(n):
    @_settings(n, n)
    @given(dags())
    def prop(case):
        got, want = _run_dag(*case)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=str(case))

    prop()


@pytest.mark.slow
def test_fuzz_many(monkeypatch):
    """Thousands of cases: `python -m pytest -m slow tests/fuzz`."""
    test_fuzz_conv_chains(2000)
    test_fuzz_small_dags(2000)
