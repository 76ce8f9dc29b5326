"""The ROCm matrix-core conv template (schedules/rocm/conv2d_mfma.py) without AMD hardware:
fused float16 and float32 conv chains, padded where M, N or R is no multiple of 16, tensorize
to v_mfma in real gfx942/gfx90a code objects, one kernel with the epilogue; the same schedule
untensorized computes the right numbers on llvm; what it accepts, and that untuned builds do not
pick it unless asked to."""
from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.codegen.rocm import code_objects, disassemble, instructions, read_code_object
from tefuse.fusion import fuse_graph
from tefuse.schedules import get_templates
from tefuse.schedules.rocm.conv2d_mfma import Conv2dMfma
from tefuse.schedules.rocm.mfma_gemm import lds_bytes
from tefuse.options import BuildOptions
from tefuse.target import make_target
from tefuse.tune.database import Database
from tefuse.tune.record import TuningRecord
from tefuse.driver import prepare_graph
from tefuse.tune.task import extract_tasks
from tests.codegen.test_cuda_codegen import conv_chain

# the instruction a dtype's 16x16x16 step is made of, and how many of them
MFMA = {"float16": (re.compile(r"^v_mfma_f32_16x16x16_?f16$"), 1),
        "float32": (re.compile(r"^v_mfma_f32_16x16x4_?f32$"), 4)}


def with_template(g, arch, tmp_path, name, **values):
    """Build `g` for rocm:`arch` with a tuning record that names template `name` (its fallback
    config, `values` overriding knobs): the way a tuned build would pick it."""
    # the graph build fuses (its batch-norm a scale and shift), as `tefuse tune` tunes it
    tasks = extract_tasks(prepare_graph(g, f"rocm:{arch}"), f"rocm:{arch}")
    (task,) = [t for t in tasks if name in task_names(t)]
    tmpl = next(t for t in task.templates if t.name == name)
    space = task.spaces[name]
    cfg = tmpl.fallback(task.info, task.target, space)
    if values:
        cfg = space.from_values({**cfg.values, **values})
    db = Database(tmp_path / f"{name}-{arch}.jsonl")
    db.append(TuningRecord(task.workload, task.target_key, "test", name, cfg.to_json(), cfg.index, costs=[1e-4]))
    return tefuse.build(g, f"rocm:{arch}", db=db), cfg


def task_names(task) -> list[str]:
    return [t.name for t in task.templates]


def mfma_count(cg, arch, objdump, dtype) -> int:
    """v_mfma instructions of the dtype in the one kernel of `cg`, after checking the code object."""
    (co,) = code_objects(cg.kernels[0].module)
    obj = read_code_object(co)
    assert obj.arch == arch and obj.kernels == ("main_kernel",)
    ops = instructions(disassemble(co, arch, objdump))
    assert "s_endpgm" in ops and any(o.startswith("ds_read") for o in ops)
    return sum(bool(MFMA[dtype][0].match(o)) for o in ops)


def steps(cfg, dtype) -> int:
    """MFMA instructions a kernel of `cfg` holds with its reduction loop not unrolled."""
    return cfg["tile_m"][2] * cfg["tile_n"][2] * cfg["tile_k"][1] * MFMA[dtype][1]


def check_on_llvm(graph, template, **values):
    """The template's schedule, untensorized and unbound, run on llvm against the CPU build:
    every tile, pad, masked tail and fragment layout as on the GPU."""
    (group,) = fuse_graph(graph)
    lowered = lower_group(group)
    assert template.accepts(lowered.info)
    rocm, llvm = make_target("rocm:gfx942"), make_target("llvm")
    space = template.space(lowered.info, rocm)
    cfg = space.from_values({**template.fallback(lowered.info, rocm, space).values, **values})
    sch = s_tir.Schedule(lowered.func)
    template.apply(sch, lowered.info, cfg, llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    rng = np.random.default_rng(0)
    args = [p.value if p.value is not None else rng.standard_normal(p.shape).astype(p.dtype)
            for p in lowered.params]  # constants as they are, inputs random
    dev = tvm.cpu()
    outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in group.outputs]
    lib["main"](*[tvm.runtime.tensor(a, dev) for a in args], *outs)
    want = tefuse.build(graph, "llvm").run(**{p.name: a for p, a in zip(lowered.params, args)
                                              if p.value is None})[0]
    want = want.astype(np.float32)
    got = outs[0].numpy().astype(np.float32)
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max(), np.abs(got - want).max()


@pytest.mark.parametrize("arch,kind,layout,dtype,c,k,hw", [("gfx942", "bn", "NCHW", "float16", 64, 64, 16),
                                                           ("gfx90a", "bn", "NCHW", "float16", 64, 64, 16),
                                                           ("gfx942", "residual", "NHWC", "float16", 64, 64, 16),
                                                           ("gfx942", "bn", "NCHW", "float32", 64, 64, 16),
                                                           ("gfx90a", "bn", "NCHW", "float32", 64, 64, 16),
                                                           ("gfx942", "bn", "NCHW", "float32", 3, 24, 14),
                                                           ("gfx90a", "residual", "NHWC", "float16", 64, 64, 7)])
def test_conv_chain_is_one_kernel_on_matrix_cores(toolchain, objdump, tmp_path, arch, kind, layout, dtype, c, k, hw):
    g = conv_chain(kind=kind, layout=layout, dtype=dtype, c=c, k=k, hw=hw)
    cg, cfg = with_template(g, arch, tmp_path, "conv2d_mfma", unroll=0)
    assert cg.num_kernels == 1 and cg.kernels[0].template == "conv2d_mfma"
    assert mfma_count(cg, arch, objdump, dtype) == steps(cfg, dtype)  # a fragment and 16-wide step


def test_several_wavefronts_and_fragments(toolchain, objdump, tmp_path):
    g = conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=16)
    cg, cfg = with_template(g, "gfx942", tmp_path, "conv2d_mfma", tile_m=(4, 2, 2), tile_n=(1, 2, 2),
                            tile_k=(9, 4), unroll=0)
    assert mfma_count(cg, "gfx942", objdump, "float16") == 2 * 2 * 4


@pytest.mark.parametrize("kind,layout,dtype,c,k,hw,values", [
    ("bn", "NCHW", "float16", 64, 64, 16, {}),
    ("bn", "NCHW", "float32", 64, 64, 16, {"tile_m": (4, 2, 2), "tile_n": (1, 2, 2), "tile_k": (9, 4)}),
    ("residual", "NHWC", "float32", 64, 64, 16, {"tile_m": (2, 4, 2), "tile_n": (2, 1, 2), "tile_k": (18, 2)}),
    ("bn", "NCHW", "float32", 3, 24, 14, {"tile_m": (4, 2, 2)}),  # M = 196, N = 24, R = 27: all padded
    ("residual", "NHWC", "float16", 64, 64, 7, {}),  # M = 49
])
def test_the_schedule_computes_the_right_numbers_on_llvm(kind, layout, dtype, c, k, hw, values):
    check_on_llvm(conv_chain(kind=kind, layout=layout, dtype=dtype, c=c, k=k, hw=hw), Conv2dMfma(), **values)


def test_what_the_template_takes_and_that_untuned_builds_keep_the_others(monkeypatch):
    t = tefuse.target.make_target("rocm:gfx942")
    names = lambda target: [x.name for x in get_templates(target, "conv2d")]  # noqa: E731
    assert names(t)[0] == "conv2d_mfma" and "conv2d_mfma" not in names(tefuse.target.make_target("cuda"))
    for dtype in ("float16", "float32"):
        task = extract_tasks(conv_chain(kind="bn", dtype=dtype, c=64, k=64, hw=16), t)[0]
        assert task_names(task)[-1] == "conv2d_mfma"  # tuned, but never the fallback
        assert task.fallback().index is not None and task.templates[0].name != "conv2d_mfma"
    m = Conv2dMfma()
    assert not m.accepts(extract_tasks(conv_chain(kind="bn", dtype="bfloat16", c=64, k=64, hw=16), t)[0].info)
    assert m.accepts(extract_tasks(conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=14), t)[0].info)  # M=196
    assert not m.accepts(extract_tasks(conv_chain(kind="bn", groups=2, c=64, k=64, hw=16), t)[0].info)
    g = conv_chain(kind="bn", dtype="float32", c=64, k=64, hw=16)
    assert extract_tasks(g, t)[0].templates[0].name != "conv2d_mfma"  # not opted in
    opted = BuildOptions(prefer_mfma=True)  # the untuned choice on matrix-core archs only
    assert extract_tasks(g, t, options=opted)[0].templates[0].name == "conv2d_mfma"
    assert extract_tasks(g, "rocm:gfx1100", options=opted)[0].templates[0].name != "conv2d_mfma"


@pytest.mark.parametrize("c,k,hw,dtype", [(64, 64, 56, "float16"), (128, 128, 28, "float16"),
                                          (256, 256, 16, "float32"), (512, 2048, 8, "float32")])
def test_fallback_fits_a_workgroup_and_the_lds(c, k, hw, dtype):
    from tefuse.target import device_caps

    t = tefuse.target.make_target("rocm:gfx942")
    task = extract_tasks(conv_chain(kind="bn", dtype=dtype, c=c, k=k, hw=hw), t)[0]
    m = Conv2dMfma()
    assert m.accepts(task.info)
    cfg = m.fallback(task.info, t, m.space(task.info, t))
    lim = device_caps(t)
    warps = cfg["tile_m"][1] * cfg["tile_n"][1]
    assert warps * lim.warp_size <= lim.max_threads_per_block and lim.warp_size == 64
    lds = lds_bytes(cfg["tile_m"][1] * cfg["tile_m"][2], cfg["tile_n"][1] * cfg["tile_n"][2], cfg["tile_k"][1],
                    2 if dtype == "float16" else 4)
    assert lds <= lim.max_shared_memory_per_block == 65536


def test_an_arch_without_matrix_cores_is_refused(toolchain, tmp_path):
    g = conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=16)
    with pytest.raises(tefuse.BuildError, match="conv2d_mfma needs matrix cores"):
        with_template(g, "gfx1100", tmp_path, "conv2d_mfma")
