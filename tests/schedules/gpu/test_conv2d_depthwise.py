"""The CUDA depthwise conv2d template, without a GPU: depthwise + bias + batch_norm + relu6
chains build to exactly one kernel, a seeded sample of the space applies and generates
code, the knobs do what they say, and the fallback compiles to sm_90 PTX."""
from __future__ import annotations

import random
import re
import shutil

import numpy as np
import pytest

import tefuse.schedules as schedules
import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.compile import compile_module
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names, ptx_entries
from tefuse.codegen.schedule import ScheduleChoice, apply_schedule
from tefuse.errors import BuildError
from tefuse.tune.task import Task, as_tasks
from tefuse.schedules.gpu.conv2d_depthwise import shared_bytes, threads_per_block
from tests.codegen.test_cuda_codegen import kernel_params

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def dw_chain(layout="NCHW", n=1, c=32, hw=16, stride=1, dtype="float32", mult=1, k=3,
             epilogue=True, prologue=False, seed=0):
    """depthwise conv2d (k x k, 'same' padding) [+ bias + batch_norm + relu6], constants for
    the parameters; `prologue` puts a relu on the input (fused into the padded load)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    co = c * mult
    xs = (n, c, hw, hw) if layout == "NCHW" else (n, hw, hw, c)
    ws = (co, 1, k, k) if layout == "NCHW" else (k, k, 1, co)
    ax = 1 if layout == "NCHW" else 3
    x = b.input("x", xs, dtype)
    if prologue:
        x = b.relu(x, name="pre")
    w = b.const((rng.standard_normal(ws) * 0.3).astype(dtype), name="w")
    y = b.conv2d(x, w, padding=k // 2, strides=stride, layout=layout, groups=c, name="conv")
    if not epilogue:
        return b.build(y)
    y = b.bias_add(y, b.const(rng.standard_normal(co).astype(dtype), name="bias"), axis=ax, name="biased")
    params = [rng.uniform(0.5, 1.5, co), rng.standard_normal(co), rng.standard_normal(co),
              rng.uniform(0.5, 2, co)]
    y = b.batch_norm(y, *(b.const(p.astype(dtype), name=nm) for p, nm in
                          zip(params, ["gamma", "beta", "mean", "var"])), axis=ax, name="bn")
    return b.build(b.relu6(y, name="out"))


def task_of(**kw) -> Task:
    (task,) = as_tasks(dw_chain(**kw), "cuda")
    assert task.info.anchor_kind == "depthwise_conv2d"
    return task


def cuda_source(task: Task, cfg) -> str:
    mod = apply_schedule(task.lowered, task.target, ScheduleChoice(task.template(), cfg, "test"))
    module = compile_module(mod, task.target)
    (src,) = [m.inspect_source() for m in module.imports if m.kind == "cuda"]
    return src


def fits(task: Task, cfg) -> bool:
    """What the space's rules and the template itself refuse: too many threads, too much
    shared memory, the "rows" stage without a 16-byte vector of NHWC channels."""
    return (task.space().admits(cfg.index) and threads_per_block(cfg) <= 1024
            and (cfg["stage"] != "shared" or shared_bytes(task.info, cfg) <= 49152))


def sample_fitting(task: Task, n: int, seed: int) -> list:
    """n seeded configs of the task's space that the template accepts."""
    space, pick, out = task.space(), random.Random(seed), []
    while len(out) < n:
        cfg = space.get(pick.randrange(len(space)))
        if fits(task, cfg):
            out.append(cfg)
    return out


def _expected_buffers(g) -> set[str]:
    ins = {f"in_{n.name}" for n in g.inputs} | {f"in_{n.name}" for n in g.constants if n.value.size > 1}
    return ins | {f"out_{o.name}" for o in g.outputs}


CHAINS = [
    pytest.param(dict(), id="nchw_s1"),
    pytest.param(dict(layout="NHWC"), id="nhwc_s1"),
    pytest.param(dict(stride=2, hw=17), id="nchw_s2_odd"),
    pytest.param(dict(layout="NHWC", stride=2, n=2), id="nhwc_s2_batch2"),
    pytest.param(dict(dtype="float16"), id="fp16_nchw"),
    pytest.param(dict(dtype="float16", layout="NHWC", stride=2), id="fp16_nhwc_s2"),
    pytest.param(dict(mult=2, c=8), id="multiplier2_nchw"),
    pytest.param(dict(mult=3, c=8, layout="NHWC", k=5), id="multiplier3_nhwc_5x5"),
    pytest.param(dict(prologue=True, layout="NHWC"), id="prologue_nhwc"),
    pytest.param(dict(epilogue=False), id="bare_conv"),
]


def test_registered_for_depthwise_only():
    names = [t.name for t in schedules.get_templates("cuda", "depthwise_conv2d")]
    assert names[0] == "conv2d_depthwise" and "conv2d_direct" not in names
    assert "conv2d_depthwise" not in [t.name for t in schedules.get_templates("cuda", "conv2d")]
    assert schedules.get_templates("rocm", "depthwise_conv2d")[0].name == "conv2d_depthwise"


@pytest.mark.parametrize("kw", CHAINS)
def test_chain_builds_to_one_cuda_kernel(kw):
    g = dw_chain(**kw)
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 1
    (k,) = cg.kernels
    assert (k.template, k.config_source) == ("conv2d_depthwise", "fallback")
    src = k.source("cuda")
    (name,) = cuda_kernel_names(src)
    # inputs, non-scalar constants and the output only: no global buffer for the conv result
    params = kernel_params(src, name)
    if kw.get("epilogue", True):  # the built graph's (its batch-norm folded to a scale and shift)
        assert {p for _, p in params} == {f"{b}_ptr" for b in _expected_buffers(cg.graph)}
    else:  # the anchor is the output (its buffer keeps the compute's name): a register write-back
        assert len(params) == len(_expected_buffers(cg.graph)), params
    ctype = "half" if kw.get("dtype") == "float16" else "float"
    folded = {f"in_{i.name}_ptr" for n in cg.graph.nodes if n.op == "scale_shift" for i in n.inputs[1:]}
    assert all(t == ("float" if p in folded else ctype) for t, p in params), params
    assert "conv2d_local" in src  # the accumulators live in registers
    assert "in_w_local" in src  # so do the thread's weights


MOBILENET = [
    pytest.param(dict(c=32, hw=112), id="32x112x112"),
    pytest.param(dict(c=144, hw=56, stride=2), id="144x56x56_s2"),
    pytest.param(dict(c=960, hw=7), id="960x7x7"),
    pytest.param(dict(c=960, hw=7, layout="NHWC"), id="nhwc_960x7x7"),
    pytest.param(dict(n=16, c=96, hw=112, stride=2, layout="NHWC", dtype="float16"), id="b16_nhwc_fp16_s2"),
    pytest.param(dict(n=16, c=384, hw=14), id="b16_384x14x14"),
]


@pytest.mark.parametrize("kw", MOBILENET)
def test_fallback_is_sensible_for_mobilenet_shapes(kw):
    task = task_of(**kw)
    fb = task.fallback()
    assert task.space().get(fb.index).values == fb.values
    assert 64 <= threads_per_block(fb) <= 512, fb.values
    # threadIdx.x runs along the innermost memory dim: a warp covers consecutive addresses
    _, x_threads, x_inner = fb["tile_2"]
    if fb["stage"] == "rows":  # NHWC: a 16-byte vector of channels a thread
        assert task.info.geometry.layout == "NHWC" and x_inner * np.dtype(task.info.dtype).itemsize == 16
        assert x_threads >= min(task.info.out_shape[3] // x_inner, 8), fb.values
    else:
        assert x_threads >= min(task.info.out_shape[3] // x_inner, 16) and x_inner <= 2, fb.values
    out = int(np.prod(task.info.out_shape))
    per_thread = np.prod([fb[f"tile_{k}"][2] for k in range(3)])
    blocks = out // (threads_per_block(fb) * per_thread)
    assert blocks >= 132, (blocks, fb.values)  # at least one block per H100 SM
    assert fits(task, fb)


WORKLOADS = [
    dict(c=16, hw=14),
    dict(c=24, hw=12, layout="NHWC", stride=2, dtype="float16"),
    dict(c=8, hw=10, mult=2, n=2),
]


@pytest.mark.parametrize("kw", WORKLOADS, ids=["nchw", "nhwc_fp16_s2", "mult2_batch2"])
def test_sampled_configs_apply_and_generate_code(kw):
    task = task_of(**kw)
    sample = sample_fitting(task, 12, seed=1234)
    rows = kw.get("layout") == "NHWC" and kw.get("mult", 1) == 1 and kw.get("dtype") == "float16"
    stages = {c["stage"] for c in sample}
    assert {"shared", "global"} <= stages <= {"shared", "global"} | ({"rows"} if rows else set()), \
        [c.values for c in sample]
    for cfg in sample:
        src = cuda_source(task, cfg)
        assert len(cuda_kernel_names(src)) == 1, cfg.values
        assert ("__shared__" in src) == (cfg["stage"] == "shared"), cfg.values
        m = re.search(r"__launch_bounds__\((\d+)\)", src)
        assert (int(m.group(1)) if m else 1) == threads_per_block(cfg), cfg.values


def test_shared_knob_stages_the_input_tile_with_halo():
    task = task_of(c=16, hw=16, stride=1)
    base = dict(tile_0=(4, 4, 1), tile_1=(2, 4, 2), tile_2=(1, 16, 1), unroll_window=1)
    shared = task.space().from_values({**base, "stage": "shared"})
    src = cuda_source(task, shared)
    assert "__syncthreads()" in src
    # 4 channels x (8 + 2) rows x (16 + 2) cols: the tile plus the 3x3 window's halo
    assert re.search(r"__shared__\s+(?:alignas\(\d+\)\s+)?float\s+\w+\[720\]", src), src[:2000]
    assert shared_bytes(task.info, shared) == 720 * 4
    direct = cuda_source(task, task.space().from_values({**base, "stage": "global"}))
    assert "__shared__" not in direct and "__syncthreads" not in direct


def test_unroll_knob():
    task = task_of(c=16, hw=16, k=5)
    base = dict(tile_0=(4, 4, 1), tile_1=(4, 4, 1), tile_2=(1, 16, 1), stage="global")
    unrolled = cuda_source(task, task.space().from_values({**base, "unroll_window": 1}))
    rolled = cuda_source(task, task.space().from_values({**base, "unroll_window": 0}))
    assert not re.search(r"\bfor\s*\(", unrolled)
    assert re.search(r"for\s*\(int r[yx]", rolled)


def test_oversized_configs_are_refused_by_name():
    task = task_of(c=32, hw=32)
    space = task.space()
    too_many = space.from_values(dict(tile_0=(1, 32, 1), tile_1=(1, 32, 1), tile_2=(1, 32, 1),
                                      stage="global", unroll_window=1))
    with pytest.raises(BuildError, match="threads per block"):
        apply_schedule(task.lowered, task.target, ScheduleChoice(task.template(), too_many, "test"))


def test_shared_stage_is_refused_when_tvm_stages_every_channel():
    """A channel tile (4) the multiplier (3) does not divide: shared_bytes' estimate is 3
    channels, but TVM's region spans all 200 input channels (~200 KiB), which must be refused."""
    task = task_of(c=200, hw=14, mult=3, epilogue=False)
    cfg = task.space().from_values(dict(tile_0=(150, 4, 1), tile_1=(1, 14, 1), tile_2=(1, 14, 1),
                                        stage="shared", unroll_window=1))
    assert fits(task, cfg)  # the estimate alone lets it through
    with pytest.raises(BuildError, match="shared memory"):
        apply_schedule(task.lowered, task.target, ScheduleChoice(task.template(), cfg, "test"))
    ok = task.space().from_values({**cfg.values, "tile_0": (120, 5, 1)})  # 3 channels, as estimated
    assert "__shared__" in cuda_source(task, ok)


@needs_nvcc
@pytest.mark.parametrize("kw", [MOBILENET[1], MOBILENET[4]])
def test_fallback_compiles_to_sm90_ptx(kw):
    task = task_of(**kw)
    src = cuda_source(task, task.fallback())
    ptx = compile_to_ptx(src, "sm_90")
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), ptx[:400]
    assert ptx_entries(ptx) == cuda_kernel_names(src)
    assert ".local" not in ptx  # accumulators and weights stay in registers (no spills to local memory)


@needs_nvcc
def test_rows_stage_loads_16_byte_channel_vectors_a_window_row_at_a_time():
    """ConvNeXt's 7x7 depthwise conv (NHWC, fp16, 96 channels): the fallback is the "rows"
    stage; a thread's input columns and weights of a row come in 16-byte loads (10 columns for 4
    outputs and 7 weights, a row; 7 rows), nothing spills to local memory."""
    task = task_of(layout="NHWC", n=2, c=96, hw=56, k=7, dtype="float16")
    fb = task.fallback()
    assert fb["stage"] == "rows" and fb["tile_2"][2] == 8 and fb["tile_1"][2] == 4, fb.values
    ptx = compile_to_ptx(cuda_source(task, fb), "sm_90")
    assert len(re.findall(r"ld\.global(?:\.nc)?\.v4", ptx)) == 7 * (10 + 7)
    assert ".local" not in ptx


def test_rows_stage_is_refused_without_a_vector_of_nhwc_channels():
    nchw = task_of(c=16, hw=8)
    assert not any(c["stage"] == "rows" for c in nchw.space() if nchw.space().admits(c.index))
    task = task_of(layout="NHWC", c=16, hw=8, dtype="float16")
    cfg = task.space().from_values(dict(tile_0=(8, 1, 1), tile_1=(1, 8, 1), tile_2=(1, 4, 4), stage="rows",
                                        unroll_window=1))
    assert not task.space().admits(cfg.index)
    with pytest.raises(BuildError, match="stage 'rows' wants NHWC, channel multiplier 1 and 8 channels"):
        apply_schedule(task.lowered, task.target, ScheduleChoice(task.template(), cfg, "test"))


@needs_nvcc
def test_rows_stage_with_a_relu_prologue_loads_half_vectors():
    """A ReLU on the input (a select on loaded data) cannot be computed on 8 halves at once
    (TVM's CUDA codegen has no bool vector of 8): the rows stage loads each column's channels
    as two 8-byte vectors instead, and still compiles."""
    task = task_of(layout="NHWC", c=40, hw=15, k=5, dtype="float16", prologue=True, stride=2)
    fb = task.fallback()
    assert fb["stage"] == "rows", fb.values
    ptx = compile_to_ptx(cuda_source(task, fb), "sm_90")
    assert re.search(r"ld\.global(?:\.nc)?\.v2\.(?:b32|u32|f32)|ld\.global(?:\.nc)?\.v4\.(?:b16|u16)", ptx)
    assert ".local" not in ptx


@needs_nvcc
def test_rows_stage_reads_a_transposed_input_as_scalars_and_compiles():
    """An NHWC depthwise conv whose input is an NCHW tensor transposed in its prologue
    (ShuffleNet's channel shuffle before a stride-2 branch): a thread's 8 channels lie a plane
    apart, so the rows stage loads them one at a time (a vector of strided loads is code nvcc
    refuses) and the kernel compiles."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.transpose(b.input("x", (2, 232, 14, 14), "float16"), axes=(0, 2, 3, 1))
    w = b.const((rng.standard_normal((3, 3, 1, 232)) * 0.3).astype("float16"), name="w")
    (task,) = as_tasks(b.build(b.conv2d(x, w, padding=1, layout="NHWC", groups=232, name="conv")), "cuda")
    fb = task.fallback()
    assert fb["stage"] == "rows" and fb["tile_2"][2] == 8, fb.values
    src = cuda_source(task, fb)
    assert "make_uint4(in_x_ptr" not in src
    ptx = compile_to_ptx(src, "sm_90")
    assert ptx_entries(ptx) == cuda_kernel_names(src)
    assert re.search(r"ld\.global(?:\.nc)?\.(?:u16|b16)", ptx)
