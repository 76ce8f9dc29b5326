"""Build workers (tune/popen.py) and measuring workers start without PyTorch, and still work."""
import concurrent.futures as cf
import multiprocessing as mp
import os

import pytest

from tefuse.tune.popen import LeanPopenPoolExecutor
from tefuse.tune.procs import without_torch
from tefuse.tune.runner import init_worker


def torch_in_worker() -> str:
    """What a worker sees: whether TVM loaded, and whether torch did or could."""
    import sys

    import tvm  # noqa: F401

    try:
        import torch  # noqa: F401
        return "torch loaded"
    except ImportError:
        return "torch absent" if "tvm" in sys.modules else "tvm missing"


def _square(x: int) -> int:
    return x * x


def test_a_build_worker_has_tvm_and_no_torch(torch_installed):
    pool = LeanPopenPoolExecutor(1, timeout=60)
    try:
        assert pool.submit(torch_in_worker).result() == "torch absent"
        assert [f.result() for f in [pool.submit(_square, k) for k in range(4)]] == [0, 1, 4, 9]
    finally:
        pool.shutdown()


def test_a_build_worker_killed_by_its_timeout_is_replaced_by_a_lean_one(torch_installed):
    import time

    pool = LeanPopenPoolExecutor(1, timeout=1)
    try:
        with pytest.raises(TimeoutError):
            pool.submit(time.sleep, 5).result()
        assert pool.submit(torch_in_worker).result() == "torch absent"
    finally:
        pool.shutdown()


def test_a_spawned_worker_that_calls_it_first_has_tvm_and_no_torch(torch_installed):
    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=without_torch) as pool:
        assert pool.submit(torch_in_worker).result() == "torch absent"


def test_a_measuring_worker_has_tvm_and_no_torch(torch_installed):
    """LocalRunner's pool initializer, as its spawned measuring process runs it."""
    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=init_worker,
                                initargs=(os.getpid(), "llvm", None)) as pool:
        assert pool.submit(torch_in_worker).result() == "torch absent"


def test_a_spawned_worker_without_it_loads_torch(torch_installed):
    """The control: TVM's own import brings torch in, which is what the workers avoid."""
    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        assert pool.submit(torch_in_worker).result() == "torch loaded"
