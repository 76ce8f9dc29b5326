"""Tensor intrinsics' registration: `register_once` makes a name's pair once, however often and
from however many threads it is asked for; the bf16 generators are written from the installed
TVM's source and imported from that file, and a TVM source the patch no longer fits fails naming
what is missing."""
from __future__ import annotations

import inspect
import threading
import time
from pathlib import Path

import pytest
from tvm.s_tir import TensorIntrin

from tefuse.schedules.cuda.intrin import bf16
from tefuse.schedules.intrin import register_once
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
