"""TVM's CUDA intrinsics registered when named: loading the module registers none of them, a
group registers exactly its names with TVM's own (desc, impl), later imports of TVM's module get
the same module, an intrinsic tefuse registers under one of TVM's names wins in either order, and
a module TVM imported whole before is used as it is. Each case runs in a fresh process: TVM's
intrinsic table is process-wide."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import sys
from tvm.s_tir import TensorIntrin
from tvm_ffi import structural_equal
from tefuse.schedules.cuda.intrin import tvm_library
def registered(name):
    return TensorIntrin.get(name, allow_missing=True) is not None
"""


def run(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_group_registers_its_names_and_nothing_else():
    run("""
        lib = tvm_library.tvm_cuda_intrinsics()
        assert "tvm.s_tir.tensor_intrin" not in sys.modules  # no other backend's intrinsics
        some = ["mma_ldmatrix_f16_a", "mma_fill_16x16_f32", "wmma_load_16x16x16_f16_a_shared", "mma_f16f16f32"]
        assert not any(map(registered, some))
        names = lib.get_mma_intrin_group(load_scope="shared.dyn", store_scope="shared.dyn", in_dtype="float16",
                                         out_dtype="float32", trans_a=False, trans_b=False)
        assert all(map(registered, names.values())), names
        assert not registered("mma_ldmatrix_f16_b_trans") and not registered("wmma_load_16x16x16_f16_a_shared")
        got = TensorIntrin.get(names["load_a"])
        desc, impl = lib.get_ldmatrix_intrin(16, "float16", "A", False, "shared.dyn")
        assert structural_equal(got.desc, desc) and structural_equal(got.impl, impl)
        assert lib.ensure(["not_an_intrinsic"]) == ["not_an_intrinsic"]
    """)


# imports every backend's intrinsics (40 s); test_a_module_already_in_sys_modules_is_used_as_it_is covers the reuse by default
@pytest.mark.slow
def test_later_imports_of_tvms_module_get_the_same_one():
    run("""
        lib = tvm_library.tvm_cuda_intrinsics()
        from tvm.s_tir.tensor_intrin.cuda import get_wmma_intrin_group  # as dlight's tensor-core rule
        names = get_wmma_intrin_group("shared.dyn", "shared.dyn", "float16", "float32", False)
        assert all(map(registered, names.values())), names
        import tvm.s_tir.tensor_intrin as package  # every backend's: its cuda is this one
        assert package.cuda is lib is sys.modules[tvm_library.MODULE]
    """)


def test_tefuses_own_intrinsic_of_a_tvm_name_wins_in_either_order():
    run("""
        from tefuse.schedules.intrin import register_once
        lib = tvm_library.tvm_cuda_intrinsics()
        other = lib.get_ldmatrix_intrin(32, "int8", "B", True)
        register_once("mma_ldmatrix_i8_a", lambda: other)  # tefuse's first
        lib.ensure(["mma_ldmatrix_i8_a"])
        assert structural_equal(TensorIntrin.get("mma_ldmatrix_i8_a").desc, other[0])
        lib.ensure(["mma_ldmatrix_i8_b"])  # TVM's first
        register_once("mma_ldmatrix_i8_b", lambda: other)
        assert structural_equal(TensorIntrin.get("mma_ldmatrix_i8_b").desc, other[0])
    """)


def test_a_module_already_in_sys_modules_is_used_as_it_is():
    """The branch the whole import below takes, on a stand-in: importing TVM's module whole
    registers every intrinsic (over a minute on a 2-core machine)."""
    run("""
        import types
        stand_in = sys.modules[tvm_library.MODULE] = types.ModuleType(tvm_library.MODULE)
        lib = tvm_library.tvm_cuda_intrinsics()
        assert lib is stand_in and lib.ensure({"a": "mma_fill_16x16_f32"}) == {"a": "mma_fill_16x16_f32"}
        assert not registered("mma_fill_16x16_f32")  # nothing registered on the module's behalf
    """)


@pytest.mark.slow
def test_a_module_imported_whole_before_is_used_as_it_is():
    run("""
        import tvm.s_tir.tensor_intrin.cuda
        real = sys.modules[tvm_library.MODULE]
        assert registered("mma_ldmatrix_f16_a")
        lib = tvm_library.tvm_cuda_intrinsics()
        assert lib is real and lib.ensure({"a": "mma_fill_16x16_f32"}) == {"a": "mma_fill_16x16_f32"}
    """)


def test_a_load_that_fails_fails_again_with_its_first_error():
    """A TVM whose module no longer fits the loader: one clear error naming the module, the
    same on every later call (its global functions may be registered: it cannot run twice)."""
    run("""
        import pytest
        from tefuse.schedules.cuda.intrin.tvm_library import IntrinSourceError

        def broken():
            raise ValueError("renamed generator")

        tvm_library._lazy_module = broken
        for _ in range(2):
            with pytest.raises(IntrinSourceError, match="tensor_intrin.cuda.*renamed generator"):
                tvm_library.tvm_cuda_intrinsics()
    """)
