"""`tefuse build`: fuse and compile a chain spec or an ONNX model; print code or save it."""
from __future__ import annotations

import argparse
import sys

from ..errors import TefuseError
from ..target import make_target
from ..plan.spec import parse_chain, parse_shape

EMIT = ("summary", "cuda", "ptx", "tir", "llvm", "asm", "graph")  # asm/llvm: a rocm kernel's AMDGPU asm / IR


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by commands that take a model: spec, input shape, dtype, layout, target."""
    p.add_argument("spec", help="model.onnx, or a chain such as 'conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu'")
    p.add_argument("--input", "-i", default="1x64x56x56", help="input shape of a chain (default 1x64x56x56)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    p.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    p.add_argument("--target", "-t", default="llvm", help="llvm, cuda, cuda:sm_80, rocm, rocm:gfx942 (default llvm)")


def load_graph(args):
    if args.spec.endswith(".onnx"):
        from ..frontend.onnx import import_onnx

        return import_onnx(args.spec)
    return parse_chain(args.spec, parse_shape(args.input), args.dtype, args.layout)


def add_parser(sub) -> None:
    p = sub.add_parser("build", help="fuse and compile; print generated code or save the artefact")
    add_common(p)
    p.add_argument("--emit", "-e", default="summary", choices=EMIT, help="what to print (default summary)")
    p.add_argument("-o", "--output", help="save the compiled artefact here (loads without recompiling)")
    add_db_options(p)
    p.set_defaults(func=run)


def add_db_options(p: argparse.ArgumentParser) -> None:
    """Options of commands that build: the performance database and kernel cache are on by default;
    --jobs compiles kernels in parallel."""
    p.add_argument("--no-db", action="store_true", help="ignore tuning logs: fallback configs only")
    p.add_argument("--no-cache", action="store_true", help="do not use the on-disk kernel cache")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="kernels compiled at once (default: $TEFUSE_BUILD_JOBS, else the CPU count up to 32)")


def open_databases(args):
    """The user + shipped tuning logs and the on-disk kernel cache, unless --no-db / --no-cache."""
    from ..codegen.cache import default_cache
    from ..tune.database import default_database

    db = None if getattr(args, "no_db", False) else default_database()
    cache = None if getattr(args, "no_cache", False) else default_cache()
    return db, cache


def run(args) -> int:
    from ..driver import build

    graph = load_graph(args)
    if args.emit == "graph":
        print(graph.text())
        return 0
    target = make_target(args.target)
    db, cache = open_databases(args)
    cg = build(graph, target, db=db, cache=cache, jobs=args.jobs)
    if args.emit == "summary":
        print(cg.summary())
    elif args.emit == "ptx":
        if target.kind.name != "cuda":
            raise TefuseError("--emit ptx needs a cuda target")
        from ..codegen.ptx import compile_to_ptx

        print(compile_to_ptx(cg.source("cuda"), str(target.attrs.get("arch", "sm_90"))))
    else:
        print(cg.source(args.emit))
    if args.output:
        from ..runtime.artifact import save

        save(cg, args.output)
        print(f"saved {args.output}", file=sys.stderr)
    return 0
