"""Held-out accuracy of the transfer cost model, from the tuning records alone (no GPU).

    python -m tefuse.bench.transfer --out benchmarks/transfer.json

Leave one workload out: for each workload with at least --min-configs timed configs of a
template, a model of that template is trained on the records of every other workload (every
workload of the same ops, shape and dtype left out with it: a kernel re-keyed by a graph pass
is the same kernel), then picks one of the held-out workload's measured configs; the pick
counts as a hit when its time is within --tolerance of the best one measured there. The
untuned build's rule-based config is scored the same way where the records show it: tuning
measures it first (tune/loop.py), so a workload's earliest record is that config when its
template is the first one tuned. `chance` is the share of a workload's configs within the
tolerance, what a random pick hits on average.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence

from ..tune.database import system_db_paths, trial_log_paths
from ..tune.record import TuningRecord
from ..tune.transfer import Sample, TransferModel, read_logs, samples_by_template

log = logging.getLogger(__name__)

SCHEMA = "tefuse-transfer-bench/1"


@dataclass
class HeldOut:
    """One held-out (workload, device) of one template: what each picker's choice measured."""

    target: str
    template: str
    workload: str
    device: str
    configs: int  # distinct configs measured there (failures included)
    best_ms: float
    model_ms: float  # inf: the model picked a config that failed
    fallback_ms: Optional[float]  # None: the records do not show the rule-based config
    chance: float  # share of the configs within the tolerance

    def hit(self, ms: Optional[float], tolerance: float) -> Optional[bool]:
        return None if ms is None else ms <= self.best_ms * (1 + tolerance)


def shape_of(workload: str) -> str:
    """A workload key without its digest: ops, anchor shape and dtype."""
    return workload.rsplit("|", 1)[0]


def first_configs(records: Sequence[TuningRecord]) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(target, workload, device) -> (template, config json) of its earliest record."""
    first: dict[tuple[str, str, str], TuningRecord] = {}
    for r in records:
        k = (r.target, r.workload, r.device)
        if k not in first or r.timestamp < first[k].timestamp:
            first[k] = r
    return {k: (r.template, json.dumps(r.config, sort_keys=True)) for k, r in first.items()}


def evaluate(records: Sequence[TuningRecord], min_configs: int = 4, tolerance: float = 0.10,
             templates: Optional[Sequence[str]] = None) -> list[HeldOut]:
    """The held-out rows of every (target, template) the records hold."""
    first = first_configs(records)
    rows = []
    for (target, template), samples in samples_by_template(records).items():
        if templates and template not in templates:
            continue
        groups: dict[tuple[str, str], list[Sample]] = {}
        for s in samples:
            groups.setdefault(s.group, []).append(s)
        held = {g: ss for g, ss in groups.items() if sum(math.isfinite(s.cost) for s in ss) >= min_configs}
        models: dict[str, Optional[TransferModel]] = {}
        for (workload, device), ss in sorted(held.items()):
            shape = shape_of(workload)
            if shape not in models:
                models[shape] = TransferModel.train([s for s in samples if shape_of(s.workload) != shape])
            model = models[shape]
            if model is None:
                continue
            scores = model.scores(workload, [s.config for s in ss])
            pick = ss[max(range(len(ss)), key=lambda k: (scores[k], -k))]
            best = min(s.cost for s in ss)
            fb_template, fb_config = first.get((target, workload, device), (None, None))
            fallback = [s.cost for s in ss if fb_template == template
                        and json.dumps(s.config, sort_keys=True) == fb_config]
            rows.append(HeldOut(target, template, workload, device, len(ss), best * 1e3, pick.cost * 1e3,
                                fallback[0] * 1e3 if fallback else None,
                                sum(s.cost <= best * (1 + tolerance) for s in ss) / len(ss)))
    return rows


def _rate(hits: list[bool]) -> Optional[float]:
    return round(sum(hits) / len(hits), 4) if hits else None


def _throughput(rows: list[HeldOut], attr: str) -> Optional[float]:
    """Geometric mean of best/picked (a failed pick counts as 0.01)."""
    vals = [r.best_ms / getattr(r, attr) if math.isfinite(getattr(r, attr)) else 0.01 for r in rows]
    return round(math.exp(statistics.fmean(math.log(v) for v in vals)), 4) if vals else None


def summarize(rows: list[HeldOut], tolerance: float) -> dict:
    """Hit rates of the model, of the fallback where it was measured (and of the model on
    those same workloads), and chance; geomean relative throughput of the picks."""
    with_fb = [r for r in rows if r.fallback_ms is not None]
    return {
        "workloads": len(rows),
        "model_within": _rate([r.hit(r.model_ms, tolerance) for r in rows]),
        "model_throughput": _throughput(rows, "model_ms"),
        "chance_within": round(statistics.fmean(r.chance for r in rows), 4) if rows else None,
        "fallback_measured": len(with_fb),
        "fallback_within": _rate([r.hit(r.fallback_ms, tolerance) for r in with_fb]),
        "fallback_throughput": _throughput(with_fb, "fallback_ms"),
        "model_within_where_fallback_measured": _rate([r.hit(r.model_ms, tolerance) for r in with_fb]),
        "model_throughput_where_fallback_measured": _throughput(with_fb, "model_ms"),
    }


def report(rows: list[HeldOut], *, tolerance: float, min_configs: int, logs: Sequence[Path],
           command: str) -> dict:
    by_template: dict[str, list[HeldOut]] = {}
    for r in rows:
        by_template.setdefault(r.template, []).append(r)
    return {"schema": SCHEMA, "command": command, "tolerance": tolerance, "min_configs": min_configs,
            "logs": [Path(p).name for p in logs], "summary": summarize(rows, tolerance),
            "templates": {t: summarize(rs, tolerance) for t, rs in sorted(by_template.items())},
            "rows": [{k: (v if not isinstance(v, float) or math.isfinite(v) else None)
                      for k, v in asdict(r).items()} for r in rows]}


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tefuse.bench.transfer", description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write the report (JSON) here")
    p.add_argument("--logs", nargs="*", help="tuning logs (.jsonl, .jsonl.gz); default: the shipped "
                   "logs and the trials they were distilled from")
    p.add_argument("--min-configs", type=int, default=4, help="timed configs a held-out workload needs")
    p.add_argument("--tolerance", type=float, default=0.10, help="a hit is within this of the best")
    p.add_argument("--template", action="append", help="only this template (repeatable)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logs = [Path(x) for x in args.logs] if args.logs is not None else system_db_paths() + trial_log_paths()
    rows = evaluate(read_logs(logs), args.min_configs, args.tolerance, args.template)
    out = report(rows, tolerance=args.tolerance, min_configs=args.min_configs, logs=logs,
                 command="python -m tefuse.bench.transfer " + " ".join(argv if argv is not None else sys.argv[1:]))
    s = out["summary"]
    log.info("%d held-out workloads: model within %g%% of the best in %s (chance %s); fallback %s of %d "
             "where measured, model %s there", s["workloads"], args.tolerance * 100, s["model_within"],
             s["chance_within"], s["fallback_within"], s["fallback_measured"],
             s["model_within_where_fallback_measured"])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
