"""Tensor-core precisions against PyTorch in the same precision, side by side on one GPU.

Five suites, each result a ratio (tefuse time / peer time; below 1 means tefuse is faster),
each checked against a float64 (or onnxruntime float32) reference before it is timed:

* `conv`: conv+bias+batch_norm+relu over ResNet-50's 15 conv shapes, tefuse's one fused kernel
  against cuDNN's convolution alone (channels_last, the same precision), CUDA-graph replays;
* `plan`: the same chain as a FusionPlan (MIOpen's Fusion API): compiled once, its weights set
  at run time through OperatorArgs, against cuDNN's conv alone;
* `gemm`: an fp16 GEMM with a fused bias+ReLU against cuBLAS (torch.addmm + relu);
* `models`: torchvision ResNet-50 / ViT-B/16 built with `precision=` against PyTorch in that
  precision (channels_last CUDA graph, and torch.compile where it works);
* `zoo`: the model zoo's torchvision and transformers models the same way, by default the ones
  no shipped tuning record was made for (`UNTUNED_ZOO`; with `--no-db`: untuned; with
  `--tune-minutes 10`: each model and batch tuned for ten minutes first, as `tefuse tune
  --minutes 10`, into the user database, which a later run resumes from).

    python -m tefuse.bench.precision conv --precision fp16 bf16 --batch 1 16 --json out.json
    python -m tefuse.bench.precision zoo --precision fp16 --batch 1 32 --no-db --json untuned.json
    TEFUSE_USER_DB=zoo_tuning.jsonl python -m tefuse.bench.precision zoo --precision fp16 --batch 1 32 \
        --tune-minutes 10 --shard 1/2 --resume --json tuned_1.json
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import math
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from ..tune.knobs import knob_assignment
from . import timing
from .runs import command_line, shard_of, sharded, write_json_whole
from .timing import config_sources, device_kernels, kernel_profile, time_graph, time_wall

log = logging.getLogger(__name__)

# (C, H=W, K, kernel, stride), pad = kernel // 2: ResNet-50's convolutions
RESNET50_CONVS = [(64, 56, 64, 1, 1), (64, 56, 64, 3, 1), (64, 56, 256, 1, 1), (256, 56, 64, 1, 1),
                  (128, 28, 128, 3, 1), (256, 56, 128, 1, 1), (512, 28, 128, 1, 1), (128, 28, 512, 1, 1),
                  (256, 14, 256, 3, 1), (1024, 14, 256, 1, 1), (256, 14, 1024, 1, 1), (512, 7, 512, 3, 1),
                  (2048, 7, 512, 1, 1), (512, 7, 2048, 1, 1), (3, 224, 64, 7, 2)]
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "tf32": "float32"}  # tensors' dtype


def _graph_precision(precision: str) -> str:
    """What tefuse.build gets for a graph already in DTYPES[precision]: tf32 marks its float32
    matrix products; the others are in their dtype already."""
    return "tf32" if precision == "tf32" else "fp32"


def _torch_math(torch, precision: str) -> None:
    """PyTorch in the same precision: TF32 on for convolutions and matmuls under tf32 (PyTorch's
    default for convolutions), off otherwise, so fp32 means strict float32."""
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
# ||out - ref|| / ||ref|| a precision may reach before its timing means nothing (METHOD.md's ranges)
TOLERANCE = {"fp32": 1e-5, "tf32": 1e-3, "fp16": 1e-2, "bf16": 3e-2, "int8": 1e-1, "fp8": 2e-1}
# quantized precisions (models suite): the PyTorch peer runs in the float precision tefuse keeps
# for what is not quantized (graph/precision.py's QUANTIZED)
QUANT_PEERS = {"int8": "fp16", "fp8": "fp16"}
CALIBRATION_SAMPLES = 4


@dataclass
class Row:
    suite: str
    case: str
    precision: str
    batch: int
    tefuse_ms: float
    peer_ms: Optional[float]
    peer: str
    rel_err: float
    ok: bool
    templates: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> Optional[float]:
        return self.tefuse_ms / self.peer_ms if self.peer_ms else None


def _torch():
    import torch

    torch.backends.cudnn.benchmark = True
    return torch


def _rel(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    if not np.isfinite(got).all():
        return math.inf
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def _templates(cg) -> list:
    return sorted({k.template for k in cg.kernels})


def conv_case(c: int, hw: int, k: int, r: int, s: int, batch: int, precision: str, db=None,
              layout: str = "NCHW", split_k: Union[bool, int] = True, tune_trials: int = 0, tuning=None) -> Row:
    """tefuse's fused conv+bias+BN+ReLU in `precision` (inputs already in `precision`, tensors in
    `layout`) vs cuDNN's conv alone, channels_last; split_k as build's (a split conv's time
    includes its second kernel, the sum with the epilogue). tune_trials > 0: its kernels are tuned
    first (that many measurements each, `db="default"` only), into the user database the build
    then reads, as `tefuse tune` would; `tuning` (a TuningTools) holds the search (xgb unless the
    run asks otherwise, narrowed by its `only`) and keeps the build workers and the measuring
    process from one case to the next."""
    import tvm

    from ..driver import build
    from ..plan.spec import build_plan
    from .chain import random_args

    torch = _torch()
    dt = DTYPES[precision]
    shape = (batch, c, hw, hw) if layout == "NCHW" else (batch, hw, hw, c)
    plan = build_plan(f"conv2d(k={k},r={r},stride={s},pad={r // 2})+bias+batch_norm+relu", shape, dt, layout)
    vals = random_args(plan, np.random.default_rng(0))
    vals = {n: v.astype(np.float32) for n, v in vals.items()}
    w = [i.name for i in plan.graph.inputs if i.name.endswith("_weight")][0]
    # the weight a build-time constant, as in a model (graph/weights.py may relayout it)
    graph = plan.graph.with_constants({w: _to_np(vals[w], dt)})
    tune_first(graph, _graph_precision(precision), db, tune_trials, tuning, split_k=split_k)
    cg = build(graph, "cuda", db=db, precision=_graph_precision(precision), split_k=split_k)
    dev = cg.device
    tv = {n: tvm.runtime.tensor(_to_np(v, dt), dev) for n, v in vals.items() if n != w}
    err, ms, peer, timing = _check_and_time_against_cudnn(torch, plan, cg, tv, vals, precision, s, r // 2, layout)
    splits = _split_products(cg)
    extra = {"kernels": cg.num_kernels, "split_k": splits[0] if splits else 1, **timing}
    return Row("conv", f"{c}x{hw}x{hw}->{k} {r}x{r}/{s} {layout}", precision, batch, ms, peer,
               f"cuDNN conv alone, {precision}, channels_last", err, err <= TOLERANCE[precision], _templates(cg),
               extra)


def _check_and_time_against_cudnn(torch, plan, cg, tv: dict, vals: dict, precision: str, stride: int, pad: int,
                                  layout: str) -> tuple:
    """(error against float64, tefuse's ms, cuDNN's conv alone's ms, timing extras) of a built
    conv+bias+BN+ReLU `cg` run on device tensors `tv`, its arguments `vals` (float32, the plan's
    names and layouts)."""
    out = cg.run(**tv)[0]
    got = out.astype(np.float32)
    if layout == "NHWC":  # compare in NCHW: torch's reference is NCHW
        got = got.transpose(0, 3, 1, 2)
        vals = {n: v.transpose(0, 3, 1, 2) if n == "x" else v.transpose(3, 2, 0, 1) if n.endswith("_weight") else v
                for n, v in vals.items()}
    err = _rel(got, _conv_bn_relu_reference(torch, plan, vals, stride, pad))
    tdt = getattr(torch, DTYPES[precision])
    w = next(n for n in vals if n.endswith("_weight"))
    x, wt = (torch.from_numpy(np.ascontiguousarray(vals[n])).cuda().to(tdt).to(memory_format=torch.channels_last)
             for n in ("x", w))
    ms, peer, timing = _time_against(torch, cg, tv, out, precision,
                                     lambda: torch.nn.functional.conv2d(x, wt, None, stride, pad))
    return err, ms, peer, timing


def _conv_bn_relu_reference(torch, plan, vals: dict, stride: int, pad: int) -> np.ndarray:
    """conv+bias+BN+ReLU of a plan's arguments (by name; NCHW tensors, OIHW weight) in float64."""
    t = {n: torch.from_numpy(np.ascontiguousarray(v)).cuda().double() for n, v in vals.items()}

    def arg(suffix: str):
        return t[next(i.name for i in plan.graph.inputs if i.name.endswith(suffix))]

    eps = next(n.attrs["epsilon"] for n in plan.graph.nodes if n.op == "batch_norm")
    with torch.no_grad():
        ref = torch.nn.functional.conv2d(t["x"], arg("_weight"), None, stride, pad) + arg("_bias").view(1, -1, 1, 1)
        ref = torch.nn.functional.batch_norm(ref, arg("_mean"), arg("_var"), arg("_gamma"), arg("_beta"), False, 0.0,
                                             eps)
        return torch.relu(ref).cpu().numpy()


def plan_case(c: int, hw: int, k: int, r: int, s: int, batch: int, precision: str, layout: str = "NHWC",
              db=None, tune_trials: int = 0, tuning=None) -> Row:
    """MIOpen's Fusion API path: a FusionPlan conv+bias+BN+ReLU in `precision`'s dtype compiled
    once, every weight a run-time argument set through OperatorArgs (converted once to the
    kernel's layout: OHWI where Hopper's wgmma reads it), executed from device tensors; vs cuDNN's
    conv alone (channels_last, the same precision). db: the performance database the plan's
    compile reads (as MIOpen's compile reads its perf-db), tuned first with tune_trials."""
    import tvm

    from ..plan import FusionPlan, TensorDesc
    from .chain import random_args

    torch = _torch()
    dt = DTYPES[precision]
    shape = (batch, c, hw, hw) if layout == "NCHW" else (batch, hw, hw, c)
    wshape = (k, c, r, r) if layout == "NCHW" else (r, r, c, k)
    plan = FusionPlan(TensorDesc(shape, dt, layout))
    hc = plan.add_conv(TensorDesc(wshape, dt), stride=s, padding=r // 2)
    hb, hn = plan.add_bias(), plan.add_batch_norm()
    plan.add_activation("relu")
    tune_first(plan.kernel_graph("cuda", precision), precision, db, tune_trials, tuning, split_k=False)
    plan.compile("cuda", precision=precision, db=db)
    vals = {n: v.astype(np.float32) for n, v in random_args(plan, np.random.default_rng(0)).items()}
    names = {suffix: next(n for n in vals if n.endswith(suffix))
             for suffix in ("_weight", "_bias", "_gamma", "_beta", "_mean", "_var")}
    args = plan.new_args()
    args.set_conv(hc, _to_np(vals[names["_weight"]], dt))
    args.set_bias(hb, _to_np(vals[names["_bias"]], dt))
    args.set_batch_norm(hn, *(_to_np(vals[names[x]], dt) for x in ("_gamma", "_beta", "_mean", "_var")))
    cg = plan.compiled
    dev = cg.device
    tv = {"x": tvm.runtime.tensor(_to_np(vals["x"], dt), dev),
          **{n: tvm.runtime.tensor(np.ascontiguousarray(v), dev) for n, v in args.values.items()}}
    err, ms, peer, timing = _check_and_time_against_cudnn(torch, plan, cg, tv, vals, precision, s, r // 2, layout)
    extra = {"kernels": cg.num_kernels, "weight_layout": args.layouts.get(names["_weight"], ""), **timing}
    return Row("plan", f"{c}x{hw}x{hw}->{k} {r}x{r}/{s} {layout}", precision, batch, ms, peer,
               f"cuDNN conv alone, {precision}, channels_last", err, err <= TOLERANCE[precision], _templates(cg),
               extra)


@dataclass
class TuningTools:
    """One pool of build workers and one measuring process for every case a run tunes: started
    per case, their TVM imports (tensor intrinsics: 20-40 s a worker) cost more than a case's
    trials."""

    tuner: str = "xgb"
    only: dict = field(default_factory=dict)  # knob values, as `tefuse tune --only`
    untuned_only: bool = False  # kernels with shipped records are left, as `tefuse tune --untuned-only`
    parallel: Optional[int] = None  # build workers (default: the CPU count), as `tefuse tune --parallel`
    builder: object = None
    runner: object = None

    def __enter__(self) -> "TuningTools":
        from ..tune.builder import LocalBuilder
        from ..tune.runner import LocalRunner

        self.builder, self.runner = LocalBuilder(n_parallel=self.parallel), LocalRunner()
        return self

    def __exit__(self, *exc) -> None:
        self.builder.close()
        self.runner.close()


def tune_first(graph, precision: str, db, trials: int, tuning=None, minutes: float = 0.0, **build_options):
    """With trials > 0 (measurements a kernel) or minutes > 0 (wall time for all the kernels,
    spent where the model's time is expected to fall most, as `tefuse tune --minutes`), tune
    `graph`'s kernels into the user database a later build with db="default" reads; `tuning` (a
    TuningTools) holds the search and keeps its workers from one case to the next. precision and
    build_options: what the case's build gets, so the kernels tuned are the ones it looks up.
    Returns the minutes run's BudgetReport (else None)."""
    if not trials and not minutes:
        return None
    if db != "default":
        raise ValueError("tuning writes to the user database: tune with the default database")
    from ..driver import prepare_graph

    tools = {"builder": tuning.builder, "runner": tuning.runner, "tuner": tuning.tuner,
             "only": tuning.only} if tuning is not None else {}
    graph = prepare_graph(graph, "cuda", precision=precision, **build_options)
    if minutes:
        from ..tune.budget import tune_within

        return tune_within(graph, "cuda", seconds=60 * minutes, **tools)
    from ..tune.database import records_elsewhere
    from ..tune.loop import tune

    covered = records_elsewhere(None) if tuning is not None and tuning.untuned_only else None
    tune(graph, "cuda", trials=trials, covered=covered, **tools)
    return None


def budget_facts(report) -> dict:
    """A --tune-minutes run's facts for a row's extra: its budget and rounds, why it stopped, its
    failed trials, and the model time its kernels' best records sum to before and after."""
    return {"tune_minutes": report.budget / 60, "tune_elapsed_s": report.elapsed, "tune_rounds": report.rounds,
            "tune_trials": report.measured, "tune_stopped": report.stopped, "tune_errors": report.errors,
            "tune_model_ms_before": _ms_or_none(report.model_time_before),
            "tune_model_ms_after": _ms_or_none(report.model_time_after)}


def _ms_or_none(seconds: float) -> Optional[float]:
    """Milliseconds, or None where the log held no record of some kernel (JSON has no infinity)."""
    return 1e3 * seconds if math.isfinite(seconds) else None


def _split_option(args):
    """build's split_k from --no-split-k / --split-k N."""
    return False if args.no_split_k else (args.split_k or True)


def _split_products(cg) -> list[int]:
    """The slice count of every split-K product the build made (graph/split_k.py)."""
    return [n.attrs["split_k"] for n in cg.graph.nodes if n.attrs.get("split_k", 1) > 1]


def _to_np(v: np.ndarray, dt: str):
    if dt == "bfloat16":
        import ml_dtypes

        return v.astype(ml_dtypes.bfloat16)
    return v.astype(dt)


def gemm_case(m: int, n: int, k: int, precision: str, db=None, tune_trials: int = 0, tuning=None) -> Row:
    """C = relu(A @ W^T + b) in `precision` (float32 accumulation) vs cuBLAS's addmm + relu;
    tune_trials and tuning as conv_case's."""
    import tvm

    from ..driver import build
    from ..graph import GraphBuilder

    torch = _torch()
    dt = DTYPES[precision]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) / math.sqrt(k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    b = GraphBuilder()
    x, wn, bn = b.input("a", (m, k), dt), b.input("w", (n, k), dt), b.input("b", (n,), dt)
    graph = b.build(b.relu(b.bias_add(b.dense(x, wn), bn, axis=1)))
    tune_first(graph, _graph_precision(precision), db, tune_trials, tuning)
    cg = build(graph, "cuda", db=db, precision=_graph_precision(precision))
    dev = cg.device
    args = {"a": a, "w": w, "b": bias}
    tv = {nm: tvm.runtime.tensor(_to_np(v, dt), dev) for nm, v in args.items()}
    out = cg.run(**tv)[0]
    got = out.astype(np.float32)
    ta = {nm: torch.from_numpy(_to_np(v, dt).astype(np.float32)).cuda().double() for nm, v in args.items()}
    with torch.no_grad():
        ref = torch.relu(ta["a"] @ ta["w"].T + ta["b"]).cpu().numpy()
    err = _rel(got, ref)
    pa, pw, pb = (torch.from_numpy(v).cuda().to(getattr(torch, dt)) for v in (a, w, bias))
    ms, peer, timing = _time_against(torch, cg, tv, out, precision, lambda: torch.relu(torch.addmm(pb, pa, pw.T)))
    tflops = 2 * m * n * k / (ms * 1e-3) / 1e12
    extra = {"tefuse_tflops": tflops, "peer_tflops": 2 * m * n * k / (peer * 1e-3) / 1e12, **timing}
    return Row("gemm", f"{m}x{n}x{k}", precision, m, ms, peer, f"cuBLAS addmm+relu, {precision}", err,
               err <= TOLERANCE[precision], _templates(cg), extra)


def quant_gemm_graph(m: int, n: int, k: int, precision: str, rng, fast_accum: bool = False):
    """(graph, a's codes, w's codes, a's values, w's values, scale, bias) for relu(A_q @ W_q^T *
    scale + bias): int8 operands accumulating int32, or float8 e4m3 codes summed in float32 (a QDQ
    anchor as graph/qdq.py makes it; fast_accum: in the tensor cores' accumulator), the
    dequantize scale, bias and ReLU its epilogue."""
    from ..graph import GraphBuilder

    if precision == "fp8":
        import ml_dtypes

        av, wv = (rng.standard_normal(shape).astype(ml_dtypes.float8_e4m3fn) for shape in ((m, k), (n, k)))
        aq, wq, attrs = av.view(np.uint8), wv.view(np.uint8), {"codes": "float8_e4m3fn"}
        if fast_accum:
            attrs["fast_accum"] = True
    else:
        av, wv = (rng.integers(-128, 128, shape, dtype=np.int8) for shape in ((m, k), (n, k)))
        aq, wq, attrs = av, wv, {"out_dtype": "int32"}
    scale = (rng.random(n) / k).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    b = GraphBuilder()
    y = b.op("dense", b.input("a", (m, k), str(aq.dtype)), b.const(wq, name="w"), **attrs)
    y = b.op("mul", b.op("cast", y, dtype="float32"), b.const(scale, name="s"))
    graph = b.build(b.relu(b.bias_add(y, b.const(bias, name="b"), axis=1)))
    return graph, aq, wq, av.astype(np.float32), wv.astype(np.float32), scale, bias


def quant_gemm_case(m: int, n: int, k: int, precision: str, db=None, fast_accum: bool = False) -> Row:
    """quant_gemm_graph's product on tensor cores (int8 or fp8) against cuBLASLt's product alone
    in the same type (torch._int_mm into int32; torch._scaled_mm into float32, with fast_accum
    its use_fast_accum as tefuse's), each timed as a CUDA graph in turn; checked against float64
    on the GPU."""
    from ..driver import build

    torch = _torch()
    fast_accum = fast_accum and precision == "fp8"
    graph, aq, wq, av, wv, scale, bias = quant_gemm_graph(m, n, k, precision, np.random.default_rng(0), fast_accum)
    cg = build(graph, "cuda", db=db)
    out = cg.run(a=aq)[0]
    feeds = {"a": torch.from_numpy(aq).cuda()}
    ta, tw = (torch.from_numpy(v).cuda().double() for v in (av, wv))
    with torch.no_grad():
        ref = torch.relu((ta @ tw.T) * torch.from_numpy(scale).cuda().double()
                         + torch.from_numpy(bias).cuda().double()).cpu().numpy()
    err = _rel(out, ref)
    pa, pw = feeds["a"], torch.from_numpy(wq).cuda()
    if precision == "fp8":
        one = torch.tensor(1.0, device="cuda")
        pa, pw = pa.view(torch.float8_e4m3fn), pw.view(torch.float8_e4m3fn)
        peer_fn = lambda: torch._scaled_mm(pa, pw.T, scale_a=one, scale_b=one, out_dtype=torch.float32,  # noqa: E731
                                           use_fast_accum=fast_accum)
        peer = (f"cuBLASLt fp8 (torch._scaled_mm, float32 out{', use_fast_accum' if fast_accum else ''}), "
                "the product alone")
    else:
        peer_fn, peer = lambda: torch._int_mm(pa, pw.T), "cuBLASLt int8 (torch._int_mm), the product alone"
    graph_ms, graph_error, run = _tefuse_graph_ms(torch, cg, feeds, out)
    kernels_ms = 1e3 * sum(cg.time_kernels(a=aq))
    graph_ms, peer_ms = alternate(run, peer_fn, graph_ms)
    ms = graph_ms or kernels_ms
    extra = {"kernels_ms": kernels_ms, "graph_ms": graph_ms, "tefuse_tops": 2 * m * n * k / (ms * 1e-3) / 1e12,
             "peer_tops": 2 * m * n * k / (peer_ms * 1e-3) / 1e12}
    if graph_error:
        extra["graph_error"] = graph_error
    return Row("gemm", f"{m}x{n}x{k}" + (" fast_accum" if fast_accum else ""), precision, m, ms, peer_ms, peer, err,
               err <= QUANT_GEMM_TOLERANCE, _templates(cg), extra)


# a quantized GEMM's error (norm) against float64 of the same operands: summation order (int32 is
# exact; fp8 rows are promoted to float32, schedules/cuda/intrin/wgmma.promotes) and, with fast
# accumulation (ops/codes.fast_accumulation), the tensor cores' fp8 accumulator: 1.3e-5 at 8192
# deep on an H200, where the bias (standard normal) outweighs the scaled product; the product
# alone is 1.3e-3 from float32 sums (tests/gpu/test_qdq_cuda_gpu.py)
QUANT_GEMM_TOLERANCE = 1e-3


def attention_case(batch: int, heads: int, length: int, dim: int, precision: str, db=None, tune_trials: int = 0,
                   tuning=None) -> Row:
    """softmax(q k^T / sqrt(d)) v as one attention op ([batch, heads, length, dim] each; a model's
    matmul -> softmax -> matmul becomes that op in graph/attention.py) vs torch's
    scaled_dot_product_attention (flash or cuDNN kernels) in `precision`; tune_trials and tuning
    as conv_case's."""
    import tvm

    from ..driver import build
    from ..graph import GraphBuilder

    torch = _torch()
    dt = DTYPES[precision]
    shape, alpha = (batch, heads, length, dim), 1 / math.sqrt(dim)
    rng = np.random.default_rng(0)
    args = {n: rng.standard_normal(shape).astype(np.float32) for n in ("q", "k", "v")}
    b = GraphBuilder()
    graph = b.build(b.op("attention", *(b.input(n, shape, dt) for n in args), alpha=alpha))
    tune_first(graph, _graph_precision(precision), db, tune_trials, tuning)
    cg = build(graph, "cuda", db=db, precision=_graph_precision(precision))
    tv = {n: tvm.runtime.tensor(_to_np(v, dt), cg.device) for n, v in args.items()}
    out = cg.run(**tv)[0]
    t = {n: torch.from_numpy(_to_np(v, dt).astype(np.float32)).cuda().double() for n, v in args.items()}
    with torch.no_grad():
        ref = (torch.softmax(alpha * t["q"] @ t["k"].transpose(-1, -2), -1) @ t["v"]).cpu().numpy()
    err = _rel(out.astype(np.float32), ref)
    pq, pk, pv = (torch.from_numpy(v).cuda().to(getattr(torch, dt)) for v in args.values())
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ms, peer, timing = _time_against(torch, cg, tv, out, precision, lambda: sdpa(pq, pk, pv))
    return Row("attention", "x".join(map(str, shape)), precision, batch, ms, peer,
               f"torch scaled_dot_product_attention, {precision}", err, err <= TOLERANCE[precision],
               _templates(cg), timing)


# --prologue: the target's rules (build's default), or every prologue fused (before those rules)
PROLOGUES = {"rules": True, "all": lambda candidate: True}


def model_case(name: str, batch: int, precision: str, workdir: Path, db="default", compile_peer: bool = True,
               prologue: str = "rules", split_k: Union[bool, int] = True, tune_trials: int = 0,
               tuning=None, fp8_fast_accum: bool = False) -> Row:
    """A torchvision model exported in float32, built by tefuse with `precision` (its kernels tuned
    first with tune_trials: under the "rules" prologue only, which main checks), checked against onnxruntime (float32), timed against PyTorch in the
    same precision (channels_last). fp8_fast_accum: build's (the case named so)."""
    import onnx
    import tvm

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_outputs
    from .models import torch_model, export_torchvision

    torch = _torch()
    path = export_torchvision(name, batch, workdir / f"{name}_b{batch}.onnx")
    model = onnx.load(str(path))
    reused = model_calibration.cache_info().hits
    t0 = time.perf_counter()
    calibration = model_calibration(name, workdir) if precision in QUANT_PEERS else None
    calibrate_s, reused = time.perf_counter() - t0, model_calibration.cache_info().hits > reused
    t1 = time.perf_counter()
    if tune_trials:
        tune_first(import_onnx(model), precision, db, tune_trials, tuning, split_k=split_k, calibration=calibration,
                   fp8_fast_accum=fp8_fast_accum)
    tune_s, t1 = time.perf_counter() - t1, time.perf_counter()
    cg = build(import_onnx(model), "cuda", db=db, precision=precision, prologue=PROLOGUES[prologue],
               split_k=split_k, calibration=calibration, fp8_fast_accum=fp8_fast_accum)
    build_s = time.perf_counter() - t1
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype("float32")
    got = cg.run(input=x)[0]
    want = onnxruntime_outputs(str(path), {"input": x})[0].reshape(got.shape)
    scale = float(np.abs(want).max())
    err = float(np.abs(got.astype(np.float64) - want).max()) / max(scale, 1e-12)
    classes = top1(got, want, precision)
    xd = tvm.runtime.tensor(x, cg.device)
    kernels_ms = 1e3 * sum(cg.time_kernels(input=xd, number=5, repeat=3, min_repeat_ms=0))
    run_ms = time_wall(lambda: cg.run(input=xd, as_numpy=False), cg.device.sync)
    graph_ms, graph_error, _ = _tefuse_graph_ms(torch, cg, {"input": torch.from_numpy(x).cuda()}, got)
    peer_precision = QUANT_PEERS.get(precision, precision)
    tdt = getattr(torch, DTYPES[peer_precision])
    _torch_math(torch, peer_precision)
    tm = torch_model(name).cuda().to(tdt).to(memory_format=torch.channels_last).eval()
    tx = torch.from_numpy(x).cuda().to(tdt).to(memory_format=torch.channels_last)
    with torch.no_grad():
        peer_graph = time_graph(lambda: tm(tx))
    extra = {"build_s": build_s, "run_ms": run_ms, "kernels_ms": kernels_ms, "graph_ms": graph_ms,
             "top1_agreement": classes.agreement, "near_ties": classes.near_ties, "kernels": cg.num_kernels,
             "config_sources": config_sources(cg.kernels), "peer_graph_ms": peer_graph,
             "prologue": prologue, "split_k": split_k,
             "split_products": len(_split_products(cg))}
    if tune_trials:
        extra.update(tune_trials=tune_trials, tune_s=tune_s)
    if calibration is not None:  # calibrated once a run: a later row's calibration is the first's
        extra.update(calibrate_s=calibrate_s, calibration_reused=reused, calibrator=calibration.method,
                     quantized_kernels=sum(any(n.attrs.get("codes") or n.attrs.get("out_dtype") == "int32"
                                               for n in k.group.nodes) for k in cg.kernels),
                     calibration=calibration_record(calibration))
    if graph_error:
        extra["graph_error"] = graph_error
    if compile_peer:
        try:
            cm = torch.compile(tm)
            with torch.no_grad():
                extra["peer_compile_ms"] = time_graph(lambda: cm(tx), repeat=20)
        except Exception as e:  # noqa: BLE001 - torch.compile failing is the peer's problem, noted
            extra["peer_compile_error"] = str(e).splitlines()[0][:200]
    best = best_peer_ms(torch, lambda: tm(tx), peer_graph, extra)
    try:
        extra["peer_profile"] = device_kernels(torch, lambda: tm(tx))
    except Exception as e:  # noqa: BLE001 - the profiler failing is noted, the timing stands
        extra["peer_profile_error"] = str(e).splitlines()[0][:200]
    extra["profile"] = kernel_profile(cg.kernels, cg.time_kernels(input=xd, number=5, repeat=3,
                                                                  min_repeat_ms=0))  # every kernel
    extra["slowest"] = extra["profile"][:8]
    # one run as the peer's is timed: launches replayed from a CUDA graph (else the kernels' sum)
    return Row("models", name + (" fast_accum" if fp8_fast_accum else ""), precision, batch, graph_ms or kernels_ms, best,
               f"torch {peer_precision} channels_last, best of CUDA graph and torch.compile", err,
               model_ok(precision, err, classes.agreement, classes.decided), _templates(cg),
               extra)


@dataclass(frozen=True)
class Top1:
    """A build's top-1 classes against float32's over a batch. `agreement` counts every input;
    `decided` excuses near ties: inputs where the build's class scores, by float32, within the
    precision's tolerance of the input's logit spread (largest minus smallest: a common offset,
    which softmax ignores, moves neither) of float32's top class. On random weights a batch of 32
    holds such ties, which fp16's rounding breaks either way (PyTorch's fp16 as well); they say
    nothing about the build, while a class the build picks well below the top does."""
    agreement: float
    decided: float
    near_ties: int


def top1(got: np.ndarray, want: np.ndarray, precision: str) -> Top1:
    """`Top1` of logits `got` against float32's `want` (the last axis the classes, the others
    inputs)."""
    got, want = (a.reshape(-1, a.shape[-1]).astype(np.float64) for a in (got, want))
    pick, best = got.argmax(-1), want.argmax(-1)
    rows = np.arange(len(want))
    gap = want[rows, best] - want[rows, pick]
    tie = (pick != best) & (gap <= TOLERANCE[precision] * np.ptp(want, axis=-1))
    same = pick == best
    return Top1(float(same.mean()), float((same | tie).mean()), int(tie.sum()))


def model_ok(precision: str, rel_err: float, agreement: float, decided: Optional[float] = None) -> bool:
    """A float build: within its precision's error of float32 and the same top-1 on every input
    (`decided`: but near ties, `Top1`; the accuracy bench passes none, its float rows being the
    strict control of its quantized ones). A quantized one: top-1 agreement with float32 of 0.99
    or more, the quantized-inference criterion (its error against float32 is the calibration's
    quantization error, which a random-weight model makes large: the llvm int8 build of
    ResNet-50 is 0.17 from float32)."""
    if precision in QUANT_PEERS:
        return agreement >= 0.99
    return rel_err <= TOLERANCE[precision] and (agreement if decided is None else decided) >= 1.0


def calibration_record(calibration) -> dict:
    """A row's calibration as `Calibration.from_json` reads it back: the thresholds are computed on
    the bench host's CPU (llvm), whose float rounding differs between hosts, and a quantized
    kernel's workload key holds the scales they give; with them a row is rebuilt exactly, and the
    tuning records its run made can be matched to their kernels on another host."""
    return json.loads(calibration.to_json())


@functools.lru_cache(maxsize=None)
def model_calibration(name: str, workdir: Path):
    """An entropy calibration of torchvision's `name` (batch 1, float32, on llvm) over seeded
    normal inputs: the thresholds are per node name, the same at every batch size, so a run
    calibrates each model once (30-40 s of llvm runs)."""
    import onnx

    from ..calibrate import calibrate
    from ..frontend.onnx import import_onnx
    from .models import export_torchvision

    graph = import_onnx(onnx.load(str(export_torchvision(name, 1, workdir / f"{name}_b1.onnx"))))
    rng = np.random.default_rng(1)
    samples = [{"input": rng.standard_normal((1, 3, 224, 224)).astype("float32")} for _ in range(CALIBRATION_SAMPLES)]
    return calibrate(graph, samples, "entropy")


# zoo models the shipped tuning records were not made for (ResNet-50, MobileNet-V2 and ViT-B/16
# were): what a user's own model meets untuned (`zoo` suite, `--no-db`)
UNTUNED_ZOO = ("resnext50_32x4d", "wide_resnet50_2", "regnet_y_400mf", "efficientnet_b0", "efficientnet_v2_s",
               "mobilenet_v3_large", "convnext_tiny", "densenet121", "inception_v3", "googlenet",
               "shufflenet_v2_x1_0", "mnasnet1_0", "swin_t", "bert", "gpt2", "distilbert", "vit_hf")


def zoo_model_case(name: str, batch: int, precision: str, workdir: Path, db=None, compile_peer: bool = True,
                   small: bool = False, tune_minutes: float = 0.0, tuning=None, fp8_fast_accum: bool = False,
                   tune_trials: int = 0, siblings: bool = False) -> Row:
    """A model zoo entry (tefuse/bench/zoo.py: torchvision and transformers, seeded random weights)
    at `batch`, exported in float32, built by tefuse with `precision` (its kernels tuned first for
    tune_minutes, as `tefuse tune --minutes` would, or tune_trials a kernel), checked against onnxruntime (float32), timed
    against the same module in PyTorch in that precision (image models channels_last), the better
    of its CUDA graph and torch.compile, each taken in turn with tefuse's CUDA graph. int8 / fp8:
    calibrated on seeded inputs of the zoo's kinds (`zoo_calibration`), against PyTorch in fp16;
    fp8_fast_accum, siblings: build's (the case named so)."""
    import onnx

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_outputs
    from . import zoo, zoo_builders

    torch = _torch()
    entry = zoo.entry(name)
    cfg = entry.config(small)
    feeds = zoo.random_inputs(cfg, batch=batch)
    module = zoo.build_module(entry, small)
    path = zoo_builders.export_onnx(module, feeds, cfg.outputs,
                                    workdir / f"zoo_{name}_{'small' if small else 'full'}_b{batch}.onnx")
    model = onnx.load(str(path))
    options = {"calibration": zoo_calibration(name, small, workdir), "fp8_fast_accum": fp8_fast_accum} \
        if precision in QUANT_PEERS else {}
    options["siblings"] = True if siblings else None  # else build's default (the Linears)
    report = tune_first(import_onnx(model), precision, db, tune_trials, tuning, tune_minutes, **options) \
        if tune_minutes or tune_trials else None
    t0 = time.perf_counter()
    cg = build(import_onnx(model), "cuda", db=db, precision=precision, **options)
    build_s = time.perf_counter() - t0
    got = cg.run(**feeds)[0]
    want = onnxruntime_outputs(model, feeds)[0].reshape(got.shape)
    err = _rel(got, want)
    images = all(spec.kind == "image" for spec in cfg.inputs)
    classes = top1(got, want, precision) if images else None
    peer_precision = QUANT_PEERS.get(precision, precision)
    tdt = getattr(torch, DTYPES[peer_precision])
    device_feeds = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    _torch_math(torch, peer_precision)
    fmt = torch.channels_last if images else torch.contiguous_format
    tm = module.cuda().to(tdt).to(memory_format=fmt).eval()
    targs = [t.to(tdt).to(memory_format=fmt) if t.is_floating_point() else t for t in device_feeds.values()]

    def peer():
        with torch.no_grad():
            return tm(*targs)

    extra = {"build_s": build_s, "kernels": cg.num_kernels, "config_sources": config_sources(cg.kernels),
             **({"calibration": calibration_record(options["calibration"])} if "calibration" in options else {}),
             **({"top1_agreement": classes.agreement, "near_ties": classes.near_ties} if classes else {}),
             "config": "small" if small else "full", **(budget_facts(report) if report is not None else {}),
             **({"gpu_turn": True} if timing.GPU_TURN else {})}  # timed in turn with runs built alongside
    compiled = _compiled(torch, tm, targs, extra) if compile_peer else None  # compiled before the timings
    with timing.gpu_turn():
        graph_ms, graph_error, run = _tefuse_graph_ms(torch, cg, device_feeds, got)
        try:  # a module that copies host tensors in its forward (transformers' masks) cannot be captured
            graph_ms, peer_graph = alternate(run, peer, graph_ms)
        except RuntimeError as e:
            peer_graph, extra["peer_graph_error"] = None, str(e).splitlines()[0][:200]
        kernel_s = cg.time_kernels(**feeds)
        kernels_ms = 1e3 * sum(kernel_s)
        extra.update(kernels_ms=kernels_ms, graph_ms=graph_ms, peer_graph_ms=peer_graph)
        if graph_error:
            extra["graph_error"] = graph_error
        if compiled is not None:
            try:
                graph_ms, extra["peer_compile_ms"] = alternate(run, compiled, graph_ms)
                extra["graph_ms"] = graph_ms
            except Exception as e:  # noqa: BLE001 - torch.compile failing is the peer's problem, noted
                extra["peer_compile_error"] = str(e).splitlines()[0][:200]
        best = best_peer_ms(torch, peer, peer_graph, extra)
        extra["slowest"] = kernel_profile(cg.kernels, kernel_s)[:8]
        try:
            extra["peer_profile"] = device_kernels(torch, peer)
        except Exception as e:  # noqa: BLE001 - the profiler failing is noted, the timing stands
            extra["peer_profile_error"] = str(e).splitlines()[0][:200]
    # judged as a model (model_ok) where there is a class, else by its error
    ok = (model_ok(precision, err, classes.agreement, classes.decided) if classes is not None
          else err <= TOLERANCE[precision])
    return Row("zoo", zoo_case(name, fp8_fast_accum, siblings), precision, batch, graph_ms or kernels_ms, best,
               f"torch {peer_precision}, best of CUDA graph and torch.compile", err, ok, _templates(cg), extra)


def _compiled(torch, tm, targs: list, extra: dict):
    """torch.compile's module, called once so that its compilation (the CPU's minutes) is done
    before a timing turn; None, with the error in `extra`, where it fails."""
    try:
        cm = torch.compile(tm)

        def compiled():
            with torch.no_grad():
                return cm(*targs)

        compiled()
        torch.cuda.synchronize()
        return compiled
    except Exception as e:  # noqa: BLE001 - torch.compile failing is the peer's problem, noted
        extra["peer_compile_error"] = str(e).splitlines()[0][:200]
        return None


def zoo_case(name: str, fp8_fast_accum: bool = False, siblings: bool = False) -> str:
    """A zoo row's case: the model, and the build options that make it a case of its own."""
    return name + (" fast_accum" if fp8_fast_accum else "") + (" siblings" if siblings else "")


@functools.lru_cache(maxsize=None)
def zoo_calibration(name: str, small: bool, workdir: Path):
    """An entropy calibration of zoo model `name` (its small config with `small`), exported at
    batch 1 into `workdir` (float32, on llvm), over CALIBRATION_SAMPLES seeded inputs of its kinds
    (token ids in range, masks, images). The thresholds are per node name, the same at every
    batch size (as `model_calibration`'s), so each model is calibrated once and at batch 1: llvm
    runs BERT-base at about 20 s a 128-token sequence on two cores, and a batch-32 sample took
    the calibration past ten minutes."""
    import onnx

    from ..calibrate import calibrate
    from ..frontend.onnx import import_onnx
    from . import zoo, zoo_builders

    entry = zoo.entry(name)
    cfg = entry.config(small)
    samples = [zoo.random_inputs(cfg, seed=zoo.SEED + 1 + i, batch=1) for i in range(CALIBRATION_SAMPLES)]
    path = zoo_builders.export_onnx(zoo.build_module(entry, small), samples[0], cfg.outputs,
                                    Path(workdir) / f"zoo_{name}_{'small' if small else 'full'}_b1_calibration.onnx")
    return calibrate(import_onnx(onnx.load(str(path))), samples, "entropy")


def best_peer_ms(torch, peer, graph_ms: Optional[float], extra: dict) -> float:
    """The better of PyTorch's CUDA graph and torch.compile (`extra["peer_compile_ms"]`); where
    neither could be captured, PyTorch as it runs, each call launched from Python
    (`extra["peer_eager_ms"]`)."""
    peers = [v for v in (graph_ms, extra.get("peer_compile_ms")) if v]
    if not peers:
        peers = [time_wall(peer, torch.cuda.synchronize)]
        extra["peer_eager_ms"] = peers[0]
    return min(peers)


def _tefuse_graph_ms(torch, cg, feeds: dict, like: np.ndarray) -> tuple:
    """tefuse's run on torch tensors `feeds` captured into a torch CUDA graph (run(stream=) with
    out= buffers) and replayed, timed as the peers are: (ms, None, the run) once its replayed
    output is checked; (None, why, None) when capture fails."""
    tout = torch.empty(like.shape, dtype=getattr(torch, str(like.dtype)), device="cuda")

    def run():
        cg.run(feeds, out=[tout], stream=torch.cuda.current_stream())

    try:
        ms = time_graph(run)
    except Exception as e:  # noqa: BLE001 - recorded; the kernels' sum stands in
        return None, (str(e).strip().splitlines() or [type(e).__name__])[-1][:200], None
    replayed = tout.float().cpu().numpy()
    like = like.astype(np.float32)
    if not np.allclose(replayed, like, rtol=1e-3, atol=1e-3):  # the same kernels, the same numbers
        diff = float(np.abs(replayed - like).max())
        return None, f"the replayed graph's output differs from the checked run's (max {diff:.3g})", None
    return ms, None, run


def _time_against(torch, cg, tv: dict, out: np.ndarray, precision: str, peer_fn) -> tuple:
    """(tefuse's ms, the peer's ms, timing extras) for a checked build `cg` fed `tv`: tefuse timed
    as the peer is, one run captured into a CUDA graph and replayed (a split product's two
    launches included), in turn with the peer (`alternate`); the kernels' sum where capture fails."""
    kernels_ms = 1e3 * sum(cg.time_kernels(**tv))
    tdt = getattr(torch, DTYPES[precision])
    feeds = {nm: torch.from_numpy(np.ascontiguousarray(t.numpy().astype(np.float32))).cuda().to(tdt)
             for nm, t in tv.items()}
    graph_ms, graph_error, run = _tefuse_graph_ms(torch, cg, feeds, out)
    _torch_math(torch, precision)
    graph_ms, peer = alternate(run, peer_fn, graph_ms)
    extra = {"kernels_ms": kernels_ms, "graph_ms": graph_ms}
    if graph_error:
        extra["graph_error"] = graph_error
    return graph_ms or kernels_ms, peer, extra


def alternate(run, peer_fn, run_ms: Optional[float], rounds: int = 3) -> tuple:
    """(tefuse's ms, the peer's ms), each the best of `rounds` CUDA-graph timings taken in turn
    with the other's: a clock ramp or a neighbour's cache state one side meets, the other meets
    too (microsecond kernels; one timing of each had given single peers 3-4x their usual time).
    `run` None (no graph): the peer alone."""
    peer = time_graph(peer_fn)
    for _ in range(rounds - 1):
        if run is not None:
            run_ms = min(run_ms, time_graph(run))
        peer = min(peer, time_graph(peer_fn))
    return run_ms, peer


def geomean(xs) -> Optional[float]:
    xs = [x for x in xs if x and math.isfinite(x)]
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("suite", choices=["conv", "plan", "gemm", "attention", "models", "zoo"])
    p.add_argument("--precision", nargs="+", default=["fp16"], choices=[*DTYPES, *QUANT_PEERS],
                   help="int8, fp8: models and zoo suites, calibrated on seeded inputs, against PyTorch in fp16; "
                        "gemm suite, the quantized product with its epilogue against cuBLASLt's in the same type")
    p.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    p.add_argument("--shapes", type=int, nargs="*", default=None, help="indices into RESNET50_CONVS")
    p.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"], help="conv suite: tefuse's layout")
    p.add_argument("--models", nargs="+", default=None,
                   help="models: torchvision names (default resnet50 vit_b_16); zoo: zoo names (default: "
                        "UNTUNED_ZOO, models without shipped records)")
    p.add_argument("--gemm", nargs="+", default=["4096x4096x4096"], help="MxNxK")
    p.add_argument("--attention", nargs="+", default=["32x12x197x64", "1x12x197x64"], help="BxHxLxD")
    p.add_argument("--no-compile", action="store_true", help="models: skip the torch.compile peer")
    p.add_argument("--prologue", nargs="+", default=["rules"], choices=list(PROLOGUES),
                   help="models: prologue fusion by the target's rules (default), or everywhere; each is a row")
    p.add_argument("--no-split-k", action="store_true", help="conv, models: build with split_k=False")
    p.add_argument("--split-k", type=int, default=0, metavar="N",
                   help="conv, models: build with split_k=N (every tensor-core conv and Linear whose channels "
                        "allow it in N slices), to measure a count against the policy's")
    p.add_argument("--no-db", action="store_true")
    p.add_argument("--tune", type=int, default=0, metavar="TRIALS",
                   help="conv, plan, gemm, attention, models, zoo: tune each case's kernels first (TRIALS "
                        "measurements each) into the user database")
    p.add_argument("--fp8-fast-accum", action="store_true",
                   help="fp8: products summed whole in the tensor cores' accumulator (tefuse build's "
                        "--fp8-fast-accum): the gemm suite's against cuBLASLt with use_fast_accum, the models "
                        "suite's models; the cases so named")
    p.add_argument("--siblings", action="store_true",
                   help="zoo: build with sibling convs merged as well as sibling Linears (tefuse build's "
                        "--siblings: Inception's 1x1 convs one product); the cases so named. Without it, "
                        "build's default (the Linears; the convs too with $TEFUSE_HORIZONTAL)")
    p.add_argument("--untuned-only", action="store_true",
                   help="--tune: leave out the kernels the shipped logs have records for, as `tefuse tune "
                        "--untuned-only`")
    p.add_argument("--tune-minutes", type=float, default=0.0, metavar="N",
                   help="zoo: tune each (model, batch)'s kernels for N minutes first, as `tefuse tune "
                        "--minutes N` (rounds where the model's time should fall most), into the user database")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random", "grid"], help="--tune's search")
    p.add_argument("--parallel", type=int, default=None, metavar="N",
                   help="--tune: build workers (default: the CPU count), as `tefuse tune --parallel`; runs "
                        "tuning side by side on one machine share its cores")
    p.add_argument("--only", action="append", default=[], metavar="KNOB=VALUE", type=knob_assignment,
                   help="--tune: only configs with this knob value, as `tefuse tune --only`")
    p.add_argument("--gpu-turn", default=None, metavar="FILE",
                   help="zoo: time while holding an exclusive lock on FILE, so that runs started together on one "
                        "GPU build and compile side by side and time one at a time")
    p.add_argument("--workdir", default="/tmp")
    p.add_argument("--json", default=None)
    p.add_argument("--resume", action="store_true",
                   help="keep the cases --json already holds as measured (failed ones run again) and run the "
                        "rest: a sweep split over the calls of a time-limited machine")
    p.add_argument("--shard", default=None, metavar="K/N",
                   help="zoo, models: only every N-th model from the K-th (1-based): N processes, one a GPU "
                        "(CUDA_VISIBLE_DEVICES), then --merge their JSONs")
    p.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                   help="write one JSON (--json) of these shards' rows, summary and commands; runs nothing")
    p.add_argument("--graph-calls", type=int, default=1, metavar="N",
                   help="calls captured into each timed CUDA graph, tefuse's and the peers' alike (1: a "
                        "graph a call; more: microsecond kernels timed without a graph launch each)")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    if args.suite not in ("models", "zoo", "gemm") and set(args.precision) & set(QUANT_PEERS):
        p.error(f"--precision {', '.join(QUANT_PEERS)}: the models, zoo and gemm suites only")
    if args.merge is not None:
        if not args.json:
            p.error("--merge needs --json")
        try:
            merged = merge_reports([json.loads(Path(f).read_text()) for f in args.merge])
        except (OSError, ValueError) as e:
            p.error(f"--merge: {e}")
        write_json_whole(args.json, merged)
        return 0
    if args.shard is not None:
        try:
            args.shard = shard_of(args.shard)
        except ValueError as e:
            p.error(f"--shard: {e}")
    if args.tune and args.tune_minutes:
        p.error("--tune and --tune-minutes exclude each other (trials a kernel, or minutes for all)")
    if args.untuned_only and not args.tune:
        p.error("--untuned-only goes with --tune TRIALS")
    if args.parallel is not None and args.parallel < 1:
        p.error("--parallel must be at least 1")
    if args.gpu_turn is not None and args.suite != "zoo":
        p.error("--gpu-turn: the zoo suite only")
    if args.siblings and args.suite != "zoo":
        p.error("--siblings: the zoo suite only")
    if args.tune_minutes and args.suite != "zoo":
        p.error("--tune-minutes: the zoo suite only (the others take --tune TRIALS)")
    if (args.tune or args.tune_minutes) and args.no_db:
        p.error("--tune measures into the user database that the builds then read: drop --no-db")
    if args.tune and args.suite == "models" and any(pro != "rules" for pro in args.prologue):
        p.error("--tune tunes the kernels of build's own prologue rules: --prologue rules only")
    command = command_line("tefuse.bench.precision", argv)
    try:
        timing.set_graph_calls(args.graph_calls)
    except ValueError as e:  # one line and exit 2, as argparse's own errors
        p.error(f"--graph-calls: {e}")
    timing.set_gpu_turn(args.gpu_turn)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    db = None if args.no_db else "default"
    resumed = read_report(args.json) if args.resume else {}
    rows: list[Row] = measured_rows(resumed)
    earlier = list(resumed.get("commands", []))  # a resumed file keeps its own
    commands = earlier + ([command] if command not in earlier else [])
    done = {(r.suite, r.case, r.precision, r.batch) for r in rows}

    def attempt(suite: str, case: str, prec: str, batch: int, fn) -> None:
        """One case; a failure is a row of its own (ok False, the error's last line), not the end."""
        if (suite, case, prec, batch) in done:
            return
        try:
            rows.append(fn())
        except Exception as e:  # noqa: BLE001 - build errors, peer errors: recorded and reported
            msg = (str(e).strip().splitlines() or [type(e).__name__])[-1][:300]
            cause = [ln for ln in str(e.__cause__ or "").splitlines() if "error" in ln][:3]
            msg += "".join(f" | {ln.strip()[:200]}" for ln in cause)  # e.g. the device compiler's first errors
            log.error("%s %s %s b%d failed: %s", suite, case, prec, batch, msg)
            rows.append(Row(suite, case, prec, batch, math.nan, None, "", math.inf, False, [], {"error": msg}))
        print(line(rows[-1]), flush=True)
        write_json(rows, args.json, commands)

    with TuningTools(args.tuner, dict(args.only), untuned_only=args.untuned_only, parallel=args.parallel) \
            if args.tune or args.tune_minutes \
            else contextlib.nullcontext() \
            as tuning:
        run_suites(args, db, tuning, attempt)
    summary = write_json(rows, args.json, commands)
    for key, s in summary.items():
        gm = s["geomean_ratio"]
        print(f"{key}: geomean tefuse/peer {gm:.2f}x over {s['n']}" if gm else f"{key}: no ratio")
    return 0 if all(r.ok for r in rows) else 1


def run_suites(args, db, tuning, attempt) -> None:
    """Every case the arguments ask for, each through `attempt` (a row whatever happens)."""
    for prec in args.precision:
        if args.suite == "conv":
            shapes = [RESNET50_CONVS[i] for i in args.shapes] if args.shapes is not None else RESNET50_CONVS
            for b in args.batch:
                for shp in shapes:
                    attempt("conv", str(shp), prec, b, lambda: conv_case(*shp, b, prec, db, args.layout,
                                                                           _split_option(args), args.tune, tuning))
        elif args.suite == "plan":
            shapes = [RESNET50_CONVS[i] for i in args.shapes] if args.shapes is not None else RESNET50_CONVS
            for b in args.batch:
                for shp in shapes:
                    attempt("plan", str(shp), prec, b, lambda: plan_case(*shp, b, prec, args.layout, db,
                                                                           args.tune, tuning))
        elif args.suite == "attention":
            for a in args.attention:
                dims = tuple(map(int, a.split("x")))
                attempt("attention", a, prec, dims[0], lambda: attention_case(*dims, prec, db, args.tune, tuning))
        elif args.suite == "gemm":
            for g in args.gemm:
                if prec in QUANT_PEERS:
                    fast = args.fp8_fast_accum and prec == "fp8"
                    attempt("gemm", g + (" fast_accum" if fast else ""), prec, 0,
                            lambda: quant_gemm_case(*map(int, g.split("x")), prec, db, fast))
                else:
                    attempt("gemm", g, prec, 0, lambda: gemm_case(*map(int, g.split("x")), prec, db, args.tune, tuning))
        elif args.suite == "zoo":
            for name in sharded(args.models or UNTUNED_ZOO, args.shard):
                for b in args.batch:
                    fast = args.fp8_fast_accum and prec == "fp8"
                    attempt("zoo", zoo_case(name, fast, args.siblings), prec, b, lambda: zoo_model_case(
                        name, b, prec, Path(args.workdir), db, not args.no_compile, False, args.tune_minutes, tuning,
                        fast, tune_trials=args.tune, siblings=args.siblings))
        else:
            for name in sharded(args.models or ["resnet50", "vit_b_16"], args.shard):
                for b in args.batch:
                    for pro in args.prologue:
                        fast = args.fp8_fast_accum and prec == "fp8"
                        case = (name if pro == "rules" else f"{name} prologue={pro}") + (" fast_accum" if fast else "")
                        attempt("models", case, prec, b, lambda: model_case(
                            name, b, prec, Path(args.workdir), db, not args.no_compile, pro,
                            _split_option(args), args.tune, tuning, fast))


def write_json(rows: list, path: Optional[str], commands: Sequence[str] = ()) -> dict:
    """Rows and per-(suite, precision, batch) geomeans; written after every case, so a run cut
    short keeps what it measured. `commands`: the command lines that made them."""
    dicts = [{**asdict(r), "ratio": r.ratio} for r in rows]
    summary = summarize(dicts)
    if path:
        write_json_whole(path, {"commands": [c for c in commands if c], "rows": dicts, "summary": summary,
                                "timing": {"graph_calls": timing.GRAPH_CALLS}})
    return summary


def summarize(rows: list[dict]) -> dict:
    """Geomean ratio, all-ok and count per (suite, precision, batch) of JSON rows; fp8 rows with
    fast accumulation and zoo rows with siblings merged (their cases so named) apart, as precision
    fp8_fast_accum, fp16_siblings."""
    def key_of(r: dict) -> tuple:
        words = str(r["case"]).split(" ")[1:]  # the build options a zoo_case names
        fast = r["precision"] == "fp8" and "fast_accum" in words
        options = ("_fast_accum" if fast else "") + ("_siblings" if "siblings" in words else "")
        return r["suite"], r["precision"] + options, r["batch"]

    summary = {}
    for key in sorted({key_of(r) for r in rows}):
        sel = [r for r in rows if key_of(r) == key]
        summary["/".join(map(str, key))] = {"geomean_ratio": geomean(r["ratio"] for r in sel),
                                            "all_ok": all(r["ok"] for r in sel), "n": len(sel)}
    return summary


def merge_reports(reports: list[dict]) -> dict:
    """One report of several shards of one run: every row and command kept, the summary made anew.
    A case measured again in a later report (a re-run after a fix) replaces its earlier row.
    Shards timed with different graph calls are refused (ValueError)."""
    timings = {json.dumps(r.get("timing"), sort_keys=True) for r in reports}
    if len(timings) > 1:
        raise ValueError(f"the reports were timed differently: {sorted(timings)}")
    by_case = {(row["suite"], row["case"], row["precision"], row["batch"]): row
               for r in reports for row in r.get("rows", [])}
    rows = list(by_case.values())
    commands = [c for r in reports for c in r.get("commands", [])]
    return {"commands": commands, "rows": rows, "summary": summarize(rows), "timing": reports[0].get("timing")}


def read_report(path: Optional[str]) -> dict:
    """A JSON of this bench (its rows, commands, summary); empty without a file."""
    return json.loads(Path(path).read_text()) if path and Path(path).exists() else {}


def measured_rows(report: dict) -> list[Row]:
    """The rows a report of this bench holds, less failed cases (an error)."""
    names = {f.name for f in fields(Row)}
    rows = [Row(**{k: v for k, v in r.items() if k in names}) for r in report.get("rows", [])]
    return [r for r in rows if "error" not in r.extra]


def line(r: Row) -> str:
    if "error" in r.extra:
        return f"{r.suite} {r.case} {r.precision} b{r.batch}: FAILED {r.extra['error']}"
    ratio = f"{r.ratio:.2f}x" if r.ratio else "-"
    return (f"{r.suite} {r.case} {r.precision} b{r.batch}: tefuse {r.tefuse_ms:.4f} ms | {r.peer} "
            f"{r.peer_ms if r.peer_ms is None else round(r.peer_ms, 4)} ms | tefuse/peer {ratio} | "
            f"rel err {r.rel_err:.2e} {'OK' if r.ok else 'MISMATCH'} | {','.join(r.templates)}")


if __name__ == "__main__":
    raise SystemExit(main())
