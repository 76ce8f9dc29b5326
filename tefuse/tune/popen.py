"""TVM's popen pool, its workers started without PyTorch (procs.without_torch says why).

A worker's command is the one place that runs before TVM loads, so it is the one thing changed:
`popen_worker.py` instead of TVM's worker module, which it runs. The rest (a timed-out task's
worker killed and started again, its uses counted) is TVM's.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading

from tvm.support.popen_pool import PopenPoolExecutor, PopenWorker


class LeanPopenWorker(PopenWorker):
    """TVM's popen worker, started as `tefuse.tune.popen_worker` (POSIX; TVM's own class otherwise)."""

    def _start(self) -> None:
        if self._proc is not None:
            return
        main_read, worker_write = os.pipe()
        worker_read, main_write = os.pipe()
        cmd = [sys.executable, "-m", "tefuse.tune.popen_worker", str(worker_read), str(worker_write)]
        self._proc = subprocess.Popen(cmd, pass_fds=(worker_read, worker_write), stdout=self._stdout,
                                      stderr=self._stderr)
        os.close(worker_read)
        os.close(worker_write)
        self._reader = os.fdopen(main_read, "rb")
        self._writer = os.fdopen(main_write, "wb")


class LeanPopenPoolExecutor(PopenPoolExecutor):
    """TVM's popen pool (a timed-out task's worker killed and restarted) of `LeanPopenWorker`s."""

    def _worker_run(self, fn, args, kwargs):
        with self._lock:
            tid = threading.get_ident()
            proc = self._worker_map.get(tid)
            if proc is None:
                worker = LeanPopenWorker if os.name == "posix" else PopenWorker
                proc = self._worker_map[tid] = worker(self._initializer, self._initargs,
                                                      self._maximum_process_uses, self._stdout, self._stderr)
        proc.send(fn, args, kwargs, self._timeout)
        return proc.recv()
