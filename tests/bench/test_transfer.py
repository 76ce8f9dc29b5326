"""The held-out bench of the transfer model: on synthetic logs where one config is fastest on
every workload, the model's held-out picks are all hits and the report has its documented keys."""
from __future__ import annotations

import json

from tefuse.bench.transfer import evaluate, main, summarize
from tefuse.tune.database import Database
from tests.tune.test_transfer import synthetic_records


def test_held_out_picks_hit_where_one_config_wins_everywhere():
    recs = synthetic_records([(8, 32), (64, 64), (16, 128), (32, 256)])
    rows = evaluate(recs, min_configs=4)
    assert len(rows) == 4 and all(r.template == "cpu_generic" for r in rows)
    s = summarize(rows, 0.10)
    assert s["model_within"] == 1.0 and 0 < s["chance_within"] < 1
    # the earliest record of each workload is config 0, the rule-based one, timed slower
    assert s["fallback_measured"] == 4 and s["fallback_within"] == 0.0


def test_bench_writes_its_report(tmp_path):
    log = Database(tmp_path / "log.jsonl")
    log.append_many(synthetic_records([(8, 32), (64, 64), (16, 128)]))
    out = tmp_path / "t.json"
    assert main(["--logs", str(log.path), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["schema"] == "tefuse-transfer-bench/1" and report["summary"]["workloads"] == 3
    assert set(report["templates"]) == {"cpu_generic"} and len(report["rows"]) == 3
