"""`tefuse bench`: time a chain fused vs unfused vs the peer (PyTorch/cuDNN) on the device."""
from __future__ import annotations

from . import UsageError
from .build import add_common


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="time a chain: fused vs unfused vs PyTorch/cuDNN (ratios)")
    add_common(p)
    p.add_argument("--json", help="also write results as JSON here")
    p.add_argument("--no-db", action="store_true", help="ignore tuning logs")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..bench.chain import bench_chain, result_line, to_json
    from .build import chain_dtype, chain_shape, check_runnable, resolve_target

    if args.spec.endswith(".onnx"):
        raise UsageError("tefuse bench times a chain spec; time a model with `tefuse run MODEL.onnx`")

    target = resolve_target(args.target)
    check_runnable(target, "bench")
    db = None
    if not args.no_db:
        from .build import open_db_and_cache
        db, _ = open_db_and_cache(args)
    r = bench_chain(args.spec, chain_shape(args), dtype=chain_dtype(args), layout=args.layout,
                    target=target, db=db)
    print(result_line(r))
    if args.json:
        with open(args.json, "w") as f:
            f.write(to_json([r]))
    return 0
