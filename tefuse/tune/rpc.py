"""Measuring on another machine through TVM's RPC: upload the exported library, time it there.

Topology as in AutoTVM: `python -m tvm.exec.rpc_tracker` somewhere, `python -m
tvm.exec.rpc_server --tracker HOST:PORT --key KEY` on each device box, and an RPCRunner
that asks the tracker for a session by key (or connects straight to one server). Notes on
TVM 0.27: the tracker needs `tornado`, and Server/Tracker.terminate() need `psutil` (it
raises ModuleNotFoundError without it), so `LocalRPC.close` kills the processes itself.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from .measure import (RUNTIME_ERROR, BuildResult, MeasureResult, RunOptions, RunSpec, _last_line,
                      measure_module)

log = logging.getLogger(__name__)


class RPCRunner:
    """Runner with the LocalRunner interface that measures on a remote device."""

    def __init__(self, key: Optional[str] = None, tracker: Optional[tuple[str, int]] = None,
                 server: Optional[tuple[str, int]] = None, number: int = 0, repeat: int = 3,
                 min_repeat_ms: int = 20, timeout: float = 60.0, check: bool = True,
                 priority: int = 1, device: Optional[str] = None) -> None:
        if (tracker is None) == (server is None):
            raise ValueError("RPCRunner needs either tracker=(host, port) with key=..., or server=(host, port)")
        if tracker is not None and not key:
            raise ValueError("RPCRunner through a tracker needs the device key")
        self.key, self.tracker, self.server = key, tracker, server
        self.opts = RunOptions(number, repeat, min_repeat_ms, check)
        self.timeout = timeout
        self.priority = priority
        self.device = device or (f"rpc:{key}" if key else f"rpc:{server[0]}:{server[1]}")
        self._session = None
        self._cache: dict = {}

    def _connect(self):
        from tvm import rpc

        if self._session is None:
            if self.tracker is not None:
                tc = rpc.connect_tracker(*self.tracker)
                self._session = tc.request(self.key, priority=self.priority, session_timeout=0)
            else:
                self._session = rpc.connect(*self.server, key=self.key or "", session_timeout=0)
            self._cache.clear()
        return self._session

    def _remote_dev(self, sess, kind: str):
        return sess.cpu(0) if kind == "llvm" else sess.device(kind, 0)

    def _inputs(self, sess, spec: RunSpec, kind: str):
        import tvm

        k = ("in", spec.key, spec.seed, kind)
        if k not in self._cache:
            dev = self._remote_dev(sess, kind)
            self._cache[k] = (dev, [tvm.runtime.tensor(a, dev) for a in spec.inputs()])
        return self._cache[k]

    def _load(self, sess, path: str):
        sess.upload(path)
        return sess.load_module(os.path.basename(path))

    def _reference(self, sess, spec: RunSpec, kind: str, ref: Optional[BuildResult]):
        import tvm

        if ref is None or not ref.ok:
            return None
        k = ("ref", spec.key, spec.seed, kind, ref.path)
        if k not in self._cache:
            dev, ins = self._inputs(sess, spec, kind)
            try:
                mod = self._load(sess, ref.path)
                outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in spec.outputs]
                mod["main"](*ins, *outs)
                dev.sync()
                self._cache[k] = [o.numpy() for o in outs]
            except Exception as e:  # noqa: BLE001
                log.warning("remote reference run failed (%s): candidates go unchecked", _last_line(e))
                self._cache[k] = None
        return self._cache[k]

    def run(self, spec: RunSpec, target_kind: str, builds: Sequence[BuildResult],
            reference: Optional[BuildResult] = None) -> list[MeasureResult]:
        import tvm

        out = []
        for b in builds:
            if not b.ok:
                out.append(MeasureResult(b.index, b.config, error=b.error, error_msg=b.error_msg))
                continue
            try:
                sess = self._connect()
                dev, ins = self._inputs(sess, spec, target_kind)
                ref = self._reference(sess, spec, target_kind, reference) if self.opts.check else None
            except Exception as e:  # noqa: BLE001 - connection lost, no such key...
                self._session = None
                out.append(MeasureResult(b.index, b.config, error=RUNTIME_ERROR,
                                         error_msg=f"rpc: {_last_line(e)}"))
                continue
            res = measure_module(lambda: self._load(sess, b.path), dev, ins, spec.outputs, ref, self.opts,
                                 b.index, b.config,
                                 empty=lambda shape, dtype: tvm.runtime.empty(shape, dtype, dev))
            if res.error == RUNTIME_ERROR:
                self._session = None  # a failed remote call may leave the session unusable
            out.append(res)
        return out

    def close(self) -> None:
        self._session = None
        self._cache.clear()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class LocalRPC:
    """A tracker and one server on loopback, for tests and for measuring on this box
    through the same path a remote device takes."""

    key: str
    tracker_port: Optional[int]
    server_port: int
    _tracker: object = None
    _server: object = None

    def close(self) -> None:
        for proc in (self._server, self._tracker):
            if proc is None:
                continue
            try:
                proc.terminate()
            except ImportError:  # tvm's terminate() needs psutil; kill the worker directly
                inner = getattr(getattr(proc, "proc", None), "_proc", None)
                if inner is not None:
                    inner.kill()
                    inner.wait(timeout=10)
        self._server = self._tracker = None


def start_local_rpc(key: str = "local", with_tracker: bool = True, wait: float = 20.0) -> LocalRPC:
    """Start (tracker and) server on 127.0.0.1; returns once the server is registered."""
    from tvm import rpc
    from tvm.rpc import server as rserver

    tr = None
    tracker_addr = None
    if with_tracker:
        from tvm.rpc import tracker as rtracker  # needs tornado

        port = free_port()
        tr = rtracker.Tracker(host="127.0.0.1", port=port, port_end=port + 50, silent=True)
        tracker_addr = ("127.0.0.1", tr.port)
        _wait_listening(tracker_addr, wait)
    sport = free_port()
    srv = rserver.Server(host="127.0.0.1", port=sport, port_end=sport + 50, key=key,
                         tracker_addr=tracker_addr, silent=True)
    lr = LocalRPC(key, tr.port if tr else None, srv.port, tr, srv)
    if tracker_addr is not None:
        deadline = time.monotonic() + wait
        while True:
            try:
                summary = rpc.connect_tracker(*tracker_addr).summary()
                if any(q == key and v.get("free", 0) > 0 for q, v in summary.get("queue_info", {}).items()):
                    break
            except Exception:  # noqa: BLE001 - not up yet
                pass
            if time.monotonic() > deadline:
                lr.close()
                raise RuntimeError(f"rpc server {key!r} did not register with the tracker in {wait}s")
            time.sleep(0.2)
    else:
        _wait_listening(("127.0.0.1", srv.port), wait)
    return lr


def _wait_listening(addr: tuple[str, int], wait: float) -> None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(addr) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {addr[0]}:{addr[1]} after {wait}s")

