"""`tefuse db`: look into and maintain tuning logs (list, best, merge, distill)."""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Optional

from ..errors import TefuseError


def add_parser(sub) -> None:
    p = sub.add_parser("db", help="tuning logs: list workloads, show the best record, merge, distill")
    dsub = p.add_subparsers(dest="db_command", required=True)

    pl = dsub.add_parser("list", help="workloads with their record count and best time")
    pl.add_argument("--db", help="one log file (default: user + shipped logs)")
    pl.add_argument("--target", "-t", help="only this target (cuda, cuda:sm_80, cuda-sm_90, llvm)")
    pl.set_defaults(func=run_list)

    pb = dsub.add_parser("best", help="the best record of a workload, as a JSON line per target")
    pb.add_argument("workload", help="workload key, or a unique prefix of one")
    pb.add_argument("--db", help="one log file (default: user + shipped logs)")
    pb.add_argument("--target", "-t", help="only this target")
    pb.set_defaults(func=run_best)

    pm = dsub.add_parser("merge", help="merge logs into OUT (OUT's own records are kept)")
    pm.add_argument("sources", nargs="+")
    pm.add_argument("-o", "--output", required=True)
    pm.set_defaults(func=run_merge)

    pd = dsub.add_parser("distill", help="keep the best record per (workload, target, device)")
    pd.add_argument("sources", nargs="+", metavar="IN")
    pd.add_argument("-o", "--output", required=True)
    pd.set_defaults(func=run_distill)


def _open(args: argparse.Namespace):
    from ..tune.database import Database, default_database, missing_log_message

    if args.db:
        if not Path(args.db).is_file():
            raise TefuseError(missing_log_message(args.db))
        return Database(args.db)
    return default_database()


def _target(text: Optional[str]) -> Optional[str]:
    """'cuda' / 'cuda:sm_80' become their target key; a key such as 'cuda-sm_90' stays."""
    if text is None or "-" in text:
        return text
    from ..target import make_target, target_key

    try:
        return target_key(make_target(text))
    except TefuseError:
        return text


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f} ms" if seconds != float("inf") else "-"


def run_list(args) -> int:
    db = _open(args)
    groups = defaultdict(list)
    for r in db.records(target=_target(args.target)):
        groups[(r.workload, r.target)].append(r)
    if not groups:
        print("no tuning records")
        return 0
    rows = []
    for (wl, tgt), recs in sorted(groups.items()):
        best = db.best(wl, tgt)
        rows.append((wl, tgt, str(len(recs)), _ms(best.median_cost) if best else "-",
                     f"{best.template}#{best.config_index}" if best else "(all failed)"))
    head = ("workload", "target", "records", "best", "config")
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


def run_best(args) -> int:
    db = _open(args)
    recs = db.records(target=_target(args.target))
    keys = {r.workload for r in recs}
    if args.workload in keys:
        workload = args.workload
    else:
        cands = sorted(k for k in keys if k.startswith(args.workload))
        if len(cands) != 1:
            raise TefuseError(f"no workload {args.workload!r} in the database" if not cands else
                              f"{args.workload!r} matches {len(cands)} workloads: {', '.join(cands[:5])}")
        workload = cands[0]
    found = False
    for tgt in sorted({r.target for r in recs if r.workload == workload}):
        best = db.best(workload, tgt)
        if best is not None:
            print(best.to_json())
            found = True
    if not found:
        raise TefuseError(f"workload {workload!r} has no successful measurement")
    return 0


def run_merge(args) -> int:
    from ..tune.database import merge

    n = merge(args.sources, args.output)
    print(f"{args.output}: {n} records")
    return 0


def run_distill(args) -> int:
    from ..tune.database import distill

    n = distill(list(args.sources), args.output)
    print(f"{args.output}: {n} records")
    return 0
