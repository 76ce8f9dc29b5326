"""The performance database: tuning logs (JSON lines) that build reads the best config from.

Why plain append-only JSON lines: several tuners (processes, machines) write at once and
a crash must cost at most the line being written. Each append is one write() of whole
lines under O_APPEND and an exclusive flock, then fsync; readers take a shared flock and
skip (with a warning naming file and line) whatever does not parse.

Layering (like MIOpen's user/system find-db): the user's own log comes first, then the
logs shipped in the package, `tefuse/tuning_logs/`; the fastest record wins, the user's on ties.
"""
from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from ..errors import TefuseError
from ..paths import probe_directory
from .record import TuningRecord

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]


def _known_templates() -> set[str]:
    from ..schedules.registry import template_names

    return template_names()


def usable_reason(r: TuningRecord, known: Optional[set[str]] = None) -> Optional[str]:
    """Why a record can never be applied (None: it can be ranked)."""
    why = r.unusable_reason()
    if why is None and r.template not in (known if known is not None else _known_templates()):
        why = f"unknown template {r.template!r}"
    return why


def _ranked(records: Iterable[TuningRecord], device: Optional[str] = None) -> list[TuningRecord]:
    """Usable records, fastest (lowest median) first; the first seen wins ties. A record that
    cannot be applied (failed, implausible cost, unknown template, config of the wrong
    types) is never ranked, so it can never mask a valid one."""
    known = _known_templates()
    out = []
    for r in records:
        if device is not None and r.device != device:
            continue
        why = usable_reason(r, known)
        if why is None:
            out.append(r)
        elif r.ok:  # failed measurements are normal; a broken "success" is worth one warning
            _warn_once(r, why)
    return sorted(out, key=lambda r: r.median_cost)  # stable


_WARNED: set = set()


def _warn_once(r: TuningRecord, why: str) -> None:
    k = (r.workload, r.target, r.template, r.config_index, why)
    if k not in _WARNED:
        _WARNED.add(k)
        log.warning("tuning record for %s (%s #%d) cannot be applied: %s; ignoring it",
                    r.workload, r.template, r.config_index, why)


def _pick_best(records: Iterable[TuningRecord], device: Optional[str] = None) -> Optional[TuningRecord]:
    """Lowest median cost among usable records; the first one seen wins ties."""
    ranked = _ranked(records, device)
    return ranked[0] if ranked else None


def _open_locked(path: Path, flags: int) -> int:
    """Open path and take its exclusive flock, making sure the locked file is still the one at
    `path`: merge and distill replace a log by rename while holding this lock, so a writer
    that opened the old file while waiting reopens the new one instead of appending to a file
    nobody will read again."""
    while True:
        fd = os.open(path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if st is not None and st.st_ino == os.fstat(fd).st_ino:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced (or removed) while we waited: try the file there now


class Database:
    """One JSON-lines tuning log. Parsed records are cached and refreshed when the file
    changes (appends are parsed incrementally), so repeated best() calls during a build
    cost a stat, not a parse."""

    def __init__(self, path: PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: Optional[tuple[int, int, int]] = None  # (inode, size, mtime_ns) last parsed
        self._offset = 0  # byte offset just past the last complete line parsed
        self._lineno = 0  # lines consumed up to _offset
        self._all: list[TuningRecord] = []
        self._by_key: dict[tuple[str, str], list[TuningRecord]] = {}
        self._by_structure: dict[tuple[str, str], list[TuningRecord]] = {}

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r})"

    # -- writing -----------------------------------------------------------------------
    def check_writable(self) -> None:
        """Refuse, in one line naming the log, a log that appends could not reach (a directory,
        a read-only or special file system such as /proc, a missing parent that cannot be
        made): probed before a tuner spends time measuring. Opens the log for appending, or
        creates and removes a probe file beside it when it does not exist yet."""
        path, parent = self.path, self.path.parent
        try:
            if path.is_dir():
                raise IsADirectoryError(21, "Is a directory")
            parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            else:
                probe_directory(parent, path.name)
        except OSError as e:
            raise TefuseError(f"tuning log {path}: cannot write ({e.strerror or e})") from None

    def append(self, record: TuningRecord) -> None:
        self.append_many([record])

    def append_many(self, records: Sequence[TuningRecord]) -> None:
        """Append whole lines in one write() under an exclusive lock, then fsync."""
        data = "".join(r.to_json() + "\n" for r in records).encode()
        if not data:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_locked(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    # a writer died mid-line: start on a fresh line so ours stay parseable
                    data = b"\n" + data
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- reading -----------------------------------------------------------------------
    def _reset(self) -> None:
        self._offset = self._lineno = 0
        self._all, self._by_key, self._by_structure = [], {}, {}

    def _refresh(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._reset()
            self._stamp = None
            return
        if (st.st_ino, st.st_size, st.st_mtime_ns) == self._stamp:
            return
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            self._reset()
            self._stamp = None
            return
        except OSError as e:  # a directory, no permission
            raise TefuseError(f"tuning log {self.path}: cannot read ({e.strerror or e})") from None
        with f:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH)
            try:
                st = os.fstat(f.fileno())  # what we read is exactly this version of the file
                if self._stamp is None or st.st_ino != self._stamp[0] or st.st_size < self._offset:
                    self._reset()  # new, replaced or truncated: parse from scratch
                f.seek(self._offset)
                tail = f.read()
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        self._stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        lines = tail.split(b"\n")
        partial = lines.pop()  # after the last newline: empty, or a line cut short
        for raw in lines:
            self._lineno += 1
            self._offset += len(raw) + 1
            self._parse(raw, self._lineno)
        if partial.strip():
            log.warning("%s:%d: skipping truncated tuning record (no newline at end of file)",
                        self.path, self._lineno + 1)

    def _parse(self, raw: bytes, lineno: int) -> None:
        if not raw.strip():
            return
        try:
            rec = TuningRecord.from_json(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            log.warning("%s:%d: skipping malformed tuning record: %s", self.path, lineno, e)
            return
        except RecursionError:
            log.warning("%s:%d: skipping malformed tuning record: nested too deeply to parse",
                        self.path, lineno)
            return
        self._all.append(rec)
        self._by_key.setdefault((rec.workload, rec.target), []).append(rec)
        if rec.structure is not None:
            self._by_structure.setdefault((rec.structure, rec.target), []).append(rec)

    def records(self, workload: Optional[str] = None, target: Optional[str] = None) -> list[TuningRecord]:
        """Valid records in file order, optionally only those of one workload and/or target."""
        with self._lock:
            self._refresh()
            if workload is not None and target is not None:
                return list(self._by_key.get((workload, target), ()))
            return [r for r in self._all if (workload is None or r.workload == workload)
                    and (target is None or r.target == target)]

    def best(self, workload: str, target: str, device: Optional[str] = None) -> Optional[TuningRecord]:
        """The fastest ok record (lowest median); a failed measurement is never best."""
        return _pick_best(self.records(workload, target), device)

    def ranked(self, workload: str, target: str, device: Optional[str] = None) -> list[TuningRecord]:
        """Usable records, fastest first (build tries them in turn)."""
        return _ranked(self.records(workload, target), device)

    def structure_records(self, structure: str, target: str) -> list[TuningRecord]:
        """The records of every workload of one structure (fusion.workload.structure_key)."""
        with self._lock:
            self._refresh()
            return list(self._by_structure.get((structure, target), ()))

    def ranked_structure(self, structure: str, target: str, device: Optional[str] = None) -> list[TuningRecord]:
        """Usable records of the structure's workloads, fastest first: what build ranks beside
        a kernel's own (codegen.schedule.choose_schedule)."""
        return _ranked(self.structure_records(structure, target), device)

    def measured_indices(self, workload: str, target: str, template: str) -> set[int]:
        """Config indices already measured (failures included), so a resumed tuner skips them."""
        return {r.config_index for r in self.records(workload, target) if r.template == template}

    def __len__(self) -> int:
        return len(self.records())


class LayeredDatabase:
    """Databases searched together, the first (the user's) taking precedence on ties;
    appends go to the first."""

    def __init__(self, layers: Sequence[Database], training_logs: Sequence[Path] = ()):
        if not layers:
            raise ValueError("a layered database needs at least one layer")
        self.layers = list(layers)
        # logs that build never ranks but the transfer cost model learns from (trial_log_paths)
        self.training_logs = list(training_logs)

    @property
    def user(self) -> Database:
        return self.layers[0]

    def __repr__(self) -> str:
        return f"LayeredDatabase({[str(d.path) for d in self.layers]})"

    def check_writable(self) -> None:
        self.user.check_writable()

    def append(self, record: TuningRecord) -> None:
        self.user.append(record)

    def append_many(self, records: Sequence[TuningRecord]) -> None:
        self.user.append_many(records)

    def records(self, workload: Optional[str] = None, target: Optional[str] = None) -> list[TuningRecord]:
        return [r for d in self.layers for r in d.records(workload, target)]

    def best(self, workload: str, target: str, device: Optional[str] = None) -> Optional[TuningRecord]:
        return _pick_best(self.records(workload, target), device)

    def ranked(self, workload: str, target: str, device: Optional[str] = None) -> list[TuningRecord]:
        return _ranked(self.records(workload, target), device)

    def structure_records(self, structure: str, target: str) -> list[TuningRecord]:
        return [r for d in self.layers for r in d.structure_records(structure, target)]

    def ranked_structure(self, structure: str, target: str, device: Optional[str] = None) -> list[TuningRecord]:
        return _ranked(self.structure_records(structure, target), device)

    def measured_indices(self, workload: str, target: str, template: str) -> set[int]:
        """The user layer's only: shipped logs were measured on other machines."""
        return self.user.measured_indices(workload, target, template)


# -- default locations ---------------------------------------------------------------------
def user_db_path() -> Path:
    """$TEFUSE_USER_DB, else tuning.jsonl in the user data directory (platformdirs: on Linux
    $XDG_DATA_HOME/tefuse, ~/.local/share/tefuse by default): tuning results are data that a
    cache cleaner must not delete. A log at the old place ($XDG_CACHE_HOME/tefuse/tuning.jsonl)
    stays in use until one exists at the new place."""
    value = os.environ.get("TEFUSE_USER_DB")
    if value:
        path = Path(value).expanduser()
        if path.is_dir():
            raise TefuseError(f"TEFUSE_USER_DB={value}: is a directory; it names the user tuning log "
                              f"file (such as {path / 'tuning.jsonl'})")
        return path
    import platformdirs

    path = Path(platformdirs.user_data_dir("tefuse", appauthor=False)) / "tuning.jsonl"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    legacy = Path(cache) / "tefuse" / "tuning.jsonl"
    if not path.exists() and legacy.is_file():
        if legacy not in _LEGACY_NOTED:
            _LEGACY_NOTED.add(legacy)
            log.info("using the tuning log at its old place %s; move it to %s", legacy, path)
        return legacy
    return path


_LEGACY_NOTED: set[Path] = set()


def shipped_logs_dir() -> Path:
    """tefuse/tuning_logs/, the tuning logs that ship inside the package."""
    return Path(__file__).resolve().parents[1] / "tuning_logs"


def system_db_paths() -> list[Path]:
    """The shipped logs: every *.jsonl in tefuse/tuning_logs/ (package data: the same
    place in a checkout, an editable install and a wheel), or in the directories and files
    listed in $TEFUSE_SYSTEM_DB (os.pathsep-separated; empty = none)."""
    env = os.environ.get("TEFUSE_SYSTEM_DB")
    if env is not None:
        roots = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    else:
        roots = [shipped_logs_dir()]
    out: list[Path] = []
    for r in roots:
        out.extend(sorted(r.glob("*.jsonl")) if r.is_dir() else [r] if r.is_file() else [])
    return out


def trial_log_paths() -> list[Path]:
    """Every trial of the tuning runs the shipped logs were distilled from: trials/*.jsonl.gz
    beside each shipped log directory (tefuse/tuning_logs/trials/, or under the directories
    of $TEFUSE_SYSTEM_DB). Not ranked by build (a trial is no better than the distilled best);
    the transfer cost model (tune/transfer.py) trains on them."""
    env = os.environ.get("TEFUSE_SYSTEM_DB")
    roots = [Path(p).expanduser() for p in env.split(os.pathsep) if p] if env is not None \
        else [shipped_logs_dir()]
    return [p for r in roots if r.is_dir() for p in sorted(r.glob("trials/*.jsonl.gz"))]


_OPEN: dict[Path, Database] = {}
_OPEN_LOCK = threading.Lock()


def open_database(path: PathLike) -> Database:
    """One shared Database per path, so its parse cache survives across builds."""
    p = Path(path).expanduser().absolute()
    with _OPEN_LOCK:
        if p not in _OPEN:
            _OPEN[p] = Database(p)
        return _OPEN[p]


def default_database() -> LayeredDatabase:
    """User log first, then the shipped system logs (resolved from the environment now), with
    the shipped trials as its training logs."""
    user = user_db_path()
    system = [p for p in system_db_paths() if p.absolute() != user.absolute()]
    return LayeredDatabase([open_database(user), *(open_database(p) for p in system)], trial_log_paths())


def records_elsewhere(log: Union[None, PathLike]) -> Optional[LayeredDatabase]:
    """The default database less the log a run tunes into (`log`, else the user database):
    what `tune --untuned-only` counts as covered. The log's own kernels resume as usual (each
    kernel's first record is its untuned config, so a cut-short run's kernels would otherwise
    count as done); None when nothing else is left."""
    db = default_database()
    into = Path(log).expanduser().absolute() if log is not None else user_db_path().absolute()
    layers = [d for d in db.layers if Path(d.path).absolute() != into]
    return LayeredDatabase(layers, db.training_logs) if layers else None


# -- maintenance ---------------------------------------------------------------------------
def _as_db(src: Union[PathLike, Database, LayeredDatabase]):
    return src if isinstance(src, (Database, LayeredDatabase)) else Database(src)


def missing_log_message(path) -> str:
    """Why `path` cannot be read as a tuning log, in one line."""
    return f"{path} is a directory, not a tuning log" if Path(path).is_dir() else f"no such tuning log: {path}"


def _check_sources(dbs) -> None:
    for d in dbs:
        if isinstance(d, Database) and not d.path.is_file():
            raise TefuseError(missing_log_message(d.path))


def _parse_locked(fd: int, path: Path) -> list[TuningRecord]:
    """Records of the file behind a locked fd (not through Database: its shared lock on
    another descriptor would wait for our own exclusive one)."""
    data = b""
    while True:
        chunk = os.pread(fd, 1 << 20, len(data))
        if not chunk:
            break
        data += chunk
    tmp = Database(path)
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        tmp._parse(raw, lineno)
    return tmp._all


def _rewrite_locked(dest: PathLike, sources: Sequence, combine, keep_own: bool = True) -> int:
    """Replace dest by combine(records of dest + sources), holding dest's appender lock from
    reading dest to the rename, so an append racing the rewrite is either read or lands in the
    new file (appenders reopen a replaced file): nothing is lost."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_locked(dest, os.O_RDWR | os.O_CREAT)
    try:
        own = _parse_locked(fd, dest)
        records: list[TuningRecord] = []
        for d in sources:
            if isinstance(d, Database) and d.path.resolve() == dest.resolve():
                records.extend(own)
                own = []
            else:
                records.extend(d.records())
        return _write_atomic(combine((own if keep_own else []) + records), dest)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _write_atomic(records: Iterable[TuningRecord], dest: PathLike) -> int:
    """Replace dest with these records via a temp file + rename: readers never see half."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    n = 0
    try:
        with os.fdopen(fd, "w") as f:
            for r in records:
                f.write(r.to_json() + "\n")
                n += 1
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


def merge(sources: Sequence[Union[PathLike, Database]], dest: PathLike) -> int:
    """Merge logs into dest (its own records kept, including those tuners append while the
    merge runs), dropping exact duplicates; returns the number of records dest now holds.
    Ordered by timestamp so the result reads as a history. A missing source is an error."""
    dbs = [_as_db(s) for s in sources]
    _check_sources(dbs)

    def combine(records):
        seen: dict[str, TuningRecord] = {}
        for r in records:
            seen.setdefault(r.to_json(), r)
        return sorted(seen.values(), key=lambda r: r.timestamp)

    return _rewrite_locked(dest, dbs, combine)


def distill(source: Union[PathLike, Database, Sequence[PathLike]], dest: PathLike) -> int:
    """Keep only the best usable record per (workload, target, device): what a shipped log
    needs. dest is replaced (its own records take part only when it is also a source, then
    read under the appenders' lock)."""
    dbs = [_as_db(s) for s in source] if isinstance(source, (list, tuple)) else [_as_db(source)]
    _check_sources(dbs)
    known = _known_templates()

    def combine(records):
        best: dict[tuple[str, str, str], TuningRecord] = {}
        for r in records:
            k = (r.workload, r.target, r.device)
            if usable_reason(r, known) is None and (k not in best or r.median_cost < best[k].median_cost):
                best[k] = r
        return sorted(best.values(), key=lambda r: (r.workload, r.target, r.device))

    return _rewrite_locked(dest, dbs, combine, keep_own=False)
