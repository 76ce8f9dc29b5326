"""On-disk kernel cache: compiled group modules keyed by what determines their code.

Why: compiling a CUDA kernel (codegen + nvcc) dominates build time, and a network repeats
the same groups across runs. The key hashes the workload, template, config values,
target, the tefuse and TVM versions, and a fingerprint of tefuse's and the schedules'
sources (so editing a template or an op in a checkout never serves a stale kernel).

Entries are shared libraries written by `export_library` to a temp name and renamed into
place, so concurrent builds never see half a file. Each has a `.meta` record of its key, size
and sha256, checked before the library is loaded: a truncated, damaged or swapped library is
dropped with a warning and rebuilt, never dlopened. An entry that fails to load is dropped too.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Optional, Union

import tvm

from ..errors import TefuseError
from ..paths import kernel_cache_dir

log = logging.getLogger(__name__)

# host-side module kinds that need no device loader when a library is loaded back
_HOST_KINDS = {"llvm", "c", "static_library", "library"}
_MISSING_LOADER = "loader of that name is not registered"


_FINGERPRINT: Optional[str] = None


def source_fingerprint() -> str:
    """Hash of every .py file of tefuse and schedules, once per process (a few ms)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        from .. import schedules

        h = hashlib.sha256()
        for root in (Path(__file__).resolve().parents[1], Path(schedules.__file__).resolve().parent):
            for f in sorted(root.rglob("*.py")):
                h.update(str(f.relative_to(root.parent)).encode())
                h.update(f.read_bytes())
        _FINGERPRINT = h.hexdigest()[:16]
    return _FINGERPRINT


def _loader_missing(kind: str) -> bool:
    return (kind not in _HOST_KINDS
            and tvm.get_global_func(f"ffi.Module.load_from_bytes.{kind}", allow_missing=True) is None)


class KernelCache:
    """Compiled kernels on disk; `load`/`store` are what build_group calls."""

    def __init__(self, root: Optional[Union[str, os.PathLike]] = None):
        self.root = Path(root).expanduser() if root is not None else kernel_cache_dir()

    def __repr__(self) -> str:
        return f"KernelCache({str(self.root)!r})"

    def key(self, workload_key: str, target: tvm.target.Target, choice: Any) -> str:
        from ..version import __version__

        values = {k: list(v) if isinstance(v, tuple) else v for k, v in choice.config.values.items()}
        options = choice.options.changed()  # the defaults add nothing: keys stay as they were
        blob = json.dumps([workload_key, choice.template.name, values, str(target), __version__,
                           tvm.__version__, source_fingerprint(), *([options] if options else [])],
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.so"

    @staticmethod
    def source_path(lib: Path) -> Path:
        """The generated device source beside an entry (a loaded library no longer holds it)."""
        return lib.with_suffix(".src")

    @staticmethod
    def meta_path(lib: Path) -> Path:
        """The entry's record of its key, size and sha256, checked before the library is loaded."""
        return lib.with_suffix(".meta")

    def _drop(self, p: Path, why: str) -> None:
        log.warning("dropping corrupt kernel cache entry %s (%s); rebuilding", p, why)
        for f in (p, self.source_path(p), self.meta_path(p)):
            try:
                f.unlink(missing_ok=True)
            except OSError:
                pass

    def _verify(self, p: Path, key: str) -> tuple[Optional[str], bytes]:
        """Why the entry must not be loaded (None: its bytes are the ones stored under key), and
        the bytes. Loading a truncated library SIGBUSes, flipped bytes segfault and another
        kernel's library runs the wrong code: none of them may reach dlopen."""
        try:
            meta = json.loads(self.meta_path(p).read_text())
            data = p.read_bytes()
        except (OSError, ValueError, RecursionError) as e:
            return f"no readable checksum record ({type(e).__name__})", b""
        if not isinstance(meta, dict) or meta.get("key") != key:
            return "its record names another key", b""
        if meta.get("size") != len(data) or meta.get("sha256") != hashlib.sha256(data).hexdigest():
            return "checksum mismatch (truncated, damaged or replaced library)", b""
        return None, data

    def load(self, workload_key: str, target: tvm.target.Target, choice: Any) -> Optional[tvm.runtime.Module]:
        """The cached module, or None (a miss, or an entry this process cannot load)."""
        got = self.load_entry(workload_key, target, choice)
        return None if got is None else got[0]

    def load_entry(self, workload_key: str, target: tvm.target.Target,
                   choice: Any) -> Optional[tuple[tvm.runtime.Module, bytes]]:
        """The cached module and the verified library bytes it was loaded from (what saving an
        artefact copies: TVM cannot export a module loaded from a library), or None."""
        key = self.key(workload_key, target, choice)
        p = self.path(key)
        try:
            if not p.is_file():
                return None
        except OSError:
            return None
        why, data = self._verify(p, key)
        if why is not None:
            self._drop(p, why)
            return None
        try:
            mod = tvm.runtime.load_module(str(p))
        except Exception as e:  # noqa: BLE001 - TVM raises RuntimeError/TVMError/OSError
            msg = str(e).strip().splitlines()
            if _MISSING_LOADER in str(e):
                # a valid entry for a device runtime this TVM lacks (e.g. no CUDA here): keep it
                log.debug("kernel cache entry %s needs a device runtime not available here", p)
                return None
            log.warning("dropping corrupt kernel cache entry %s (%s); rebuilding", p,
                        msg[-1] if msg else type(e).__name__)
            p.unlink(missing_ok=True)
            self.source_path(p).unlink(missing_ok=True)
            return None
        log.debug("kernel cache hit %s for %s", p.name, workload_key)
        return mod, data

    def load_source(self, workload_key: str, target: tvm.target.Target, choice: Any) -> str:
        """The device source stored with an entry; "" when there is none."""
        p = self.source_path(self.path(self.key(workload_key, target, choice)))
        try:
            return p.read_text()
        except (OSError, UnicodeDecodeError):
            return ""

    def store(self, workload_key: str, target: tvm.target.Target, choice: Any,
              module: tvm.runtime.Module, source: str = "") -> Optional[Path]:
        """Export atomically; failures only cost the cache, never the build."""
        kinds = {m.kind for m in module.imports}
        if any(_loader_missing(k) for k in kinds):
            # this process could never load it back (e.g. a CUDA build on a GPU-less host)
            log.debug("not caching %s: no runtime here for %s", workload_key, sorted(kinds))
            return None
        p = self.path(self.key(workload_key, target, choice))
        tmp = p.with_name(f".{p.stem}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.so")
        tmp_src = tmp.with_suffix(".src")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if source:  # before the library, so an entry that exists has its source
                tmp_src.write_text(source)
                os.replace(tmp_src, self.source_path(p))
            module.export_library(str(tmp))
            data = tmp.read_bytes()
            key = self.key(workload_key, target, choice)
            tmp_meta = tmp.with_suffix(".meta")
            tmp_meta.write_text(json.dumps({"key": key, "size": len(data),
                                            "sha256": hashlib.sha256(data).hexdigest()}))
            os.replace(tmp_meta, self.meta_path(p))
            os.replace(tmp, p)
        except Exception as e:  # noqa: BLE001 - disk full, no compiler, read-only cache...
            log.warning("could not store kernel for %s in the cache: %s", workload_key, e)
            for f in (tmp, tmp_src, tmp.with_suffix(".meta")):
                try:
                    f.unlink(missing_ok=True)
                except OSError:
                    pass
            try:
                if not p.exists():
                    self.source_path(p).unlink(missing_ok=True)
            except OSError:
                pass
            return None
        return p

    def clear(self) -> int:
        """Remove every entry; returns how many were removed. Files that cannot be removed (a
        read-only cache) are tried all the same, then reported in one TefuseError naming the
        cache, the reason and the first of them."""
        n, failed = 0, []
        for f in self.root.glob("*/*.so"):
            try:
                f.unlink(missing_ok=True)
                n += 1
            except OSError as e:
                failed.append((f, e))
        for f in [*self.root.glob("*/*.src"), *self.root.glob("*/*.meta")]:  # with their libraries
            try:
                f.unlink(missing_ok=True)
            except OSError as e:
                failed.append((f, e))
        if failed:
            f, e = failed[0]
            raise TefuseError(f"kernel cache {self.root}: cannot remove {len(failed)} file(s) "
                              f"({e.strerror or e}: {f}); {n} kernel(s) removed")
        return n


_DEFAULT: dict[Path, KernelCache] = {}


def default_cache() -> KernelCache:
    root = kernel_cache_dir()
    return _DEFAULT.setdefault(root, KernelCache(root))
