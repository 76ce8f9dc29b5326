"""Durability of the tuning logs: merge/distill under the appenders' lock lose nothing while
tuners append; a pathological line is skipped naming file and line; only records that can be
applied are ranked; `tefuse db` refuses a log that does not exist."""
import logging
import multiprocessing as mp
import sys
import time

import pytest

from tefuse.cli import main
from tefuse.tune.database import Database, LayeredDatabase, distill, merge
from tefuse.tune.record import TuningRecord

WL = "conv2d+bias_add+relu|1x8x8x8|float32|5157f538a1936d54"


def _rec(idx=0, costs=(1e-3,), template="conv2d_direct", config=None, **kw):
    return TuningRecord(workload=WL, target="cuda-sm_90", device="gpu0", template=template,
                        config={"unroll": idx} if config is None else config, config_index=idx,
                        costs=list(costs), **kw)


def _appender(path: str, worker: int, n: int) -> None:
    db = Database(path)
    for i in range(n):
        db.append(_rec(idx=worker * 100_000 + i))


def _merger(src: str, dest: str, rounds: int) -> None:
    for _ in range(rounds):
        merge([src], dest)


def test_merge_while_tuners_append_loses_nothing(tmp_path):
    dest, src = str(tmp_path / "log.jsonl"), str(tmp_path / "other.jsonl")
    Database(src).append_many([_rec(idx=900_000 + i) for i in range(50)])
    ctx = mp.get_context("spawn")
    n, workers = 400, 4
    procs = [ctx.Process(target=_appender, args=(dest, w, n)) for w in range(workers)]
    procs.append(ctx.Process(target=_merger, args=(src, dest, 40)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    merge([src], dest)
    got = {r.config_index for r in Database(dest).records()}
    want = {w * 100_000 + i for w in range(workers) for i in range(n)} | {900_000 + i for i in range(50)}
    assert want - got == set(), f"lost {len(want - got)} of {len(want)} records"
    assert len(Database(dest).records()) == len(want)  # and no duplicates


def test_distill_into_a_source_keeps_racing_appends_readable(tmp_path):
    dest = tmp_path / "log.jsonl"
    Database(dest).append_many([_rec(idx=i, costs=(1e-3 * (i + 1),)) for i in range(5)])
    assert distill([dest], dest) == 1
    Database(dest).append(_rec(idx=99, costs=(1e-4,)))  # an appender after the rename
    assert Database(dest).best(WL, "cuda-sm_90").config_index == 99


def test_deeply_nested_line_is_skipped_with_file_and_line(tmp_path, caplog):
    p = tmp_path / "log.jsonl"
    good = _rec(idx=1).to_json()
    p.write_text(good + "\n" + "[" * 100_000 + "]" * 100_000 + "\n" + _rec(idx=2).to_json() + "\n")
    with caplog.at_level(logging.WARNING):
        recs = Database(p).records()
    assert [r.config_index for r in recs] == [1, 2]
    assert any(f"{p}:2: skipping malformed tuning record" in m for m in caplog.messages), caplog.messages


def test_deeply_nested_line_does_not_break_db_commands(tmp_path, capsys):
    """A line nested past Python's recursion limit is a bad line, not a RecursionError in every
    `db` command (and build)."""
    p = tmp_path / "log.jsonl"
    p.write_text(_rec(idx=1).to_json() + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"
                 + _rec(idx=2, costs=(1e-4,)).to_json() + "\n")
    assert main(["db", "list", "--db", str(p)]) == 0
    assert main(["db", "best", WL, "--db", str(p)]) == 0
    out = capsys.readouterr()
    assert '"config_index":2' in out.out and "Traceback" not in out.err and "RecursionError" not in out.err
    assert main(["db", "merge", str(p), "-o", str(tmp_path / "m.jsonl")]) == 0
    assert sorted(r.config_index for r in Database(tmp_path / "m.jsonl").records()) == [1, 2]
    assert main(["db", "distill", str(p), "-o", str(tmp_path / "d.jsonl")]) == 0
    assert [r.config_index for r in Database(tmp_path / "d.jsonl").records()] == [2]
    assert LayeredDatabase([Database(p)]).best(WL, "cuda-sm_90").config_index == 2  # what a build asks


BAD = {
    "unknown_template": dict(template="no_such_template"),
    "config_float": dict(config={"unroll": 1.5}),
    "config_dict": dict(config={"unroll": {"a": 1}}),
    "config_null": dict(config={"unroll": None}),
    "cost_zero": dict(costs=(0.0,)),
    "cost_tiny": dict(costs=(1e-300,)),
    "cost_negative": dict(costs=(-1.0,)),
    "index_negative": dict(),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_unusable_record_never_ranked_nor_masks(case, tmp_path, capsys):
    kw = dict(BAD[case])
    idx = -3 if case == "index_negative" else 7
    kw.setdefault("costs", (1e-6,))  # faster than the valid one
    p = tmp_path / "log.jsonl"
    db = Database(p)
    db.append(_rec(idx=idx, **kw))
    db.append(_rec(idx=3, costs=(2e-3,)))
    assert db.best(WL, "cuda-sm_90").config_index == 3
    assert [r.config_index for r in db.ranked(WL, "cuda-sm_90")] == [3]
    assert LayeredDatabase([db]).best(WL, "cuda-sm_90").config_index == 3
    assert main(["db", "best", WL, "--db", str(p)]) == 0
    assert '"config_index":3' in capsys.readouterr().out
    out = tmp_path / "d.jsonl"
    distill([p], out)
    assert [r.config_index for r in Database(out).records()] == [3]


def test_build_skips_record_that_does_not_fit_for_the_next(tmp_path):
    """A record whose config does not fit the template's space must not mask a valid one."""
    import numpy as np

    import tefuse
    from tefuse.codegen.schedule import choose_schedule, find_template
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph
    from tefuse.fusion.workload import workload_key
    from tefuse.target import make_target, target_key

    b = tefuse.GraphBuilder()
    x = b.input("x", (1, 8, 8, 8))
    g = b.build(b.relu(b.conv2d(x, b.const(np.ones((8, 8, 3, 3), "float32")), padding=1)))
    target = make_target("cuda")
    lowered = lower_group(fuse_graph(g)[0])
    t = find_template(target, lowered.info.anchor_kind, info=lowered.info)[0]
    space = t.space(lowered.info, target)
    good = space.get(len(space) - 1)
    key, tk = workload_key(lowered.group), target_key(target)
    db = Database(tmp_path / "log.jsonl")
    wrong = {k: "zzz" for k in good.to_json()}
    db.append(TuningRecord(key, tk, "gpu0", t.name, wrong, 0, [1e-6]))
    db.append(TuningRecord(key, tk, "gpu0", t.name, good.to_json(), good.index, [1e-3]))
    choice = choose_schedule(lowered, target, db)
    assert choice.source == "tuned" and choice.config.index == good.index


@pytest.mark.parametrize("argv", [["db", "list", "--db", "typo.jsonl"], ["db", "best", "x", "--db", "typo.jsonl"],
                                  ["db", "merge", "typo.jsonl", "-o", "{tmp}/x.jsonl"],
                                  ["db", "distill", "typo.jsonl", "-o", "{tmp}/x.jsonl"]])
def test_db_missing_log_is_an_error(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 1  # a tefuse error, not a usage error
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"tefuse {' '.join(argv[:2])}: error: ") and "Traceback" not in err, err
    assert err.endswith("no such tuning log: typo.jsonl") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "x.jsonl").exists()


def test_a_log_path_that_is_a_directory_is_named_so(tmp_path, capsys):
    from tefuse.cli import main

    assert main(["db", "list", "--db", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tefuse db list: error: {tmp_path} is a directory, not a tuning log"]


def test_build_takes_a_record_of_a_kernel_alike_but_for_its_folded_constants(tmp_path):
    """A record written with its workload's structure serves a kernel that differs only in a
    scalar constant: where it has none of its own, and where its own are slower (the two measure
    the same code but for a constant); the kernel's own wins ties."""
    import numpy as np

    import tefuse
    from tefuse.codegen.lower import lower_group
    from tefuse.codegen.schedule import choose_schedule, find_template
    from tefuse.fusion import fuse_graph
    from tefuse.fusion.workload import structure_key, workload_key
    from tefuse.target import make_target, target_key

    def scaled(s):
        b = tefuse.GraphBuilder()
        x = b.input("x", (1, 8, 8, 8))
        w = b.const(np.ones((8, 8, 3, 3), "float32"))
        return lower_group(fuse_graph(b.build(b.mul(b.conv2d(x, w, padding=1), b.const(np.array(s, "float32")))))[0])

    target = make_target("cuda")
    tuned, other = scaled(0.5), scaled(0.125)
    assert workload_key(tuned.group) != workload_key(other.group)
    t = find_template(target, tuned.info.anchor_kind, info=tuned.info)[0]
    space = t.space(tuned.info, target)
    cfg, own = space.get(len(space) - 1), space.get(len(space) - 2)
    tk = target_key(target)
    db = Database(tmp_path / "log.jsonl")
    db.append(TuningRecord(workload_key(tuned.group), tk, "gpu0", t.name, cfg.to_json(), cfg.index, [1e-3],
                           structure=structure_key(tuned.group)))
    assert TuningRecord.from_json(db.records()[0].to_json()).structure == structure_key(tuned.group)
    choice = choose_schedule(other, target, db)
    assert (choice.source, choice.config.index, choice.record_key) == ("tuned", cfg.index, structure_key(other.group))
    db.append(TuningRecord(workload_key(other.group), tk, "gpu0", t.name, own.to_json(), own.index, [2e-3]))
    choice = choose_schedule(other, target, db)  # a record of its own, slower: its like's config wins
    assert (choice.source, choice.config.index, choice.record_key) == ("tuned", cfg.index, structure_key(other.group))
    db.append(TuningRecord(workload_key(other.group), tk, "gpu0", t.name, own.to_json(), own.index, [5e-4]))
    choice = choose_schedule(other, target, db)  # faster than its like's: its own
    assert (choice.source, choice.config.index, choice.record_key) == ("tuned", own.index, None)
    # a size bucket's variant asks for its structure at the bucket's sizes first (driver._choose)
    at = "fixed-size structure"
    db.append(TuningRecord("elsewhere", tk, "gpu0", t.name, cfg.to_json(), cfg.index, [4e-3], structure=at))
    choice = choose_schedule(scaled(0.25), target, db, record_structure=at)
    assert (choice.source, choice.config.index, choice.record_key) == ("tuned", cfg.index, at)
    # an own record measured under other build options gives way to the structure's
    db2 = Database(tmp_path / "other_options.jsonl")
    db2.append(TuningRecord(workload_key(other.group), tk, "gpu0", t.name, own.to_json(), own.index, [1e-4],
                            options={"transfer": True}))
    db2.append(TuningRecord("elsewhere", tk, "gpu0", t.name, cfg.to_json(), cfg.index, [4e-3],
                            structure=structure_key(other.group)))
    assert choose_schedule(other, target, db2).config.index == cfg.index
