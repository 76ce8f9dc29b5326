"""`tefuse build`: fuse and compile a chain spec or an ONNX model; print code or save it.

Also the helpers that build, tune, bench and run share: the model options, `--shape`, the
target (`-t cuda` takes the architecture of the GPU present), the databases, and a build
with a progress bar.
"""
from __future__ import annotations

import argparse
import logging
import re
from dataclasses import replace
from typing import Optional, Sequence

from . import UsageError
from .calibration import add_calibration_options, calibration_for

log = logging.getLogger(__name__)

EMIT = ("summary", "cuda", "ptx", "tir", "llvm", "asm", "graph", "dot")  # asm/llvm: a rocm kernel's AMDGPU asm / IR
DEFAULT_CHAIN_SHAPE = "1x64x56x56"


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by commands that take a model: spec, input shape, dtype, layout, target."""
    p.add_argument("spec", help="model.onnx, or a chain such as 'conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu'")
    p.add_argument("--input", "-i", default=None, metavar="1x64x56x56",
                   help=f"input shape of a chain (default {DEFAULT_CHAIN_SHAPE}; same as --shape 1x64x56x56)")
    add_shape_option(p)
    p.add_argument("--dtype", default=None, choices=["float32", "float16", "bfloat16", "uint8", "uint16"],
                   help="a chain's tensors (default float32, or where the command takes --precision, its type: "
                        "float16 under fp16, bfloat16 under bf16, as a FusionPlan's tensor descriptors give them; "
                        "uint8, uint16: an image pipeline's pixels); an ONNX model keeps its own, --precision "
                        "converting its float32 graph")

    p.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    p.add_argument("--target", "-t", default="llvm",
                   help="llvm, cuda (the GPU present's architecture, else sm_90), cuda:sm_80, rocm, rocm:gfx942 "
                        "(default llvm)")


# graph/precision.py's PRECISIONS, spelled here so that `--help` loads neither TVM nor numpy
PRECISION_CHOICES = ("fp32", "tf32", "fp16", "bf16", "int8", "fp8")


def add_precision_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precision", default="fp32", choices=list(PRECISION_CHOICES),
                   help="arithmetic of the kernels: fp16/bf16 on tensor cores with float32 accumulation, "
                        "the model's float32 inputs and outputs kept (default fp32); int8 / fp8: the convs and "
                        "matmuls on int8 / float8 e4m3 operands with scales from --calibration, the rest in fp16")
    add_calibration_options(p)
    p.add_argument("--fp8-fast-accum", action="store_true",
                   help="fp8: sum each product's whole reduction in Hopper's fp8 accumulator, as cuBLASLt's fast "
                        "accumulation, instead of promoting each 128-deep row to float32 (faster; an error "
                        "that grows with the depth)")
    p.add_argument("--no-split-k", dest="split_k", action="store_false",
                   help="keep every tensor-core conv and Linear one kernel (by default, on CUDA, one whose "
                        "output gives too few tiles for the GPU sums partial products in a second kernel)")
    p.add_argument("--split-k", dest="split_k", type=_slices, metavar="N",
                   help="split every tensor-core conv and Linear whose channels allow it into N slices "
                        "(summed by a second kernel), whatever its grid: to measure a count against the default")
    p.add_argument("--siblings", "--sibling-convs", dest="siblings", action=argparse.BooleanOptionalAction,
                   default=None,
                   help="convs that read one input with one geometry, and Linears that read one input, run as one "
                        "product of their concatenated weights, each branch a channel slice (Inception's 1x1 convs; "
                        "a transformer's query, key and value); default: the Linears, the convs too with "
                        "--horizontal")
    p.add_argument("--attention", default="auto", choices=list(ATTENTION),
                   help="matmul -> softmax -> matmul as one attention kernel: auto (default) where a template "
                        "that beats the three kernels takes it (flash attention, fp16, sm_80 and later), "
                        "fused wherever a template takes it, unfused never")


def _slices(text: str) -> int:
    """--split-k's N: a slice count of 2 or more."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 2:
        raise argparse.ArgumentTypeError(f"expected a slice count of 2 or more, got {text!r}")
    return n


# --attention: build's fuse_attention
ATTENTION = {"auto": None, "fused": True, "unfused": False}


def graph_options(args, graph=None) -> dict:
    """The graph passes' options the commands share (driver.prepare_graph's and build's); for
    --precision int8 the calibration too (made from `graph` when --calibration gives samples)."""
    from ..graph.precision import QUANTIZED

    opts = {"precision": args.precision, "split_k": args.split_k, "fuse_attention": ATTENTION[args.attention],
            "siblings": args.siblings, "fp8_fast_accum": args.fp8_fast_accum}
    if args.precision in QUANTIZED:
        opts["calibration"] = calibration_for(args, graph)
    return opts


def add_shape_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", action="append", default=[], metavar="NAME=1x3x224x224",
                   help="an ONNX input's shape, giving its symbolic dims (a batch named N, -1) a size "
                        "(repeatable); the dims the model fixes must be given as they are (as trtexec "
                        "--shapes and onnxruntime take them): a model exported with batch 1 is refused "
                        "--shape x=8x...; for a chain, its input shape (NAME= optional)")


def add_dynamic_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dynamic", action="append", default=[], metavar="N=1:8:32",
                   help="a symbolic dim of an ONNX model's inputs (a dim_param such as N, or x:0 for an "
                        "unnamed dim 0 of input x) and its range min:opt:max (repeatable): one build "
                        "runs every size in the ranges, tiles sized for opt")
    p.add_argument("--buckets", action="append", default=[], metavar="N=4,32,64",
                   help="with --dynamic: the size buckets of a dim, by their upper ends (repeatable); a "
                        "tensor-core GEMM or conv is compiled once a bucket and a run takes the variant of "
                        "its sizes' bucket (default: opt/8 and max, and opt where max > 4 opt; N=64 alone: one bucket)")


def parse_dynamic_option(args: argparse.Namespace) -> Optional[dict]:
    """--dynamic values: {name: DimRange}, or None when not given; refused beside --batch and
    for a chain."""
    items = getattr(args, "dynamic", None) or []
    if not items:
        return None
    if getattr(args, "batch", None) is not None:
        raise UsageError("--dynamic and --batch: give one build over dim ranges, or batch profiles, not both")
    spec = getattr(args, "spec", None) or getattr(args, "model", "")
    if not spec.endswith(".onnx"):
        raise UsageError("--dynamic takes the named dims of an .onnx model's inputs")
    from ..errors import DynamicShapeError
    from ..graph.dims import parse_dynamic

    try:
        return parse_dynamic(items)
    except DynamicShapeError as e:
        raise UsageError(str(e)) from None


def dynamic_build_args(args: argparse.Namespace, dynamic: Optional[dict]) -> dict:
    """build()'s dynamic= and buckets= from --dynamic (parsed: `dynamic`) and --buckets; {} for
    a build of fixed shapes. --buckets without --dynamic is a usage error."""
    items = getattr(args, "buckets", None) or []
    if items and not dynamic:
        raise UsageError("--buckets cuts the ranges of --dynamic dims; give --dynamic NAME=min:opt:max too")
    if not dynamic:
        return {}
    from ..errors import DynamicShapeError
    from ..graph.buckets import parse_buckets

    try:
        buckets = parse_buckets(items)
    except DynamicShapeError as e:
        raise UsageError(str(e)) from None
    return {"dynamic": dynamic, **({"buckets": buckets} if buckets else {})}


def add_batch_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", default=None, metavar="1,8,32",
                   help="batch profiles: build for each batch size (an ONNX model's dynamic leading dim, a "
                        "chain's dim 0); -o saves them all in one artefact, whose run picks the profile "
                        "by the inputs' shapes")


def parse_batches(text: Optional[str]) -> Optional[list[int]]:
    """--batch '1,8,32' -> [1, 8, 32] (ascending); None when not given."""
    if text is None:
        return None
    parts = [t.strip() for t in text.split(",")]
    if not all(re.fullmatch(r"[0-9]+", t) for t in parts) or any(int(t) < 1 for t in parts):
        raise UsageError(f"--batch {text!r}: expected positive batch sizes such as 1,8,32")
    sizes = [int(t) for t in parts]
    if len(set(sizes)) != len(sizes):
        raise UsageError(f"--batch {text!r}: a batch size given twice")
    return sorted(sizes)


def load_graphs(args: argparse.Namespace) -> Optional[dict]:
    """{batch: graph} for --batch (the model imported, or the chain made, for each batch size),
    else None (use load_graph)."""
    batches = parse_batches(getattr(args, "batch", None))
    if batches is None:
        return None
    if not args.spec.endswith(".onnx"):
        from ..plan.spec import parse_chain

        shape = chain_shape(args)
        target, precision = chain_target(args)
        return {b: parse_chain(args.spec, (b, *shape[1:]), chain_dtype(args), args.layout, target, precision)
                for b in batches}
    if getattr(args, "input", None):
        raise UsageError("--input/-i is a chain's input shape; for an ONNX model use --shape NAME=DIMS")
    from ..frontend.onnx import load_model

    return onnx_batch_graphs(load_model(args.spec), batches, parse_shapes(getattr(args, "shape", [])),
                             source=args.spec)


def onnx_batch_graphs(model, batches: list[int], shapes: dict[str, tuple[int, ...]],
                      source: Optional[str] = None) -> dict:
    """{batch: graph}: the ONNX model imported for each batch size (its dynamic leading dims
    set to it); a model without one is a usage error."""
    from ..errors import ModelImportError
    from ..frontend.onnx import batch_input_shapes

    init = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in init]
    shapes = named_shapes(shapes, names)
    graphs = {}
    for b in batches:
        try:
            shapes_b = batch_input_shapes(model, b, shapes)
        except ModelImportError as e:
            raise UsageError(f"--batch: {e}") from None
        graphs[b] = import_model(model, shapes_b, names, source)
    return graphs


def parse_dims(text: str, what: str, shown: Optional[str] = None) -> tuple[int, ...]:
    """'1x3x224x224' or '1,3,224,224' -> (1, 3, 224, 224); every dim a positive integer.
    A usage error names `what` and `shown` (the option's whole value; `text` by default)."""
    text_ = text.strip().lower()
    ok = re.fullmatch(r"[0-9]+(?:[x,][0-9]+)*", text_)  # not '', '2xAx8', '2xx8', '2x-1'
    dims = tuple(int(p) for p in re.split(r"[x,]", text_)) if ok else ()
    if not dims or any(d < 1 for d in dims):
        raise UsageError(f"{what} {(text if shown is None else shown)!r}: expected positive dims "
                         f"such as 1x3x224x224")
    return dims


def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """--shape values: {name: dims}; a value without NAME= is keyed "" (a chain's input)."""
    out: dict[str, tuple[int, ...]] = {}
    for it in items:
        name, sep, dims = it.rpartition("=")
        if sep and not name:
            raise UsageError(f"--shape {it!r}: expected NAME=DIMS, e.g. x=1x3x224x224")
        if name in out:
            raise UsageError(f"--shape: {name or 'the input'!r} given twice")
        out[name] = parse_dims(dims, "--shape", shown=it)  # the error names the input too
    return out


def resolve_target(text: str):
    """make_target, except that a plain `cuda` takes the architecture of the GPU present
    (tvm.cuda(0).compute_version) when there is one; `cuda:sm_80` is used as given."""
    from ..target import ALIASES, make_target

    name, _, arch = text.partition(":")
    if ALIASES.get(name, name) == "cuda" and not arch:
        found = gpu_arch()
        if found:
            log.debug("target cuda: %s, the architecture of the GPU present", found)
            text = f"cuda:{found}"
    return make_target(text)


def gpu_arch() -> Optional[str]:
    """'sm_86' for the CUDA GPU 0 of this machine, None without one."""
    from ..target import has_gpu

    if not has_gpu("cuda"):
        return None
    import tvm

    major, _, minor = str(tvm.cuda(0).compute_version).partition(".")
    return f"sm_{major}{minor or '0'}"


def check_runnable(target, command: str) -> None:
    """Running on a GPU target needs that GPU: say so in one line, before building."""
    from ..errors import TefuseError
    from ..target import has_gpu

    kind = target.kind.name
    if kind != "llvm" and not has_gpu(kind):
        raise TefuseError(f"no {kind.upper()} GPU on this machine, so `tefuse {command} -t {kind}` cannot run; "
                          f"run on the CPU (-t llvm), or compile only (`tefuse build -t {kind} -e {kind}"
                          f"{'|ptx' if kind == 'cuda' else ''}`)")


def load_graph(args: argparse.Namespace):
    """The graph of `args.spec`: an ONNX model (shapes from --shape) or a chain spec (its input
    shape from --input or a --shape)."""
    shapes = parse_shapes(getattr(args, "shape", []))
    if args.spec.endswith(".onnx"):
        if getattr(args, "input", None):
            raise UsageError("--input/-i is a chain's input shape; for an ONNX model use --shape NAME=DIMS")
        from ..frontend.onnx import load_model

        model = load_model(args.spec)
        init = {i.name for i in model.graph.initializer}
        return import_model(model, shapes, [i.name for i in model.graph.input if i.name not in init], args.spec,
                            dynamic=parse_dynamic_option(args) is not None)
    from ..plan.spec import parse_chain

    return parse_chain(args.spec, chain_shape(args), chain_dtype(args), args.layout, *chain_target(args))


def chain_target(args: argparse.Namespace) -> tuple:
    """(target, precision) a chain's graph is made for: its conv weight is then declared in the
    layout that target's kernel reads (OHWI on Hopper), as a FusionPlan compiled for it stores it."""
    target = getattr(args, "target", None)
    return (resolve_target(target) if target else None), getattr(args, "precision", "fp32")


# a chain's tensors under --precision when --dtype names none (graph/precision.py's LOW, spelled
# here so that `--help` loads neither TVM nor numpy)
CHAIN_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def chain_dtype(args: argparse.Namespace) -> str:
    """A chain's tensors: --dtype, else the precision's storage type. A chain has no float32
    model to convert, so `--precision fp16` builds an fp16 chain, as a FusionPlan with fp16
    descriptors: its weights are then read by the tensor cores' copies as they are (Hopper's
    wgmma), where float32 ones would be cast in each tile's load (mma.sync)."""
    if getattr(args, "dtype", None):
        return args.dtype
    return CHAIN_DTYPES.get(getattr(args, "precision", "fp32"), "float32")


def chain_shape(args: argparse.Namespace) -> tuple[int, ...]:
    """A chain's input shape: --input, or a --shape (named or not), else the default."""
    shapes = parse_shapes(getattr(args, "shape", []))
    if len(shapes) > 1:
        raise UsageError("a chain has one input: give one --shape")
    if shapes and args.input:
        raise UsageError("give the chain's input shape once: --input or --shape")
    return next(iter(shapes.values())) if shapes else parse_dims(args.input or DEFAULT_CHAIN_SHAPE, "--input")


def named_shapes(shapes: dict[str, tuple[int, ...]], input_names: list[str]) -> dict[str, tuple[int, ...]]:
    """A --shape without NAME= names the model's only input."""
    if "" not in shapes:
        return shapes
    if len(input_names) != 1:
        raise UsageError(f"the model has inputs {input_names}: name the one to shape, e.g. "
                         f"--shape {input_names[0] if input_names else 'x'}=1x3x224x224")
    rest = {k: v for k, v in shapes.items() if k}
    return {input_names[0]: shapes[""]} | rest


def _fixed(d) -> bool:
    return d.HasField("dim_value") and d.dim_value > 0


def model_shape_text(vi) -> str:
    """An ONNX input's shape as the model gives it: 1x3x224x224, Nx3x224x224, ?x10."""
    return "x".join(str(d.dim_value) if _fixed(d) else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim)


def shape_conflict(vi, dims: Sequence[int]) -> Optional[str]:
    """Why `dims` cannot be the shape of the ONNX input `vi` (None: they can): another rank, or
    another size for a dim the model fixes. A symbolic dim (a name, -1, 0 or unset) takes any
    size; an input without a shape in the model takes any shape."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    model = tt.shape.dim
    if len(dims) != len(model):
        return f"{len(model)} dims, not {len(dims)}"
    fixed = [k for k, (m, d) in enumerate(zip(model, dims)) if _fixed(m) and m.dim_value != d]
    if not fixed:
        return None
    return ", ".join(f"dim {k} is fixed at {model[k].dim_value}" for k in fixed)


def import_model(model, shapes: dict[str, tuple[int, ...]], input_names: list[str], source: Optional[str] = None,
                 dynamic: bool = False):
    """import_onnx with --shape values; unknown names or dims left unknown are usage errors
    that say which --shape to add. --shape sizes only the dims the model leaves symbolic: one
    that changes a fixed dim is a usage error naming the input and the dims. dynamic: the dims
    --shape leaves unknown stay symbolic (--dynamic gives their ranges)."""
    from ..frontend.onnx import import_onnx

    shapes = named_shapes(shapes, input_names)
    unknown = sorted(set(shapes) - set(input_names))
    if unknown:
        raise UsageError(f"--shape names unknown input(s) {unknown}; the model's inputs are {input_names}")
    missing = []
    for vi in model.graph.input:
        if vi.name in shapes and vi.name in input_names:
            why = shape_conflict(vi, shapes[vi.name])
            if why:
                raise UsageError(f"--shape {vi.name}={'x'.join(map(str, shapes[vi.name]))}: input {vi.name!r} is "
                                 f"{model_shape_text(vi)} in the model ({why}); --shape sizes only the "
                                 f"dims the model leaves symbolic")
        if vi.name not in input_names or vi.name in shapes or dynamic:
            continue
        dims = vi.type.tensor_type.shape.dim
        if any(not _fixed(d) for d in dims):
            shown = model_shape_text(vi)
            example = "x".join(str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else "1"
                               for d in dims)
            missing.append(f"{vi.name!r} is {shown} (--shape {vi.name}={example})")
    if missing:
        raise UsageError("model inputs with unknown dims: " + "; ".join(missing))
    return import_onnx(model, input_shapes=shapes or None, source=source, dynamic=dynamic)


def add_parser(sub) -> None:
    p = sub.add_parser("build", help="fuse and compile; print generated code or save the artefact",
                       description="Fuse and compile a chain spec or an ONNX model; print the code or "
                                   "save a compiled artefact.")
    add_common(p)
    add_batch_option(p)
    add_dynamic_option(p)
    add_precision_option(p)
    p.add_argument("--emit", "-e", default="summary", choices=EMIT,
                   help="what to print (default summary); cuda and ptx need no GPU; graph (text) and dot "
                        "(Graphviz, one box per kernel: `-e dot | dot -Tsvg > g.svg`) compile nothing")
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
    add_horizontal_option(p)


def add_horizontal_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--horizontal", action=argparse.BooleanOptionalAction, default=None,
                   help="run independent launch-bound kernels (one dependency level, each at most one wave of "
                        "thread blocks) as one launch a level and kernel kind, sibling convs merged first "
                        "(default: $TEFUSE_HORIZONTAL, else off)")


def build_options(args):
    """The BuildOptions of a command: the environment's (TEFUSE_*), --horizontal over them."""
    from ..options import BuildOptions

    opts = BuildOptions.from_env()
    flag = getattr(args, "horizontal", None)
    return opts if flag is None else replace(opts, horizontal=flag)


def open_db_and_cache(args):
    """The user + shipped tuning logs and the on-disk kernel cache, unless --no-db / --no-cache."""
    from ..codegen.cache import default_cache
    from ..tune.database import default_database

    db = None if getattr(args, "no_db", False) else default_database()
    cache = None if getattr(args, "no_cache", False) else default_cache()
    return db, cache


def build_graph(graph, target, db, cache, jobs: Optional[int], **options):
    """driver.build with a progress bar (when stderr is a terminal); {batch: graph} builds a
    ProfiledGraph, one bar per batch size. options: graph_options' (and build's dynamic=)."""
    from ..driver import build
    from .progress import build_progress

    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if isinstance(graph, dict):
        from ..runtime.profiles import profiled

        built = {}
        for k, (b, g) in enumerate(sorted(graph.items()), 1):
            log.info("batch profile %d (%d of %d)", b, k, len(graph))
            update, finish = build_progress(f"compiling kernels (batch {b})")
            try:
                built[b] = build(g, target, db=db, cache=cache, jobs=jobs, progress=update, **options)
            finally:
                finish()
        return profiled(built)
    update, finish = build_progress()
    try:
        return build(graph, target, db=db, cache=cache, jobs=jobs, progress=update, **options)
    finally:
        finish()


def _q(text: str) -> str:
    """A Graphviz quoted id or label; a real newline becomes a line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def fusion_dot(graph, groups) -> str:
    """Graphviz text of the fused graph: one box (cluster) per kernel holding its ops, the
    graph's inputs and outputs as ellipses; constants are counted in the op labels, not drawn."""
    from ..graph.ir import CONST

    lines = ["digraph tefuse {", "  rankdir=TB;", "  node [shape=box, style=rounded, fontsize=10];"]
    for n in graph.inputs:
        lines.append(f"  {_q(n.name)} [shape=ellipse, label={_q(n.name + chr(10) + n.type_str())}];")
    for k, g in enumerate(groups):
        lines.append(f"  subgraph {_q(f'cluster_{k}')} {{")
        lines.append(f"    label={_q(f'kernel {k + 1}: {g.name}')}; style=filled; fillcolor=\"#eef3fb\";")
        for n in g.nodes:
            consts = sum(i.op == CONST for i in n.inputs)
            label = n.op + (f" (+{consts} const)" if consts else "") + "\n" + n.type_str()
            lines.append(f"    {_q(n.name)} [label={_q(label)}];")
        lines.append("  }")
    for g in groups:
        for n in g.nodes:
            for i in n.inputs:
                if i.op != CONST:
                    lines.append(f"  {_q(i.name)} -> {_q(n.name)};")
    for j, o in enumerate(graph.outputs):
        out = f"output:{o.name}"
        lines.append(f"  {_q(out)} [shape=ellipse, label={_q(f'output {j}' + chr(10) + o.name)}];")
        if o.op != CONST:
            lines.append(f"  {_q(o.name)} -> {_q(out)};")
    lines.append("}")
    return "\n".join(lines)


def _ptx(cg, arch: str) -> str:
    """Each kernel's PTX, compiled for the arch it is built for (a wgmma kernel: sm_90a)."""
    from ..codegen.ptx import compile_to_ptx, ptx_arch

    out = []
    for k in cg.kernels:
        src = k.source("cuda")
        out.append(f"// ---- {k.group.name} ----\n{compile_to_ptx(src, ptx_arch(src, arch))}")
    return "\n".join(out)


def run(args) -> int:
    if getattr(args, "output", None):
        from .paths import check_output_path

        check_output_path(args.output, "-o")
    dynamic = parse_dynamic_option(args)
    extra = dynamic_build_args(args, dynamic)
    graphs = load_graphs(args)
    graph = load_graph(args) if graphs is None else graphs
    each = graphs.items() if graphs is not None else [(None, graph)]
    if args.emit == "graph":
        for b, g in each:
            print(g.text() if b is None else f"# batch {b}\n{g.text()}")
        return 0
    if args.emit == "dot":
        from ..driver import prepare_graph
        from ..fusion import fuse_graph
        from ..schedules import prologue_policy

        # the kernels a build for this target and precision makes (layout, weights, prologue rules)
        from ..driver import graph_ranges
        from ..ops.value import dim_hints

        target = resolve_target(args.target)
        for b, g in each:  # several digraphs in one file: dot draws each
            with dim_hints({k: r.opt for k, r in graph_ranges(g, dynamic).items()}):
                g = prepare_graph(g, target, **graph_options(args, g))
                dot = fusion_dot(g, fuse_graph(g, prologue=prologue_policy(target)))
            print(dot if b is None else f"// batch {b}\n{dot}")
        return 0
    if args.emit == "ptx" and not args.target.startswith(("cuda", "gpu")):
        raise UsageError("--emit ptx needs a cuda target")
    target = resolve_target(args.target)
    db, cache = open_db_and_cache(args)
    cg = build_graph(graph, target, db, cache, args.jobs, options=build_options(args), **extra,
                     **graph_options(args, graph))
    if args.emit == "summary":
        print(cg.summary())
    elif args.emit == "ptx":
        arch = str(target.attrs.get("arch", "sm_90"))
        if graphs is None:
            print(_ptx(cg, arch))
        for p in getattr(cg, "profiles", ()):
            print(f"// ==== batch {p.batch} ====\n{_ptx(p.graph, arch)}")
    else:
        print(cg.source(args.emit))
    if args.output:
        from ..runtime.artifact import save

        try:
            save(cg, args.output)  # logs where
        except OSError as e:
            from .paths import write_failed

            raise write_failed(args.output, "-o", e) from None
    return 0
