"""Tensor intrinsics' registration: `register_once` makes a name's pair once, however often and
from however many threads it is asked for; the bf16 generators are written from the installed
TVM's source and imported from that file, and a TVM source the patch no longer fits fails naming
what is missing; TVMScript parsed under `quick_frames` is the same function, and the frames it
walks keep the source lines the parser reads."""
from __future__ import annotations

import inspect
import threading
import time
from pathlib import Path

import pytest
from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T
from tvm_ffi import structural_equal

from tefuse.schedules.cuda.intrin import bf16
from tefuse.schedules.intrin import SOURCE_FRAMES, quick_frames, register_once
from tefuse.schedules.rocm import mfma


def test_register_once_makes_each_name_once_across_threads():
    fill = TensorIntrin.get(mfma.register("float16").fill)
    calls = []

    def make():
        calls.append(1)
        time.sleep(0.05)  # a slow parse: the other threads arrive meanwhile
        return fill.desc, fill.impl

    name = "tefuse_test_register_once_fill"
    got = []
    threads = [threading.Thread(target=lambda: got.append(register_once(name, make))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [name] * 8 and len(calls) == 1
    assert register_once(name, make) == name and len(calls) == 1
    assert TensorIntrin.get(name) is not None


def test_bf16_generators_load_from_the_written_file():
    gen = bf16.generators()
    path = Path(inspect.getsourcefile(gen.get_mma_intrin))
    assert path.read_text() == bf16.generate()
    assert 'assert dtype in ("float16", "bfloat16")' in inspect.getsource(gen.get_ldmatrix_intrin)
    bf16.register()
    assert TensorIntrin.get("mma_bf16bf16f32_trans_b") is not None


@pytest.mark.parametrize("patch, message", [
    (("get_mma_intrin", "no such text", "x"), r"get_mma_intrin of TVM .* no longer contains 'no such text'"),
    (("get_no_such_intrin", "a", "b"), r"has no top-level get_no_such_intrin\(\)"),
])
def test_a_patch_that_no_longer_applies_names_what_is_missing(monkeypatch, patch, message):
    monkeypatch.setattr(bf16, "PATCHES", (patch,))
    with pytest.raises(bf16.IntrinSourceError, match=message):
        bf16.generate()


def _scaled_copy(scale: float):
    """A prim_func reading a closure variable (`n`) and a captured one (`scale`)."""
    n = 16

    @T.prim_func(s_tir=True)
    def f(a: T.Buffer((n,), "float32"), b: T.Buffer((n,), "float32")):
        for i in range(n):
            with T.sblock("copy"):
                vi = T.axis.remap("S", [i])
                b[vi] = a[vi] * T.float32(scale)

    return f


def test_quick_frames_parse_the_same_function():
    with quick_frames():
        quick = _scaled_copy(0.5)
    assert structural_equal(quick, _scaled_copy(0.5))
    assert not structural_equal(quick, _scaled_copy(2.0))


def test_quick_frames_keep_the_frames_the_parser_reads():
    def deep(k):
        return deep(k - 1) if k else inspect.stack()

    with quick_frames():
        frames = deep(6)
    real = deep(6)
    assert [f.function for f in frames] == [f.function for f in real]
    assert [f.code_context for f in frames[:SOURCE_FRAMES]] == [f.code_context for f in real[:SOURCE_FRAMES]]
    assert [f.lineno for f in frames[:7]] == [f.lineno for f in real[:7]]  # deep's 7 calls
    assert all(f.code_context is None for f in frames[SOURCE_FRAMES:])
    assert deep(6)[SOURCE_FRAMES].code_context is not None  # the real one is back
