"""The ROCm matrix-core template (schedules/rocm/conv2d_mfma.py) without AMD hardware: fused
float16 conv chains tensorize to v_mfma_f32_16x16x16 in real gfx942/gfx90a code objects, one
kernel with the epilogue; what it accepts, and that untuned builds do not pick it."""
from __future__ import annotations

import re

import pytest

import tefuse
from tefuse.codegen.rocm import code_objects, disassemble, instructions, read_code_object
from tefuse.tune.database import Database
from tefuse.tune.record import TuningRecord
from tefuse.tune.task import extract_tasks
from tefuse.schedules import get_templates
from tefuse.schedules.rocm.conv2d_mfma import Conv2dMfma
from tests.codegen.test_cuda_codegen import conv_chain
from tests.codegen.test_rocm_codegen import objdump, toolchain  # noqa: F401  (fixtures)

MFMA = re.compile(r"^v_mfma_f32_16x16x16_?f16$")


def _with_mfma(g, arch, tmp_path, **values):
    """Build `g` for rocm:`arch` with a tuning record that names conv2d_mfma (its fallback
    config, `values` overriding knobs): the way a tuned build would pick it."""
    (task,) = [t for t in extract_tasks(g, f"rocm:{arch}") if t.info.anchor_kind == "conv2d"]
    tmpl = next(t for t in task.templates if t.name == "conv2d_mfma")
    space = task.spaces["conv2d_mfma"]
    cfg = tmpl.fallback(task.info, task.target, space)
    if values:
        cfg = space.from_values({**cfg.values, **values})
    db = Database(tmp_path / f"mfma-{arch}.jsonl")
    db.append(TuningRecord(task.workload, task.target_key, "test", "conv2d_mfma", cfg.to_json(), cfg.index,
                           costs=[1e-4]))
    return tefuse.build(g, f"rocm:{arch}", db=db), cfg


@pytest.mark.parametrize("arch,kind,layout", [("gfx942", "bn", "NCHW"), ("gfx90a", "bn", "NCHW"),
                                              ("gfx942", "residual", "NHWC")])
def test_fp16_conv_chain_is_one_kernel_on_matrix_cores(toolchain, objdump, tmp_path, arch, kind, layout):
    cg, cfg = _with_mfma(conv_chain(kind=kind, layout=layout, dtype="float16", c=64, k=64, hw=16), arch, tmp_path)
    assert cg.num_kernels == 1 and cg.kernels[0].template == "conv2d_mfma"
    (co,) = code_objects(cg.kernels[0].module)
    obj = read_code_object(co)
    assert obj.arch == arch and obj.kernels == ("main_kernel",)
    ops = instructions(disassemble(co, arch, objdump))
    mfma = [o for o in ops if MFMA.match(o)]
    frags = cfg["tile_m"][2] * cfg["tile_n"][2]
    assert len(mfma) == frags * cfg["tile_k"][1], ops  # one a fragment and 16-wide reduction step
    assert any(o.startswith("ds_write") for o in ops) and any(o.startswith("ds_read") for o in ops)
    assert "s_barrier" in ops and "s_endpgm" in ops


def test_several_wavefronts_and_fragments(toolchain, objdump, tmp_path):
    g = conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=16)
    cg, cfg = _with_mfma(g, "gfx942", tmp_path, tile_m=(4, 2, 2), tile_n=(1, 2, 2), tile_k=(9, 4))
    ops = instructions(disassemble(code_objects(cg.kernels[0].module)[0], "gfx942", objdump))
    assert sum(bool(MFMA.match(o)) for o in ops) == 2 * 2 * 4


def test_what_the_template_takes_and_that_untuned_builds_keep_the_others():
    t = tefuse.target.make_target("rocm:gfx942")
    names = lambda target: [x.name for x in get_templates(target, "conv2d")]  # noqa: E731
    assert names(t)[0] == "conv2d_mfma" and "conv2d_mfma" not in names(tefuse.target.make_target("cuda"))
    fp16 = extract_tasks(conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=16), t)[0]
    assert [x.name for x in fp16.templates][-1] == "conv2d_mfma"  # tuned, but never the fallback
    assert fp16.fallback().index is not None and fp16.templates[0].name != "conv2d_mfma"
    m = Conv2dMfma()
    assert not m.accepts(extract_tasks(conv_chain(kind="bn", c=64, k=64, hw=16), t)[0].info)  # float32
    assert not m.accepts(extract_tasks(conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=14), t)[0].info)  # M=196


@pytest.mark.parametrize("c,k,hw", [(64, 64, 56), (128, 128, 28), (256, 256, 16), (512, 2048, 8)])
def test_fallback_fits_a_workgroup_and_the_lds(c, k, hw):
    from tefuse.target import gpu_limits

    t = tefuse.target.make_target("rocm:gfx942")
    task = extract_tasks(conv_chain(kind="bn", dtype="float16", c=c, k=k, hw=hw), t)[0]
    m = Conv2dMfma()
    assert m.accepts(task.info)
    cfg = m.fallback(task.info, t, m.space(task.info, t))
    lim = gpu_limits(t)
    warps = cfg["tile_m"][1] * cfg["tile_n"][1]
    assert warps * lim.warp_size <= lim.max_threads_per_block and lim.warp_size == 64
    lds = m.lds_bytes(cfg["tile_m"][1] * cfg["tile_m"][2], cfg["tile_n"][1] * cfg["tile_n"][2], cfg["tile_k"][1])
    assert lds <= lim.max_shared_memory_per_block == 65536


def test_an_arch_without_matrix_cores_is_refused(toolchain, tmp_path):
    g = conv_chain(kind="bn", dtype="float16", c=64, k=64, hw=16)
    with pytest.raises(tefuse.BuildError, match="conv2d_mfma needs matrix cores"):
        _with_mfma(g, "gfx1100", tmp_path)
