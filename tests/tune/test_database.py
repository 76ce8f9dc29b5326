"""Database: append-only JSON lines, concurrent writers, damaged lines skipped, best(), layering,
merge/distill and the `tefuse db` command."""
import json
import logging
import multiprocessing as mp
import os
import time

import pytest

from tefuse.cli import main
from tefuse.tune import database as D
from tefuse.tune.database import Database, LayeredDatabase, default_database, distill, merge
from tefuse.tune.record import TuningRecord

WL = "conv2d+bias_add+relu|1x8x8x8|float32|5157f538a1936d54"


def _rec(idx=0, costs=(1e-3,), error=None, workload=WL, target="cuda-sm_90", device="gpu0", **kw):
    return TuningRecord(workload=workload, target=target, device=device, template="conv2d_direct",
                        config={"unroll": idx}, config_index=idx, costs=list(costs), error=error, **kw)


def _writer(path: str, worker: int, n: int) -> None:
    db = Database(path)
    pad = "x" * (2000 + 97 * worker)  # long lines: a torn write would show
    for i in range(n):
        db.append(_rec(idx=worker * 10_000 + i, error_msg=pad))


def test_concurrent_writers_never_interleave(tmp_path, caplog):
    path = str(tmp_path / "log.jsonl")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 250)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 1001
    with caplog.at_level(logging.WARNING):
        recs = Database(path).records()
    assert not caplog.records
    assert len(recs) == 1000
    assert sorted(r.config_index for r in recs) == sorted(w * 10_000 + i for w in range(4) for i in range(250))


def test_round_trip_and_append_many(tmp_path):
    db = Database(tmp_path / "sub" / "log.jsonl")
    assert db.records() == [] and db.best(WL, "cuda-sm_90") is None
    recs = [_rec(i, costs=[i + 1.0]) for i in range(3)]
    db.append(recs[0])
    db.append_many(recs[1:])
    assert [r.to_json() for r in db.records()] == [r.to_json() for r in recs]
    assert [r.to_json() for r in Database(db.path).records()] == [r.to_json() for r in recs]


def test_truncated_last_line_skipped_with_line_number(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    good = [_rec(1).to_json(), _rec(2).to_json()]
    path.write_text(good[0] + "\n" + good[1] + "\n" + _rec(3).to_json()[:40])
    db = Database(path)
    with caplog.at_level(logging.WARNING, logger="tefuse.tune.database"):
        assert [r.config_index for r in db.records()] == [1, 2]
    assert any("log.jsonl:3" in m and "truncated" in m for m in caplog.messages)
    # a later append starts on a fresh line: the torn line stays isolated, the new one parses
    caplog.clear()
    db.append(_rec(4))
    with caplog.at_level(logging.WARNING, logger="tefuse.tune.database"):
        assert [r.config_index for r in db.records()] == [1, 2, 4]
    assert any("log.jsonl:3" in m and "malformed" in m for m in caplog.messages)


def test_garbage_lines_skipped_with_line_numbers(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    lines = [_rec(1).to_json(), "not json at all", "", '{"workload": 1}', "\x00\x00\x00", _rec(2).to_json()]
    path.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="tefuse.tune.database"):
        recs = Database(path).records()
    assert [r.config_index for r in recs] == [1, 2]
    text = "\n".join(caplog.messages)
    for n in (2, 4, 5):
        assert f"log.jsonl:{n}:" in text
    assert "log.jsonl:3:" not in text and "log.jsonl:6:" not in text  # blank and good lines are fine
    assert len(caplog.records) == 3


def test_cache_refreshes_on_append_and_replace(tmp_path):
    path = tmp_path / "log.jsonl"
    db = Database(path)
    db.append(_rec(1, costs=[5.0]))
    assert db.best(WL, "cuda-sm_90").config_index == 1
    Database(path).append(_rec(2, costs=[1.0]))  # another writer
    assert db.best(WL, "cuda-sm_90").config_index == 2
    distill(path, path)  # rewritten in place (new inode)
    assert [r.config_index for r in db.records()] == [2]


def test_best_ignores_errors_and_ranks_by_median(tmp_path):
    db = Database(tmp_path / "log.jsonl")
    db.append_many([
        _rec(1, costs=[2.0, 2.0, 2.0]),
        _rec(2, costs=[1.0, 1.0, 100.0]),  # mean 34, median 1: best
        _rec(3, costs=[], error="compile_error", error_msg="boom"),
        _rec(4, costs=[0.001], error="wrong_result"),  # fast but wrong: never best
        _rec(5, costs=[0.5], target="cuda-sm_80"),
        _rec(6, costs=[0.1], workload="other"),
        _rec(7, costs=[1.5], device="gpu1"),
    ])
    assert db.best(WL, "cuda-sm_90").config_index == 2
    assert db.best(WL, "cuda-sm_90", device="gpu1").config_index == 7
    assert db.best(WL, "cuda-sm_80").config_index == 5
    assert db.best(WL, "rocm-gfx90a") is None
    assert db.measured_indices(WL, "cuda-sm_90", "conv2d_direct") == {1, 2, 3, 4, 7}
    assert db.measured_indices(WL, "cuda-sm_90", "other_template") == set()
    only_errors = Database(tmp_path / "err.jsonl")
    only_errors.append(_rec(1, costs=[], error="timeout"))
    assert only_errors.best(WL, "cuda-sm_90") is None


def test_layered_precedence(tmp_path, monkeypatch):
    sysdir = tmp_path / "tuning_logs"
    sysdir.mkdir()
    user = tmp_path / "user.jsonl"
    Database(sysdir / "a.jsonl").append_many([_rec(10, costs=[1.0]), _rec(11, costs=[0.5], workload="w2")])
    Database(sysdir / "b.jsonl").append(_rec(12, costs=[3.0], workload="w3"))
    (sysdir / "notes.txt").write_text("not a log")
    Database(user).append_many([_rec(20, costs=[1.0]), _rec(21, costs=[0.9], workload="w2")])
    monkeypatch.setenv("TEFUSE_USER_DB", str(user))
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", str(sysdir))
    db = default_database()
    assert isinstance(db, LayeredDatabase) and [p.path.name for p in db.layers] == ["user.jsonl", "a.jsonl", "b.jsonl"]
    assert db.best(WL, "cuda-sm_90").config_index == 20  # tie: user wins
    assert db.best("w2", "cuda-sm_90").config_index == 11  # the shipped one is faster
    assert db.best("w3", "cuda-sm_90").config_index == 12  # only shipped
    db.append(_rec(22, costs=[0.1], workload="w3"))  # appends go to the user db
    assert db.best("w3", "cuda-sm_90").config_index == 22
    assert [r.config_index for r in Database(user).records()] == [20, 21, 22]
    assert len(Database(sysdir / "b.jsonl").records()) == 1
    assert db.measured_indices("w3", "cuda-sm_90", "conv2d_direct") == {22}


def test_default_locations(tmp_path, monkeypatch):
    monkeypatch.delenv("TEFUSE_USER_DB", raising=False)
    monkeypatch.delenv("TEFUSE_SYSTEM_DB", raising=False)
    monkeypatch.setattr("sys.platform", "linux")  # platformdirs' XDG rules
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    # tuning records are data (a cache cleaner must not delete them), in the user data directory
    assert D.user_db_path() == tmp_path / "data" / "tefuse" / "tuning.jsonl"
    # a log at the old place, in the cache directory, stays in use until one exists at the new place
    legacy = tmp_path / "cache" / "tefuse" / "tuning.jsonl"
    legacy.parent.mkdir(parents=True)
    legacy.write_text("")
    assert D.user_db_path() == legacy
    (tmp_path / "data" / "tefuse").mkdir(parents=True)
    (tmp_path / "data" / "tefuse" / "tuning.jsonl").write_text("")
    assert D.user_db_path() == tmp_path / "data" / "tefuse" / "tuning.jsonl"
    from tefuse.paths import kernel_cache_dir
    monkeypatch.delenv("TEFUSE_CACHE_DIR", raising=False)
    assert kernel_cache_dir() == tmp_path / "cache" / "tefuse" / "kernels"
    import tefuse
    from pathlib import Path
    shipped = Path(tefuse.__file__).resolve().parent / "tuning_logs"
    assert D.system_db_paths() and all(p.parent == shipped for p in D.system_db_paths())
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", "")
    assert D.system_db_paths() == [] and len(default_database().layers) == 1


def test_merge_and_distill(tmp_path):
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    shared = _rec(1, costs=[2.0], timestamp=1.0)
    Database(a).append_many([shared, _rec(2, costs=[1.0], timestamp=3.0)])
    Database(b).append_many([shared, _rec(3, costs=[], error="timeout", timestamp=2.0),
                             _rec(4, costs=[0.5], device="gpu1", timestamp=4.0)])
    Database(out).append(_rec(5, costs=[9.0], workload="kept", timestamp=0.5))
    assert merge([a, b], out) == 5  # duplicate dropped, out's own record kept
    assert [r.config_index for r in Database(out).records()] == [5, 1, 3, 2, 4]
    best = tmp_path / "best.jsonl"
    assert distill(out, best) == 3
    assert {(r.workload, r.device, r.config_index) for r in Database(best).records()} == {
        (WL, "gpu0", 2), (WL, "gpu1", 4), ("kept", "gpu0", 5)}


def test_db_command(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Database(a).append_many([_rec(1, costs=[2e-3]), _rec(2, costs=[1e-3]), _rec(3, costs=[], error="timeout")])
    Database(b).append_many([_rec(4, costs=[5e-4]), _rec(5, costs=[], error="timeout", workload="broken")])
    assert main(["db", "list", "--db", str(a)]) == 0
    out = capsys.readouterr().out
    assert WL in out and " 3 " in out and "1.0000 ms" in out and "conv2d_direct#2" in out
    assert main(["db", "best", WL[:12], "--db", str(a), "-t", "cuda"]) == 0
    assert json.loads(capsys.readouterr().out)["config_index"] == 2
    merged = tmp_path / "m.jsonl"
    assert main(["db", "merge", str(a), str(b), "-o", str(merged)]) == 0
    assert "5 records" in capsys.readouterr().out and len(Database(merged).records()) == 5
    assert main(["db", "best", WL, "--db", str(merged)]) == 0
    assert json.loads(capsys.readouterr().out)["config_index"] == 4
    assert main(["db", "best", "broken", "--db", str(merged)]) == 1  # a TefuseError: exit 1
    assert "no successful measurement" in capsys.readouterr().err
    assert main(["db", "distill", str(merged), "-o", str(tmp_path / "d.jsonl")]) == 0
    assert [r.config_index for r in Database(tmp_path / "d.jsonl").records()] == [4]
    assert main(["db", "best", "nope", "--db", str(merged)]) == 1
