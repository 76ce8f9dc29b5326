"""Zero-fill guards of tile copies tested once per vector chunk (passes/chunk_guards.py)."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import s_tir, tirx
from tvm.script import tirx as T
from tvm_ffi import structural_equal, structural_walk

import tefuse
from tefuse.schedules.cuda.gemm.template import TensorCoreGemm, apply_gemm
from tefuse.schedules.cuda.passes.chunk_guards import COPY_LANES, chunk_guards
from tefuse.target import make_target

from tests.schedules.cuda.gemm.test_wgmma import _lowered, _ohwi_conv, _run_on_llvm, _wgmma_cfg


def _copy(cond_of_k, dtype: str = "float16", c: int = 24, lanes: int = 8, width: int = 256, pad=0):
    """A marked `lanes`-lane tile copy of a 3x3 conv over `c` channels (K = 9c, tiles `width`
    deep): nested guards, `cond_of_k` inside, filling `pad` there and zero past K."""
    k_total, fill, zero = 9 * c, tirx.const(pad, dtype), tirx.const(0, dtype)

    @T.prim_func(check_well_formed=False)
    def f(x: T.Buffer((2, 6, 6, c), dtype), s: T.Buffer((64, width), dtype)):
        for i, j in T.grid(64, width):
            with T.sblock("copy"):
                vi, vk = T.axis.remap("SS", [i, j])
                T.sblock_attr({COPY_LANES: lanes})
                s[vi, vk] = T.if_then_else(
                    vk < k_total,
                    T.if_then_else(cond_of_k(vi, vk), x[vi // 36, vi // 6 % 6, vi % 6, vk % c], fill),
                    zero)
    return f


def _stored(func):
    found = []
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.append(b) if b.name_hint == "copy" else None)])
    (block,) = found
    return block


def _stores_of(func, names) -> list:
    found = []
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.append(str(b.body)) if b.name_hint in names else None)])
    return found


def _marked(func) -> list:
    found = []
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.append(b.name_hint) if COPY_LANES in b.annotations else None)])
    return found


def _k_uses(expr, k) -> list:
    """The parents of k in expr, as strings."""
    found = []

    def on(e):
        for child in (getattr(e, "a", None), getattr(e, "b", None)):
            if child is not None and child.same_as(k):
                found.append(type(e).__name__ + " " + str(e))
    structural_walk(expr, [((tirx.FloorDiv, tirx.FloorMod, tirx.LT, tirx.Add), on)])
    return found


def test_nested_guards_become_one_condition_on_whole_chunks():
    out = chunk_guards(_copy(lambda i, k: tirx.all(1 <= i // 6 % 6 + k // 72, i % 6 + k // 24 % 3 < 7)))
    block = _stored(out)
    assert COPY_LANES not in block.annotations
    cond, value, zero = block.body.value.args
    assert "if_then_else" not in str(value) and float(zero.value) == 0
    k = block.iter_vars[-1].var
    uses = _k_uses(cond, k)
    assert uses and all(u.startswith("FloorDiv") and u.endswith("// 8") for u in uses), uses


def test_nested_fills_of_different_constants_stay_nested_each_condition_on_chunks():
    """An int8 conv padded with its zero point (-3) inside the K tail's zeros: the fills differ,
    so the guards stay nested, outer first, each tested once a chunk."""
    f = _copy(lambda i, k: 1 <= i // 6 % 6 + k // 96, "int8", c=32, lanes=16, width=384, pad=-3)
    block = _stored(chunk_guards(f))
    outer, inner, zero = block.body.value.args
    cond, value, fill = inner.args
    assert int(zero.value) == 0 and int(fill.value) == -3 and "if_then_else" not in str(value)
    k = block.iter_vars[-1].var
    for c in (outer, cond):
        uses = _k_uses(c, k)
        assert uses and all(u.startswith("FloorDiv") and u.endswith("// 16") for u in uses), uses


def test_a_guard_that_varies_within_a_chunk_is_left_alone():
    """k % 24 < 12 changes from one lane to the next: the copy stays as it was, mark removed."""
    f = _copy(lambda i, k: k % 24 < 12)
    out = chunk_guards(f)
    assert structural_equal(_stored(out).body, _stored(f).body)
    assert COPY_LANES not in _stored(out).annotations


@pytest.mark.parametrize("hw,c,k,stride", [(12, 24, 24, 1), (9, 40, 48, 2), (8, 12, 16, 1), (7, 96, 32, 1)])
def test_the_rewritten_copies_give_the_same_bits_on_llvm(hw, c, k, stride):
    """The wgmma schedule of small-channel padded convs with and without the rewrite (3x3: K = 9C,
    not a whole number of 64-deep steps), on llvm; and against the unscheduled build."""
    group, low = _lowered(_ohwi_conv(2, hw, c, k, 3, stride=stride))
    llvm = make_target("llvm")
    sch = s_tir.Schedule(low.func)
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, _wgmma_cfg(64, 64, tensorize=False), llvm)
    plain = s_tir.Schedule(sch.mod["main"])
    feed, want = _run_on_llvm(plain, group, low)
    rewritten = s_tir.Schedule(chunk_guards(sch.mod["main"]))
    names = _marked(plain.mod["main"])
    assert len(names) == 2 and _marked(rewritten.mod["main"]) == []
    assert _stores_of(rewritten.mod["main"], names) != _stores_of(plain.mod["main"], names)  # a guard was rewritten
    _, got = _run_on_llvm(rewritten, group, low)
    np.testing.assert_array_equal(got, want)
    ref = tefuse.build(_ohwi_conv(2, hw, c, k, 3, stride=stride), "llvm").run(**feed)[0].astype(np.float32)
    assert np.abs(got.astype(np.float32) - ref).max() <= 1e-2 * np.abs(ref).max()


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_a_small_channel_padded_conv_reads_its_input_only_through_cp_async(arch):
    """24 channels, 3x3, padding 1 (K = 216): every 16-byte chunk of both operand tiles is one
    predicated cp.async; the input is never read element by element (TVM's vectorizer scalarized
    the nested guards into 8 two-byte loads and shared stores a chunk)."""
    cg = tefuse.build(_ohwi_conv(2, 24, 24, 24, 3), f"cuda:{arch}")
    (kern,) = cg.kernels
    src = kern.source("cuda")
    assert kern.template in ("wgmma_gemm" if arch == "sm_90" else "tensorcore_gemm",)
    assert "cp_async" in src and "in_x_ptr" in src
    assert "in_x_ptr[" not in src and "in_w_ptr[" not in src


def test_the_template_runs_the_rewrite_in_its_finish():
    target = make_target("cuda:sm_90a")
    group, low = _lowered(_ohwi_conv(2, 24, 24, 24, 3))
    sch = s_tir.Schedule(low.func)
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, _wgmma_cfg(64, 64), target)
    assert len(_marked(sch.mod["main"])) == 2
    assert _marked(TensorCoreGemm().finish(sch.mod, low.info, None, target)["main"]) == []
