"""`tefuse bench`: time a chain fused vs unfused vs the peer (PyTorch/cuDNN) on the device."""
from __future__ import annotations

from .build import add_common
from ..plan.spec import parse_shape


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="time a chain: fused vs unfused vs PyTorch/cuDNN (ratios)")
    add_common(p)
    p.add_argument("--json", help="also write results as JSON here")
    p.add_argument("--no-db", action="store_true", help="ignore tuning logs")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..bench.chain import bench_chain, result_line, to_json

    db = None
    if not args.no_db:
        from .build import open_databases
        db, _ = open_databases(args)
    r = bench_chain(args.spec, parse_shape(args.input), dtype=args.dtype, layout=args.layout,
                    target=args.target, db=db)
    print(result_line(r))
    if args.json:
        with open(args.json, "w") as f:
            f.write(to_json([r]))
    return 0
