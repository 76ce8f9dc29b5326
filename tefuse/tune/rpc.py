"""Measuring on other machines through TVM's RPC: upload the exported library, time it there.

Topology as in AutoTVM: `python -m tvm.exec.rpc_tracker` somewhere, `python -m
tvm.exec.rpc_server --tracker HOST:PORT --key KEY` once per device (one server per GPU; a
server measures one candidate at a time). An RPCRunner given the tracker opens a session on
EVERY server the tracker holds under the key and spreads each batch over them
(tune/parallel.py): each server measures one candidate at a time, results come back in the
batch's order. Given one server's address instead, it measures there alone. Each session is
driven from a process of its own (tune/slot_process.py: the tuner's busy threads would
otherwise hold up every call's return).

A server that dies mid-run costs only its in-flight candidate: the session's loss is noticed
(a failed remote call, then a failed liveness probe), the candidate goes to another server,
and that slot asks the tracker for a server again (a server restarted under the key is picked
up) or retires. When no server is left, `DevicesLost` (one line) stops the tuning after the
results already measured are written. A kernel that kills the session it runs in takes
TVM's Python server down with it (its listen loop ends when a session exits badly), so such
a candidate is tried on at most `max_attempts` servers, then recorded as a runtime error.

Notes on TVM 0.27: the tracker needs `tornado`; Server/Tracker.terminate() need `psutil`.
"""
from __future__ import annotations

import functools
import itertools
import logging
import os
import socket
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .measure import (RUNTIME_ERROR, BuildResult, MeasureResult, RunOptions, RunSpec, last_line,
                      measure_module, open_device, poison_tensors)
from .parallel import DeviceLost, DevicesLost, ParallelRunner, Slot
from .remote_check import load_counter, remote_check
from .slot_process import ProcessSlot

log = logging.getLogger(__name__)

Address = tuple[str, int]


def parse_address(text: str, default_host: str = "127.0.0.1") -> Address:
    """'HOST:PORT' (or ':PORT', 'PORT') -> (host, port)."""
    host, _, port = text.rpartition(":")
    try:
        return host or default_host, int(port)
    except ValueError:
        raise ValueError(f"expected HOST:PORT, got {text!r}") from None


def _tracker_socket(tracker: Address, timeout: float = 10.0) -> socket.socket:
    from tvm.rpc import base

    sock = socket.create_connection(tracker, timeout=timeout)
    sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
    if struct.unpack("<i", base.recvall(sock, 4))[0] != base.RPC_TRACKER_MAGIC:
        sock.close()
        raise RuntimeError(f"{tracker[0]}:{tracker[1]} is not a TVM RPC tracker")
    return sock


def tracker_summary(tracker: Address) -> dict:
    """The tracker's summary: {'server_info': [{'key': 'server:KEY', 'addr': [host, port]}...],
    'queue_info': {KEY: {'free': n, 'pending': m}}}."""
    from tvm.rpc import base

    sock = _tracker_socket(tracker)
    try:
        base.sendjson(sock, [base.TrackerCode.SUMMARY])
        value = base.recvjson(sock)
    finally:
        sock.close()
    if value[0] != base.TrackerCode.SUCCESS:
        raise RuntimeError(f"tracker summary failed: {value}")
    return value[1]


def tracker_servers(tracker: Address, key: str) -> list[Address]:
    """The servers registered with the tracker under `key` (busy or free)."""
    return [(str(s["addr"][0]), int(s["addr"][1])) for s in tracker_summary(tracker).get("server_info", [])
            if s.get("key") == f"server:{key}"]


def request_session(tracker: Address, key: str, priority: int = 1, wait: Optional[float] = None):
    """A session on a free server under `key`, and that server's address: TVM's tracker
    protocol (as `TrackerSession.request`), with a bound on the wait for a free server
    (socket.timeout after `wait` seconds; the tracker drops the request with the socket)."""
    from tvm import rpc
    from tvm.rpc import base

    sock = _tracker_socket(tracker)
    try:
        sock.settimeout(wait)
        base.sendjson(sock, [base.TrackerCode.REQUEST, key, "", priority])
        value = base.recvjson(sock)
    finally:
        sock.close()
    if value[0] != base.TrackerCode.SUCCESS:
        raise RuntimeError(f"tracker request failed: {value}")
    host, port, matchkey = value[1]
    return rpc.connect(host, port, matchkey, session_timeout=0), (str(host), int(port))


# a server whose own process initialised CUDA before forking the session (TVM's FFI imports
# PyTorch, which asks CUDA for its devices): every session then fails CUDA's initialisation
FORKED_CUDA = "cudaErrorInitializationError"
FORKED_CUDA_HINT = ("the server's process initialised CUDA before starting the session: start "
                    "tvm.exec.rpc_server with TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTORCH_NVML_BASED_CUDA_CHECK=1")


def with_hint(msg: str) -> str:
    """A lost session's message, with what to do where the cause is known."""
    return f"{msg} ({FORKED_CUDA_HINT})" if FORKED_CUDA in msg else msg


def _alive(sess) -> bool:
    """Whether the server still answers: a round trip asking for the upload function, which
    every TVM RPC server has (we upload each candidate through it). A remote device attribute
    is no probe: it is answered without the server."""
    try:
        sess.get_function("tvm.rpc.server.upload")
        return True
    except Exception:  # noqa: BLE001 - broken pipe, kShutdown
        return False


_uploads = itertools.count()  # each upload's name on the server is new

# workloads whose inputs, reference outputs and output check a slot keeps on its server: twice
# the kernels a device tunes at once (loop.default_at_once), so a batch of each finds them there
KEPT_WORKLOADS = 16
# and at most this many bytes of their tensors: a batch-256 conv's outputs are 400 MB, each kept
# three times (the reference's, the poisoned copy, the candidates'), which 16 such workloads would
# make 20 GB on a server
KEPT_BYTES = 4 << 30


def kept_bytes(spec: RunSpec) -> int:
    """Bytes of a workload a slot keeps on its server: the inputs once, the outputs three times."""
    import ml_dtypes  # noqa: F401 - registers bfloat16, the float8s and int4 with numpy

    size = lambda a: int(np.prod(a.shape, dtype=np.int64)) * np.dtype(a.dtype).itemsize  # noqa: E731
    return sum(size(a) for a in spec.args) + 3 * sum(size(o) for o in spec.outputs)


class RPCSlot(Slot):
    """One session on one server: measures one candidate at a time. What a workload needs on
    the server (its inputs, its reference outputs for the check) is sent once and kept for the
    KEPT_WORKLOADS used last, within KEPT_BYTES (a batch-256 model's would fill the server's
    memory otherwise)."""

    def __init__(self, opts: RunOptions, key: Optional[str], tracker: Optional[Address],
                 server: Optional[Address], priority: int = 1, reacquire_timeout: float = 10.0,
                 timeout: Optional[float] = 60.0) -> None:
        self.opts, self.key, self.tracker, self.server = opts, key, tracker, server
        self.timeout = timeout
        self.priority = priority
        self.reacquire_timeout = reacquire_timeout
        self.sess = None
        self.name = f"{server[0]}:{server[1]}" if server else "rpc"
        self._cache: dict = {}  # (what, workload key, seed, kind, ...) -> the session's copy
        self._recent: OrderedDict = OrderedDict()  # (workload key, seed, kind), used last at the end

    def acquire(self, wait: Optional[float]) -> None:
        """Open a session (raises when none can be had within `wait` seconds)."""
        from tvm import rpc

        if self.tracker is not None:
            self.sess, addr = request_session(self.tracker, self.key, self.priority, wait)
        else:
            self.sess, addr = rpc.connect(*self.server, key=self.key or "", session_timeout=0), self.server
        self.name = f"{addr[0]}:{addr[1]}"
        self._forget()

    def _drop(self) -> None:
        self.sess = None  # the connection closes with the last reference
        self._forget()

    def _forget(self) -> None:
        self._cache.clear()
        self._recent.clear()

    def _keep(self, spec: RunSpec, kind: str) -> None:
        """Mark the workload used; the server's copies of the least recently used ones past
        KEPT_WORKLOADS or KEPT_BYTES are let go (a remote object is freed with its last
        reference), never the workload in use."""
        w = (spec.key, spec.seed, kind)
        self._recent[w] = kept_bytes(spec)
        self._recent.move_to_end(w)
        while len(self._recent) > KEPT_WORKLOADS or (len(self._recent) > 1
                                                     and sum(self._recent.values()) > KEPT_BYTES):
            old, _ = self._recent.popitem(last=False)
            for k in [k for k in self._cache if k[1:4] == old]:
                del self._cache[k]

    def reacquire(self) -> bool:
        self._drop()
        try:
            self.acquire(self.reacquire_timeout)
            return True
        except Exception as e:  # noqa: BLE001 - no free server, tracker gone
            log.info("rpc: no new session for slot %s: %s", self.name, last_line(e) if str(e) else type(e).__name__)
            return False

    def _remote_dev(self, kind: str):
        return self.sess.cpu(0) if kind == "llvm" else self.sess.device(kind, 0)

    def _cached(self, k: tuple, make):
        """self._cache[k], made by `make()` if missing. What was made on a session dropped
        meanwhile (a call that timed out, its thread abandoned while the slot took a new
        session) is returned but not kept: its handles would be the old session's."""
        if k not in self._cache:
            sess = self.sess
            value = make()
            if self.sess is not sess:
                return value
            self._cache[k] = value
        return self._cache[k]

    def _inputs(self, spec: RunSpec, kind: str):
        import tvm

        def send():
            dev = self._remote_dev(kind)
            return dev, [tvm.runtime.tensor(a, dev) for a in spec.inputs()]

        return self._cached(("in", spec.key, spec.seed, kind), send)

    def _outputs(self, spec: RunSpec, kind: str) -> list:
        """The workload's outputs on the server, allocated once: every candidate of it writes
        there. A checked run poisons them first, so what an earlier candidate left in them is
        never taken for a result; an unchecked one only times."""
        import tvm

        def allocate():
            dev = self._remote_dev(kind)
            return [tvm.runtime.empty(o.shape, o.dtype, dev) for o in spec.outputs]

        return self._cached(("out", spec.key, spec.seed, kind), allocate)

    def _poison(self, spec: RunSpec, kind: str) -> list:
        """The workload's poisoned outputs on the server, sent once (measure.poison_value)."""
        return self._cached(("poison", spec.key, spec.seed, kind),
                            lambda: poison_tensors(spec.outputs, self._remote_dev(kind)))

    def _load(self, sess, path: str):
        """Upload and load a library under a name of its own: uploading over a library the
        server has loaded (a reference sent again after its workload was let go) takes the
        session down."""
        name = f"{next(_uploads)}_{os.path.basename(path)}"
        sess.upload(path, target=name)
        return sess.load_module(name)

    def _load_kept(self, path: str):
        """A library this session loads once and keeps (the output checks' counters, the same
        for every workload of a type and rank)."""
        return self._cached(("lib", path), lambda: self._load(self.sess, path))

    def _reference(self, spec: RunSpec, kind: str, ref: Optional[BuildResult]) -> Optional[tuple]:
        """(here, there): the reference's outputs copied back, and the same on the server (what
        the output check compares with), run once a workload and session; None where it cannot
        run (its candidates go unchecked)."""
        import tvm

        if ref is None or not ref.ok:
            return None

        def run():
            dev, ins = self._inputs(spec, kind)
            try:
                mod = self._load(self.sess, ref.path)
                outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in spec.outputs]
                mod["main"](*ins, *outs)
                dev.sync()
                return [o.numpy() for o in outs], outs
            except Exception as e:  # noqa: BLE001
                if not _alive(self.sess):
                    raise
                log.warning("remote reference run failed (%s): candidates go unchecked", last_line(e))
                return None

        return self._cached(("ref", spec.key, spec.seed, kind, ref.path), run)

    def _checker(self, spec: RunSpec, kind: str, ran: tuple, reference: BuildResult):
        """The outputs' check on the server (remote_check.py) against the reference's outputs
        (`ran`, what _reference returned), once a workload, reference and session; None (the
        outputs copied back) where it cannot be built."""
        here, there = ran

        def build():
            try:
                return remote_check(self._load_kept, self._remote_dev(kind), spec.outputs, here,
                                    spec.target or kind, there, spec.rounding)
            except Exception as e:  # noqa: BLE001
                if not _alive(self.sess):
                    raise
                log.warning("rpc: outputs checked here, not on the server (%s)", last_line(e))
                return None

        return self._cached(("check", spec.key, spec.seed, kind, reference.path), build)

    def warm(self, kind: str) -> None:
        """Open the server's device now: a session's first use of a GPU starts its CUDA context
        (3 s on an H200), which the first candidate would otherwise wait for."""
        if self.sess is None:
            return
        try:
            open_device(self._remote_dev(kind))
        except Exception as e:  # noqa: BLE001 - the first measurement says what is wrong
            log.info("rpc %s: device not opened ahead (%s)", self.name, last_line(e))

    def prepare(self, checks: list, kind: str) -> None:
        """Load the output checks' counters for these (type, rank, target) (measure.check_kinds)
        now, building those the user cache lacks: 2 s of a device compile each, which the first
        candidate of each kind would otherwise wait for."""
        if self.sess is None or not self.opts.check:
            return
        for dtype, ndim, target in checks:
            try:
                load_counter(self._load_kept, dtype, ndim, target or kind)
            except Exception as e:  # noqa: BLE001 - built when a workload is readied, or checked here
                if not _alive(self.sess):
                    return
                log.info("rpc %s: output check for %s rank %d not prepared (%s)", self.name, dtype, ndim, last_line(e))

    def measure(self, spec: RunSpec, kind: str, build: BuildResult,
                reference: Optional[BuildResult]) -> MeasureResult:
        """Measure on this slot's server; a lost session's message says what to do where the
        cause is known (with_hint)."""
        try:
            return self._answered(spec, kind, build, reference)
        except DeviceLost as e:
            raise DeviceLost(with_hint(str(e))) from None

    def _answered(self, spec: RunSpec, kind: str, build: BuildResult,
                  reference: Optional[BuildResult]) -> MeasureResult:
        """_measure, where a server that stops answering for `timeout` seconds (a machine gone
        without closing its sockets) counts as lost: TVM's RPC calls have no timeout of their
        own, so the call runs on a helper thread that is abandoned then."""
        if self.timeout is None:
            return self._measure(spec, kind, build, reference)
        box: dict = {}

        def call() -> None:
            try:
                box["res"] = self._measure(spec, kind, build, reference)
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box["err"] = e

        t = threading.Thread(target=call, name=f"rpc-{self.name}", daemon=True)
        t.start()
        t.join(self.timeout)
        if t.is_alive():
            self._drop()
            raise DeviceLost(f"no answer in {self.timeout:g}s")
        if "err" in box:
            raise box["err"]
        return box["res"]

    def _measure(self, spec: RunSpec, kind: str, build: BuildResult,
                 reference: Optional[BuildResult]) -> MeasureResult:
        if self.sess is None:  # dropped after a candidate's runtime error: a fresh session
            try:
                self.acquire(self.reacquire_timeout)
            except Exception as e:  # noqa: BLE001
                raise DeviceLost(f"no session: {last_line(e) if str(e) else type(e).__name__}") from None
        sess = self.sess
        self._keep(spec, kind)
        try:
            new = len(self._cache)
            t0 = time.perf_counter()
            dev, ins = self._inputs(spec, kind)
            t1 = time.perf_counter()
            ran = self._reference(spec, kind, reference) if self.opts.check else None
            ref = ran[0] if ran is not None else None
            t2 = time.perf_counter()
            check = self._checker(spec, kind, ran, reference) if ran is not None else None
            poison = self._poison(spec, kind) if ref is not None else None
            outputs = self._outputs(spec, kind)
            if len(self._cache) != new:  # a workload readied on this server: what it cost, once
                log.info("rpc %s: %s readied in %.2fs (inputs %.2fs, reference %.2fs, output check %.2fs)",
                         self.name, spec.key, time.perf_counter() - t0, t1 - t0, t2 - t1, time.perf_counter() - t2)
        except Exception as e:  # noqa: BLE001 - connection lost
            if self.sess is sess:  # not a session taken since (this call timed out, then failed)
                self._drop()
            raise DeviceLost(last_line(e)) from None
        res = measure_module(lambda: self._load(sess, build.path), dev, ins, spec.outputs, ref, self.opts,
                             build.index, build.config,
                             outputs=outputs, check=check,
                             poison=poison, rounding=spec.rounding)
        if res.error == RUNTIME_ERROR:
            alive = _alive(sess)
            self._drop()  # a failed remote call may leave the session unusable (sticky CUDA errors)
            if not alive:
                raise DeviceLost(res.error_msg or "session lost")
        return res

    def close(self) -> None:
        self._drop()


class RPCRunner(ParallelRunner):
    """Measures on remote devices: every server under `key` at `tracker`, in parallel, or the
    one `server` given. Records say `device` (default 'rpc:KEY', or 'rpc:HOST:PORT' for a
    lone server); `counts` says how many candidates each server measured."""

    what = "RPC server"

    def __init__(self, key: Optional[str] = None, tracker: Optional[Address] = None,
                 server: Optional[Address] = None, number: int = 0, repeat: int = 3,
                 min_repeat_ms: int = 20, timeout: float = 60.0, check: bool = True,
                 priority: int = 1, device: Optional[str] = None, acquire_timeout: float = 60.0,
                 reacquire_timeout: float = 10.0, max_attempts: int = 2, isolated: bool = True) -> None:
        if (tracker is None) == (server is None):
            raise ValueError("RPCRunner needs either tracker=(host, port) with key=..., or server=(host, port)")
        if tracker is not None and not key:
            raise ValueError("RPCRunner through a tracker needs the device key")
        self.key, self.tracker, self.server = key, tracker, server
        self.opts = RunOptions(number, repeat, min_repeat_ms, check)
        self.timeout = timeout
        self.priority = priority
        self.acquire_timeout, self.reacquire_timeout = acquire_timeout, reacquire_timeout
        self.isolated = isolated
        super().__init__(self._open_slots, device or (f"rpc:{key}" if tracker else f"rpc:{server[0]}:{server[1]}"),
                         max_attempts)

    def _slot(self) -> Slot:
        """A session's slot: with `isolated`, driven from a process of its own (slot_process.py
        says why); else in this process."""
        make = functools.partial(RPCSlot, self.opts, self.key, self.tracker, self.server, self.priority,
                                 self.reacquire_timeout, self.timeout)
        if not self.isolated:
            return make()
        name = f"{self.server[0]}:{self.server[1]}" if self.server else "rpc"
        # the slot's own timeout bounds a silent server; this one, a worker that hangs beside it
        return ProcessSlot(make, name, None if self.timeout is None else 2 * self.timeout + 60,
                           self.reacquire_timeout)

    def _open_slots(self) -> list[Slot]:
        if self.server is not None:
            slot = self._slot()
            try:
                slot.acquire(self.acquire_timeout)
            except Exception as e:  # noqa: BLE001
                slot.close()  # its measuring process, where it has one
                raise DevicesLost(f"cannot reach the RPC server at {self.server[0]}:{self.server[1]}: "
                                  f"{last_line(e)}") from None
            return [slot]
        where = f"tracker {self.tracker[0]}:{self.tracker[1]}"
        try:
            servers = tracker_servers(self.tracker, self.key)
        except Exception as e:  # noqa: BLE001
            raise DevicesLost(f"cannot reach the RPC {where}: {last_line(e) if str(e) else type(e).__name__}") from None
        if not servers:
            raise DevicesLost(f"no RPC server is registered under key {self.key!r} at {where}")
        slots = [self._slot() for _ in servers]
        errors: list[str] = []

        def acquire(slot: Slot) -> None:
            try:
                slot.acquire(self.acquire_timeout)
            except Exception as e:  # noqa: BLE001
                slot.dead = True
                slot.close()  # its measuring process, where it has one
                errors.append(last_line(e) if str(e) else type(e).__name__)

        threads = [threading.Thread(target=acquire, args=(s,), daemon=True) for s in slots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        live = [s for s in slots if not s.dead]
        if not live:
            raise DevicesLost(f"none of the {len(servers)} RPC servers under key {self.key!r} at {where} "
                              f"gave a session within {self.acquire_timeout:.0f}s ({errors[-1]})")
        if errors:
            log.warning("rpc: %d of %d servers under %r gave no session within %.0fs (%s); measuring on %d",
                        len(errors), len(servers), self.key, self.acquire_timeout, errors[-1], len(live))
        log.info("rpc: measuring on %d server(s) under %r: %s", len(live), self.key,
                 ", ".join(s.name for s in live))
        return live


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class LocalRPC:
    """A tracker and servers on loopback, for tests and for measuring on this box through the
    same path a remote device takes. Each server is a process tree of its own."""

    key: str
    tracker_port: Optional[int]
    server_ports: list[int]
    _tracker: object = None
    _servers: list = field(default_factory=list)

    @property
    def server_port(self) -> int:
        return self.server_ports[0]

    @property
    def tracker_address(self) -> Address:
        return ("127.0.0.1", self.tracker_port)

    @staticmethod
    def _stop(proc) -> None:
        try:
            proc.terminate()  # kills the server's session processes too (psutil)
        except ImportError:  # tvm's terminate() needs psutil; kill the worker directly
            inner = getattr(getattr(proc, "proc", None), "_proc", None)
            if inner is not None:
                inner.kill()
                inner.wait(timeout=10)

    def kill_server(self, i: int) -> None:
        """Kill server `i` and its sessions at once (as a machine that goes away)."""
        if self._servers[i] is not None:
            self._stop(self._servers[i])
            self._servers[i] = None

    def close(self) -> None:
        for i in range(len(self._servers)):
            self.kill_server(i)
        if self._tracker is not None:
            self._stop(self._tracker)
            self._tracker = None


def start_local_rpc(key: str = "local", with_tracker: bool = True, wait: float = 20.0,
                    servers: int = 1) -> LocalRPC:
    """Start (a tracker and) `servers` servers on 127.0.0.1; returns once all are registered."""
    from tvm.rpc import server as rserver

    if servers > 1 and not with_tracker:
        raise ValueError("several servers need a tracker")
    lr = LocalRPC(key, None, [])
    try:
        tracker_addr = None
        if with_tracker:
            from tvm.rpc import tracker as rtracker  # needs tornado

            port = free_port()
            lr._tracker = rtracker.Tracker(host="127.0.0.1", port=port, port_end=port + 50, silent=True)
            lr.tracker_port = lr._tracker.port
            tracker_addr = lr.tracker_address
            _wait_listening(tracker_addr, wait)
        for _ in range(servers):
            sport = free_port()
            srv = rserver.Server(host="127.0.0.1", port=sport, port_end=sport + 50, key=key,
                                 tracker_addr=tracker_addr, silent=True)
            lr._servers.append(srv)
            lr.server_ports.append(srv.port)
        if tracker_addr is not None:
            deadline = time.monotonic() + wait
            while True:
                try:
                    if tracker_summary(tracker_addr)["queue_info"].get(key, {}).get("free", 0) >= servers:
                        break
                except Exception:  # noqa: BLE001 - not up yet
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{servers} rpc server(s) {key!r} did not register with the tracker in {wait}s")
                time.sleep(0.2)
        else:
            _wait_listening(("127.0.0.1", lr.server_port), wait)
    except BaseException:
        lr.close()
        raise
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

