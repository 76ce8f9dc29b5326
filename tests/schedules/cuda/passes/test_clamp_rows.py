"""Tile copies past the last row of an operand read a real row (schedules/cuda/passes/clamp_rows.py):
the same numbers bit for bit on llvm with and without the rewrite (ragged M, ragged N, ragged K and
a conv's zero padding), K's zero fill and the conv padding kept, and the CUDA kernel of a ragged-M
conv with no predicated copy left (TVM's predicated copies without the rewrite)."""
from __future__ import annotations


import numpy as np
import pytest
from tvm import s_tir
from tvm_ffi import structural_walk

from tefuse.codegen.compile import device_compile
from tefuse.schedules.cuda.passes.clamp_rows import ROWS_ANNOTATION, clamp_rows
from tefuse.schedules.cuda.gemm.template import apply_gemm, pass_config
from tefuse.target import make_target

from tests.schedules.cuda.gemm.test_mma import _dense
from tests.schedules.cuda.gemm.test_wgmma import LLVM_CASES, _lowered, _ohwi_conv, _run_on_llvm, _wgmma_cfg

CASES = {  # (graph, BM, BN): every one leaves a partial tile of rows, columns or K
    "dense_m130_n256_k200": (lambda: _dense(130, 256, 200, "float16"), 128, 128),
    "dense_m197_n96_k72": (lambda: _dense(197, 96, 72, "float16"), 64, 96),
    "conv_3x3_padded_m98": (lambda: _ohwi_conv(2, 7, 64, 96, 3), 64, 64),
    "conv_1x1_m200_n72": (lambda: _ohwi_conv(2, 10, 64, 72, 1), 64, 64),
}
# the wgmma schedule's llvm cases whose copies read more than plain rows: a prologue computed per
# row while A loads (LayerNorm statistics, a cast), split-K slices, q @ k^T through a transpose
for _name in ("layernorm_prologue", "cast_prologue", "conv_ohwi_split_3x3", "attention_scores"):
    CASES[_name] = LLVM_CASES[_name][:3]


def _scheduled(case, target):
    make, bm, bn = CASES[case]
    group, low = _lowered(make())
    sch = s_tir.Schedule(low.func)
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue,
                  _wgmma_cfg(bm, bn, stages=3, tensorize=target.kind.name == "cuda"), target)
    return sch, group, low


def _copy_values(func, names=None) -> list:
    """The values the marked tile copies store (or the blocks named `names`, marked or not)."""
    found = []
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.append((b.name_hint, b.body.value))
                                 if (b.name_hint in names if names else ROWS_ANNOTATION in b.annotations) else None)])
    return [v for _, v in sorted(found, key=lambda nv: names.index(nv[0]) if names else 0)]


def _copy_names(func) -> list:
    found = []
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.append(b.name_hint)
                                 if ROWS_ANNOTATION in b.annotations else None)])
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_clamped_rows_give_the_same_bits_on_llvm(case):
    sch, group, low = _scheduled(case, make_target("llvm"))
    marked = _copy_values(sch.mod["main"])
    assert len(marked) == 2  # the A and B tile copies
    _, want = _run_on_llvm(sch, group, low)
    clamped = s_tir.Schedule(clamp_rows(sch.mod["main"]))
    assert _copy_values(clamped.mod["main"]) == []  # the marks go with the rewrite
    names = _copy_names(sch.mod["main"])
    before, after = ([str(v) for v in _copy_values(f, names)] for f in (sch.mod["main"], clamped.mod["main"]))
    assert before != after  # a row bound was there to take out
    _, got = _run_on_llvm(clamped, group, low)
    np.testing.assert_array_equal(got, want)


def test_only_the_row_bound_goes():
    """A ragged-M, ragged-K dense: the A copy keeps K's bound and wraps its row; a 3x3 conv
    keeps its zero padding, evaluated at the wrapped row."""
    sch, _, _ = _scheduled("dense_m130_n256_k200", make_target("llvm"))
    before = [v.script() for v in _copy_values(sch.mod["main"])]
    assert any("< 130" in v for v in before) and all("< 200" in v for v in before)
    after = s_tir.Schedule(clamp_rows(sch.mod["main"])).mod.script()
    assert "in_x[v1 % 130, v2]" in after and "< 130 and" not in after and "< 200" in after

    conv, _, _ = _scheduled("conv_3x3_padded_m98", make_target("llvm"))
    names = _copy_names(conv.mod["main"])
    a, b = (str(v) for v in _copy_values(clamp_rows(conv.mod["main"]), names))
    # the rows bound gone from both copies (98 rows of A, 96 of B), the padding kept around A's load
    assert a.startswith("T.if_then_else(1 <= v1 % 98 // 7") and "< 98," not in a and "v1 < 98" not in a
    assert b.startswith("in_w[v1 % 96, ")


@pytest.mark.parametrize("predicated", [False, True])
def test_a_ragged_m_conv_copies_without_predicates(predicated):
    """The generated CUDA of a 1x1 conv with M = 200 (3.125 tiles of 64 rows): TVM's predicated
    cp.async (legacy_pred) only where the template's finish (clamp_rows) does not run."""
    from tefuse.schedules.cuda.gemm.template import TensorCoreGemm

    target = make_target("cuda:sm_90a")
    sch, group, low = _scheduled("conv_1x1_m200_n72", target)
    mod = sch.mod if predicated else TensorCoreGemm().finish(sch.mod, low.info, None, target)
    src = device_compile(mod, target, pass_config("wgmma", target)).imports[0].inspect_source()
    assert "cp.async" in src
    assert ("legacy_pred" in src) == predicated
