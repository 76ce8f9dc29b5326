"""The merged dynamic shared memory is checked against the arch's opt-in at build time."""
from __future__ import annotations

import pytest
from tvm import s_tir

from tefuse.codegen.compile import compile_module
from tefuse.errors import BuildError
from tefuse.schedules.cuda.gemm.template import apply_gemm, pass_config
from tefuse.target import make_target

from tests.schedules.cuda.gemm.test_wgmma import _lowered, _ohwi_conv

# 128x128 blocks, 64-deep k steps, 3 stages: 110592 bytes once TVM has merged the staging tile
# into the pipeline's tiles; the A100 (sm_80) lets a block opt into 166912, an RTX 30 (sm_86) 101376
CFG = dict(BM=128, BN=128, WM=64, WN=64, BK=64, stages=3, intrin="mma", vec_out=4)


def _compile(arch):
    _, low = _lowered(_ohwi_conv(2, 16, 64, 128, 1))
    target = make_target(f"cuda:{arch}")
    sch = s_tir.Schedule(low.func)
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, CFG, target)
    return compile_module(sch.mod, target, "g0", pass_config("mma", target))


def test_a_block_within_the_opt_in_compiles():
    assert "mma.sync" in _compile("sm_80").imports[0].inspect_source()


def test_a_block_past_the_opt_in_is_a_build_error_with_the_sizes():
    with pytest.raises(BuildError, match=r"^group g0: compiling for cuda failed: 110592 bytes of dynamic shared "
                                         r"memory per block > sm_86's 101376$"):
        _compile("sm_86")
