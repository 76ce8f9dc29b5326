"""Fingerprints of every generated kernel's CUDA source, to prove a refactor changes no kernel.

Builds the README chains, ONNX zoo models (CPU side, no GPU needed: nvcc only) and, where
torch and torchvision are installed, the bench's torchvision exports, for CUDA; writes one
sha256 per kernel (in graph order, with its template and config) as JSON. `--compare FILE`
fails, naming each kernel, where a fingerprint differs (a kernel whose code is the same under
another template name or config index is listed, not failed). Runs as a module or as a file, so
an older checkout of tefuse on PYTHONPATH can make the "before" half:

    python -m tefuse.bench.sources --json after.json --compare before.json
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

CHAINS = [  # (spec, input shape, dtype, layout): the README's, and a few more templates' anchors
    ("conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu", (1, 64, 56, 56), "float32", "NCHW"),
    ("conv2d(k=64,r=3,pad=1)+bias+add+relu", (1, 64, 56, 56), "float32", "NCHW"),
    ("conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu", (16, 64, 56, 56), "float32", "NCHW"),
    ("conv2d(k=128,r=3,pad=1,stride=2)+bias+relu", (1, 64, 56, 56), "float32", "NHWC"),
    ("conv2d(k=32,r=3,pad=1,depthwise=1)+bias+clip(min=0,max=6)", (1, 32, 112, 112), "float32", "NCHW"),
    ("conv2d(k=64,r=3,pad=1)+bias+relu", (1, 64, 56, 56), "float16", "NCHW"),
]
ZOO = ["resnet50", "squeezenet", "inception_v1", "shufflenet", "densenet121"]
TORCHVISION = ["resnet50", "mobilenet_v2", "vit_b_16"]


def _parse_chain():
    """The chain parser, wherever the checkout keeps it (it moved from commands to plan)."""
    for name in ("tefuse.plan.spec", "tefuse.commands.spec"):
        try:
            return importlib.import_module(name).parse_chain
        except ImportError:
            continue
    raise ImportError("no chain-spec parser in this tefuse")


def fingerprints(cg) -> list[list]:
    return [[k.group.name, k.template, k.config_index, hashlib.sha256(k.source("cuda").encode()).hexdigest()]
            for k in cg.kernels]


def build_cuda(graph, db, precision: str = "fp32"):
    return importlib.import_module("tefuse").build(graph, "cuda", db=db, cache=None, precision=precision)


def collect(zoo: list[str], torchvision: list[str], db, precisions=("fp32",)) -> dict[str, list]:
    """Fingerprints of the chains, and of the zoo and torchvision models in each precision (the
    fp32 cases keyed without it)."""
    import onnx

    from tefuse.frontend.onnx import import_onnx

    out: dict[str, list] = {}
    parse_chain = _parse_chain()
    for spec, shape, dtype, layout in CHAINS:
        key = f"chain {spec} {'x'.join(map(str, shape))} {dtype} {layout}"
        out[key] = fingerprints(build_cuda(parse_chain(spec, shape, dtype, layout), db))
        logging.info("%s: %d kernels", key, len(out[key]))
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    for name in zoo:
        out[f"zoo {name}"] = fingerprints(build_cuda(import_onnx(str(light / f"light_{name}.onnx")), db))
        logging.info("zoo %s: %d kernels", name, len(out[f"zoo {name}"]))
    if torchvision:
        from tefuse.bench.models import export_torchvision

        with tempfile.TemporaryDirectory() as d:
            for name in torchvision:
                path = export_torchvision(name, 1, Path(d) / f"{name}.onnx")
                for prec in precisions:
                    key = f"torchvision {name}" + ("" if prec == "fp32" else f" {prec}")
                    out[key] = fingerprints(build_cuda(import_onnx(str(path)), db, prec))
                    logging.info("%s: %d kernels", key, len(out[key]))
    return out


def compare(before: dict, after: dict) -> tuple[list[str], list[str]]:
    """(differences, renames): one line per case or kernel whose code differs (empty when every
    kernel is byte-identical), and one per kernel whose code is the same but whose template or
    config index is not (a template split or renamed, a space reordered)."""
    diffs, renames = [], []
    for case in sorted(set(before) | set(after)):
        b, a = before.get(case), after.get(case)
        if b is None or a is None:
            diffs.append(f"{case}: only {'after' if b is None else 'before'}")
            continue
        if len(a) != len(b):
            diffs.append(f"{case}: {len(b)} kernels before, {len(a)} after")
        for kb, ka in zip(b, a):
            if kb[0] != ka[0] or kb[3] != ka[3]:
                diffs.append(f"{case}: kernel {kb[0]} ({kb[1]} #{kb[2]}) differs from {ka[0]} ({ka[1]} #{ka[2]})")
            elif kb[1:3] != ka[1:3]:
                renames.append(f"{case}: kernel {kb[0]}: {kb[1]} #{kb[2]} -> {ka[1]} #{ka[2]}, same code")
    return diffs, renames


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="write the fingerprints here")
    p.add_argument("--compare", help="fingerprints made before the change; exit 1 on any difference")
    p.add_argument("--zoo", nargs="*", default=ZOO, help="ONNX zoo light models (default: %(default)s)")
    p.add_argument("--torchvision", nargs="*", default=None,
                   help="torchvision models to export (default: %s where torchvision is installed)" % TORCHVISION)
    p.add_argument("--precision", nargs="+", default=["fp32"], choices=["fp32", "tf32", "fp16", "bf16"],
                   help="precisions the torchvision models are built in (default: %(default)s)")
    p.add_argument("--db", choices=["none", "default"], default="default",
                   help="tuning records to apply: the shipped/user logs (default) or none")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("tefuse").setLevel(logging.WARNING)
    tv = args.torchvision
    if tv is None:
        try:
            import torchvision  # noqa: F401
            tv = TORCHVISION
        except ImportError:
            tv = []
    os.environ.setdefault("TEFUSE_USER_DB", os.devnull)  # the shipped logs only: reproducible
    result = collect(args.zoo, tv, None if args.db == "none" else "default", args.precision)
    Path(args.json).write_text(json.dumps(result, indent=1))
    n = sum(len(v) for v in result.values())
    print(f"{n} kernels in {len(result)} cases -> {args.json}")
    if args.compare:
        diffs, renames = compare(json.loads(Path(args.compare).read_text()), result)
        for d in diffs:
            print("DIFF", d)
        for r in renames:
            print("SAME CODE", r)
        print(f"{'identical' if not diffs else f'{len(diffs)} differences'} against {args.compare}")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
