"""`tefuse ops`: the operators tefuse has (GraphBuilder methods, chain-spec steps) and the ONNX
op types it imports.

    tefuse ops              tefuse ops (inputs, fusion pattern, attributes), then ONNX op types
    tefuse ops conv2d       one op: its GraphBuilder signature and doc
    tefuse ops --onnx       ONNX op types only, one a line
"""
from __future__ import annotations

import argparse
import textwrap

from . import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("ops", help="list tefuse's ops and the ONNX op types it imports",
                       description="List tefuse's operators (with inputs, fusion pattern and attributes) "
                                   "and the ONNX op types the importer converts.")
    p.add_argument("op", nargs="?", help="show one op: its GraphBuilder signature and documentation")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--onnx", action="store_true", help="ONNX op types only, one a line")
    g.add_argument("--tefuse", action="store_true", help="tefuse ops only")
    p.set_defaults(func=run)


def _inputs(opdef) -> str:
    return "n" if opdef.num_inputs is None else str(opdef.num_inputs)


def run(args: argparse.Namespace) -> int:
    from ..ops import get_op, list_ops

    if args.op:
        import inspect

        from ..graph import GraphBuilder

        if args.op not in list_ops():
            from ..frontend.onnx import supported_ops

            if args.op in supported_ops():
                print(f"{args.op}: an ONNX op type tefuse imports (see `tefuse ops --onnx`)")
                return 0
            raise UsageError(f"no op {args.op!r}; `tefuse ops` lists them")
        method = getattr(GraphBuilder, args.op)
        print(f"GraphBuilder.{args.op}{inspect.signature(method)}")
        print(textwrap.indent(inspect.getdoc(method) or "", "    "))
        return 0
    if not args.onnx:
        rows = []
        for name in list_ops():
            d = get_op(name)
            attrs = ", ".join(f"{k}={v!r}" for k, v in d.attrs.items())
            rows.append((name, _inputs(d), d.pattern.name.lower(), attrs))
        head = ("op", "inputs", "pattern", "attributes")
        w = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
        print(f"{len(rows)} tefuse ops (GraphBuilder methods; `tefuse ops NAME` for one):")
        print(f"  {head[0]:<{w[0]}}  {head[1]:<{w[1]}}  {head[2]:<{w[2]}}  {head[3]}")
        for name, n, pattern, attrs in rows:
            print(f"  {name:<{w[0]}}  {n:<{w[1]}}  {pattern:<{w[2]}}  {attrs or '-'}".rstrip())
    if not args.tefuse:
        from ..frontend.onnx import supported_ops
        from ..frontend.onnx.importer import MAX_OPSET, MIN_OPSET

        onnx_ops = sorted(supported_ops())
        if args.onnx:
            print("\n".join(onnx_ops))
        else:
            print(f"\n{len(onnx_ops)} ONNX op types imported (opsets {MIN_OPSET} to {MAX_OPSET}):")
            print(textwrap.fill(", ".join(onnx_ops), width=100, initial_indent="  ", subsequent_indent="  "))
    return 0
