"""The CUDA cross-thread reduction template (schedules/gpu/reduction.py), without a GPU:
reduce / softmax / pool chains build to one kernel whose reduction is a warp-shuffle
allreduce, sampled configs of the space apply and generate code, the fallback compiles to
sm_90 PTX."""
from __future__ import annotations

import random
import re
import shutil

import numpy as np
import pytest
from tvm import s_tir

import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.compile import compile_module
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names, ptx_entries
from tefuse.tune.task import extract_tasks

TEMPLATE = "cuda_cross_thread_reduction"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
SHFL = re.compile(r"__shfl_(down_)?sync")


def chain(op, shape, dtype="float32", **attrs):
    """scale (prologue) -> op -> relu (epilogue); softmax, layer_norm and group_norm_rows alone (they take no
    epilogue; a norm's prologue is tested with BERT's embeddings below)."""
    b = GraphBuilder()
    x = b.input("x", shape, dtype)
    if op.endswith("softmax"):
        return b.build(b.op(op, x, **attrs))
    if op == "layer_norm":
        d = shape[attrs.get("axis", -1)]
        rng = np.random.default_rng(0)
        scale, bias = (b.const(rng.standard_normal(d).astype(dtype)) for _ in range(2))
        return b.build(b.op(op, x, scale, bias, **attrs))
    if op == "group_norm_rows":
        scale = b.const(np.ones(shape[1], dtype))
        return b.build(b.op(op, x, scale, scale, **attrs))
    y = b.op(op, b.mul(x, b.const(np.array(0.5, dtype))), **attrs)
    return b.build(b.relu(y))


CHAINS = [
    pytest.param(("reduce_sum", (8, 64), dict(axes=(1,))), id="sum_rows"),
    pytest.param(("reduce_mean", (2, 64, 56, 56), dict(axes=(2, 3), keepdims=True)), id="mean_hw3136"),
    pytest.param(("reduce_sum", (2, 49, 2048), dict(axes=(1, 2))), id="sum_49x2048"),
    pytest.param(("reduce_max", (6, 5, 33), dict(axes=(0, 2))), id="max_outer_inner"),
    pytest.param(("reduce_sum", (5, 7), dict(axes=None)), id="sum_all"),
    pytest.param(("reduce_mean", (4, 130), dict(axes=(1,)), "float16"), id="mean_fp16"),
    pytest.param(("softmax", (64, 10), dict()), id="softmax_64x10"),
    pytest.param(("softmax", (3, 1000), dict()), id="softmax_3x1000"),
    pytest.param(("softmax", (4, 10, 6), dict(axis=1)), id="softmax_axis1"),
    pytest.param(("log_softmax", (5, 40), dict()), id="log_softmax"),
    pytest.param(("softmax", (8, 96), dict(), "float16"), id="softmax_fp16"),
    pytest.param(("global_avg_pool2d", (1, 256, 7, 7), dict()), id="global_avg_pool"),
    pytest.param(("layer_norm", (2, 197, 768), dict()), id="layer_norm_vit"),
    pytest.param(("layer_norm", (16, 96), dict(), "float16"), id="layer_norm_fp16"),
]
ALONE = ("softmax", "log_softmax", "layer_norm")  # no relu epilogue in their chains


def _unpack(case):
    op, shape, attrs = case[:3]
    return op, shape, attrs, (case[3] if len(case) > 3 else "float32")


@pytest.fixture(scope="module")
def built():
    cache = {}

    def get(case):
        key = repr(case)
        if key not in cache:
            op, shape, attrs, dtype = _unpack(case)
            g = chain(op, shape, dtype, **attrs)
            cache[key] = (g, tefuse.build(g, "cuda"))
        return cache[key]

    return get


@pytest.mark.parametrize("case", CHAINS)
def test_chain_is_one_cross_thread_kernel(built, case):
    g, cg = built(case)
    assert cg.num_kernels == 1
    (k,) = cg.kernels
    assert k.template == TEMPLATE and k.config_source == "fallback"
    src = k.source("cuda")
    (name,) = cuda_kernel_names(src)
    assert SHFL.search(src), "no warp-shuffle allreduce in the kernel"
    # the kernel reads the input and writes the output: no global buffer in between
    params = re.search(rf"\b{name}\s*\(([^)]*)\)\s*\{{", src).group(1)
    assert len(re.findall(r"\*", params)) == (4 if case[0] == "layer_norm" else 2), params  # + scale, bias
    if case[0] not in ALONE:  # the relu epilogue runs in the kernel
        # relu is max(x, 0) or, NaN-propagating, x < 0 ? 0 : x (a select / condval)
        assert re.search(r"= max\(.*0x0p\+0f|< (__float2half_rn\()?0x0p\+0f", src), "no relu in the kernel"


def test_softmax_is_two_allreduces_in_one_kernel(built):
    _, cg = built(("softmax", (3, 1000), {}))
    src = cg.source("cuda")
    assert len(cuda_kernel_names(src)) == 1
    # max then exp-sum, each reduced across threads, then the output, in one kernel
    assert len(re.findall(r"__shfl_down_sync\(mask\w*\[0\], \w+\[0\], 16, 32\)", src)) >= 2
    assert "expf" in src and "__syncthreads" in src


def test_layer_norm_is_two_allreduces_in_one_kernel(built):
    """The row's sum, then its centred sum of squares, each reduced across threads, then the
    output (rsqrt, scale, bias), in one kernel."""
    _, cg = built(("layer_norm", (2, 197, 768), {}))
    src = cg.source("cuda")
    assert len(cuda_kernel_names(src)) == 1
    assert len(re.findall(r"__shfl_down_sync\(mask\w*\[0\], \w+\[0\], 16, 32\)", src)) >= 2
    assert "rsqrtf" in src


def test_an_embedding_lookup_is_read_inside_the_layer_norm_kernel():
    """BERT's embeddings (three gathers by int64 ids, two adds, LayerNorm) are one CUDA kernel:
    the norm's row reads index the tables by the ids (fusion/fuse_ops.py: PROLOGUE_OPAQUE)."""
    from tests.fusion.test_fuse_ops import bert_embeddings

    g, _, _ = bert_embeddings(np.random.default_rng(0))
    cg = tefuse.build(g, "cuda:sm_90", cache=None)
    (k,) = cg.kernels
    assert k.group.anchor.op == "layer_norm" and k.template == TEMPLATE
    src = cg.source("cuda")
    assert len(cuda_kernel_names(src)) == 1
    assert re.search(r"int64_t\* __restrict__ in_ids", src) and re.search(r"in_words\w*\[", src)
    assert len(re.findall(r"__shfl_down_sync\(mask\w*\[0\], \w+\[0\], 16, 32\)", src)) >= 2
    if shutil.which("nvcc") is not None:
        ptx = compile_to_ptx(src, "sm_90")
        assert ptx_entries(ptx) == cuda_kernel_names(src) and "shfl.sync" in ptx


def test_sampled_configs_apply_to_a_norm_with_an_embedding_prologue():
    """The prologue inlined into the norm's three row reads: every sampled config still applies
    and generates one kernel."""
    from tests.fusion.test_fuse_ops import bert_embeddings

    g, _, _ = bert_embeddings(np.random.default_rng(0), batch=3, length=5, width=200)
    (t,) = extract_tasks(g, "cuda")
    assert t.info.anchor_kind == "norm" and t.info.stage("data") in t.info.inline_blocks
    space, tmpl = t.space(), t.template()
    for i in random.Random(len(space)).sample(range(len(space)), min(6, len(space))):
        cfg = space.get(i)
        if not space.admits(i):
            continue
        sch = s_tir.Schedule(t.func)
        tmpl.apply(sch, t.info, cfg, t.target)
        (dev,) = [m for m in compile_module(sch.mod, t.target).imports if m.kind == "cuda"]
        assert len(cuda_kernel_names(dev.inspect_source())) == 1, cfg.values


def test_mean_epilogue_in_kernel(built):
    _, cg = built(("reduce_mean", (2, 64, 56, 56), {"axes": (2, 3), "keepdims": True}))
    src = cg.source("cuda")
    assert re.search(r"3\.136000e\+03", src), "mean's divide is not in the kernel"


def _task(case):
    op, shape, attrs, dtype = _unpack(case)
    (t,) = [t for t in extract_tasks(chain(op, shape, dtype, **attrs), "cuda")
            if t.info.anchor_kind != "injective"]
    return t


def test_fallback_short_and_long():
    short = _task(("softmax", (64, 10), {}))
    assert short.template().name == TEMPLATE
    fb = short.fallback()
    assert fb["red_threads"] == 16 and fb["red_threads"] * fb["rows"] >= 32
    long_ = _task(("reduce_sum", (2, 49, 2048), {"axes": (1, 2)}))
    assert long_.fallback()["red_threads"] == 1024  # two rows: one block of 1024 per row
    gap = _task(("reduce_mean", (32, 64, 56, 56), {"axes": (2, 3)}))
    assert gap.fallback()["red_threads"] == 512
    # 3x3 pooling: a thread per output (the serial mode), as the generic template did
    pool = _task(("max_pool2d", (1, 8, 9, 9), {"kernel": 3, "strides": 2, "padding": 1}))
    assert pool.info.anchor_kind == "pool" and pool.fallback()["red_threads"] == 1


SAMPLED = [
    ("reduce_mean", (2, 64, 56, 56), {"axes": (2, 3), "keepdims": True}),
    ("reduce_max", (6, 5, 33), {"axes": (0, 2)}),
    ("softmax", (7, 100), {}),
    ("softmax", (4, 10, 6), {"axis": 1}),
    ("layer_norm", (6, 200), {}),
    ("group_norm_rows", (2, 64, 32, 32), {"groups": 32}),
    ("group_norm_rows", (3, 12, 7, 5), {"groups": 12}),
    ("max_pool2d", (1, 8, 9, 9), {"kernel": 3, "strides": 2, "padding": 1}),
    ("global_avg_pool2d", (1, 7, 7, 64), {"layout": "NHWC"}),
]


@pytest.mark.parametrize("case", SAMPLED, ids=lambda c: f"{c[0]}_{'x'.join(map(str, c[1]))}")
def test_sampled_configs_apply_and_generate(case):
    t = _task(case)
    space, tmpl = t.space(), t.template()
    assert tmpl.name == TEMPLATE
    idx = random.Random(len(space)).sample(range(len(space)), min(8, len(space)))
    for i in idx:
        cfg = space.get(i)
        sch = s_tir.Schedule(t.func)
        tmpl.apply(sch, t.info, cfg, t.target)
        mod = compile_module(sch.mod, t.target)
        (dev,) = [m for m in mod.imports if m.kind == "cuda"]
        src = dev.inspect_source()
        assert len(cuda_kernel_names(src)) == 1, cfg.values
        cross = cfg["red_threads"] > 1
        assert bool(SHFL.search(src)) == cross, cfg.values


@needs_nvcc
@pytest.mark.parametrize("case", [("softmax", (64, 10), {}),
                                  ("reduce_sum", (2, 49, 2048), {"axes": (1, 2)}),
                                  ("reduce_mean", (2, 64, 56, 56), {"axes": (2, 3), "keepdims": True})],
                         ids=["softmax_short", "sum_long", "mean_3136"])
def test_fallback_compiles_to_sm90_ptx(built, case):
    _, cg = built(case)
    src = cg.source("cuda")
    ptx = compile_to_ptx(src, "sm_90")
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M)
    assert ptx_entries(ptx) == cuda_kernel_names(src)
    assert "shfl.sync" in ptx


def test_fallback_fills_the_targets_sms():
    """Rows per block shrink until a wave of blocks covers the target's SMs (DeviceCaps): 960
    softmax rows of 8 per block are 120 blocks, under an H100's 132 SMs but over an A100's 108."""
    from tefuse.target import make_target

    task = _task(("softmax", (960, 128), {}))
    tmpl = task.template()
    space = tmpl.space(task.info, make_target("cuda"))
    h100 = tmpl.fallback(task.info, make_target("cuda"), space)
    a100 = tmpl.fallback(task.info, make_target("cuda:sm_80"), space)
    assert (h100["red_threads"], h100["rows"]) == (32, 4)
    assert (a100["red_threads"], a100["rows"]) == (32, 8)


def test_lrn_is_its_own_anchor_kind():
    task = _task(("lrn", (1, 8, 4, 4), {}))
    assert task.info.anchor_kind == "lrn" and task.template().name == TEMPLATE
    assert task.info.geometry.window and task.fallback()["red_threads"] == 1


@pytest.mark.parametrize("shape", [(2, 12, 197, 197), (6, 4, 10, 33), (2, 4, 8, 16)],
                         ids=["vit_scores", "three_row_axes", "powers_of_two"])
def test_row_splits_tvm_refuses_are_refused_by_the_space(shape):
    """On these shapes of three row axes a config the space admits applies (exactly the refused
    ones fail on ViT's scores; the rule may refuse a few that would work elsewhere), on CUDA's
    warps of 32 and ROCm's of 64; the fallback is admitted."""
    from tefuse.schedules.gpu.reduction import CudaCrossThreadReduction
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph
    from tefuse.target import make_target

    (group,) = fuse_graph(chain("softmax", shape))
    low = lower_group(group)
    tmpl = CudaCrossThreadReduction()
    for target in (make_target("cuda"), make_target("rocm")):
        space = tmpl.space(low.info, target)
        refused = failed = 0
        for i in range(len(space)):
            cfg = space.get(i)
            if cfg["unroll"] not in (0, 16):  # unrolling does not change whether it applies
                continue
            try:
                tmpl.apply(s_tir.Schedule(low.func), low.info, cfg, target)
                ok = True
            except Exception:
                ok = False
            admitted = space.admits(i)
            assert ok or not admitted, f"{target.kind.name}: {cfg.values} admitted but refused by TVM"
            refused += not admitted
            failed += not ok
        if shape == (2, 12, 197, 197):
            assert refused == failed > 0
        fb = tmpl.fallback(low.info, target, space)
        assert space.admits(fb.index)
        tmpl.apply(s_tir.Schedule(low.func), low.info, fb, target)


@pytest.mark.parametrize("op,shape,axis", [("softmax", (12, 197, 2, 33), 3), ("layer_norm", (3, 24, 7, 2), 0),
                                           ("softmax", (64, 5, 8, 16), 2)])
def test_an_untuned_build_takes_fewer_rows_where_the_fallback_split_is_refused(op, shape, axis, request):
    """Splits TVM refuses that no space rule captures (found by review): the fallback does not
    apply, and the build takes the same config with fewer rows a block instead of failing. The
    ROCm build links with ROCm's toolchain (the `toolchain` fixture: skips without it)."""
    from tefuse.codegen.lower import lower_group
    from tefuse.codegen.schedule import ScheduleChoice, apply_choice
    from tefuse.errors import BuildError
    from tefuse.fusion import fuse_graph
    from tefuse.schedules.gpu.reduction import CudaCrossThreadReduction
    from tefuse.target import make_target

    (group,) = fuse_graph(chain(op, shape, axis=axis))
    low = lower_group(group)
    tmpl = CudaCrossThreadReduction()
    target = make_target("cuda")
    fb = tmpl.fallback(low.info, target, tmpl.space(low.info, target))
    with pytest.raises(Exception):
        tmpl.apply(s_tir.Schedule(low.func), low.info, fb, target)
    _, used = apply_choice(low, target, ScheduleChoice(tmpl, fb, "fallback"))
    assert used.config["rows"] < fb["rows"] and used.config["red_threads"] == fb["red_threads"]
    with pytest.raises(BuildError, match="failed to apply"):  # a tuned record is taken as it is
        apply_choice(low, target, ScheduleChoice(tmpl, fb, "tuned"))
    assert tefuse.build(chain(op, shape, axis=axis), "cuda").num_kernels == 1
    request.getfixturevalue("toolchain")
    assert tefuse.build(chain(op, shape, axis=axis), "rocm").num_kernels == 1


def _norm_linear_residual(rows=256, width=256):
    """A transformer's LayerNorm -> Linear -> residual add, float32 for a calibrated build: the
    norm's rows are read by the Linear (quantized, in int8 / float8) and by the add (float)."""
    rng = np.random.default_rng(7)
    b = GraphBuilder()
    x = b.input("x", (rows, width))
    y = b.layer_norm(x, b.const(rng.uniform(0.5, 1.5, width).astype("f4")),
                     b.const(rng.normal(0, 0.1, width).astype("f4")))
    w = b.const((rng.standard_normal((width, width)) / 16).astype("f4"))
    return b.build(b.add(b.dense(y, w, name="fc"), y))


NORM_CAL = {"fc": 4.0}


@needs_nvcc
@pytest.mark.parametrize("precision", ["int8", "fp8"])
def test_a_layer_norm_kernel_also_writes_the_codes_of_its_rows(precision):
    """Fusion's quantized outputs for a norm: the LayerNorm's kernel writes its rows (read by the
    residual add) and their QuantizeLinear (read by the Linear), computed from the row values it
    stored; no kernel is a QuantizeLinear alone, and the kernel compiles."""
    from tefuse.graph.calibration import Calibration

    cg = tefuse.build(_norm_linear_residual(), "cuda:sm_90", precision=precision,
                      calibration=Calibration("max", NORM_CAL))
    (k,) = [k for k in cg.kernels if any(n.op == "layer_norm" for n in k.group.nodes)]
    assert k.template == TEMPLATE and [n.op for n in k.group.nodes][-1] == "quantize_linear"
    assert [o.dtype for o in k.group.outputs] == ["float16", "int8" if precision == "int8" else "uint8"]
    assert not any([n.op for n in j.group.nodes] == ["quantize_linear"] for j in cg.kernels)
    src = k.source("cuda")
    value = re.search(r"half\* __restrict__ (out_\w+)_ptr", src).group(1)
    codes = re.search(r"(?:signed char|uchar)\* __restrict__ (out_\w+)_ptr", src).group(1)
    assert len(re.findall(rf"{codes}_ptr\[", src)) == 1  # stored once an element
    assert re.search(rf"=[^;]*\b{value}_ptr\[", src)  # from the stored row, read back, not recomputed
    assert ptx_entries(compile_to_ptx(src, "sm_90"))


@pytest.mark.parametrize("precision", ["int8", "fp8"])
def test_a_layer_norm_with_its_codes_computes_what_one_kernel_an_op_does(precision):
    from tefuse.graph.calibration import Calibration

    cal = Calibration("max", NORM_CAL)
    g = _norm_linear_residual(64, 128)
    fused = tefuse.build(g, "llvm", precision=precision, calibration=cal)
    (k,) = [k for k in fused.kernels if any(n.op == "layer_norm" for n in k.group.nodes)]
    assert len(k.group.outputs) == 2
    alone = tefuse.build(g, "llvm", precision=precision, calibration=cal, fuse=False)
    x = np.random.default_rng(3).standard_normal((64, 128)).astype(np.float32)
    np.testing.assert_array_equal(fused.run(x=x)[0], alone.run(x=x)[0])
