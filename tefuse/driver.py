"""The driver: graph -> fused groups -> lowered, scheduled, compiled kernels -> a CompiledGraph.

It holds `build()`, the only place that ties fusion, lowering, schedule choice, the one
compile path (codegen.compile), the kernel cache and the runtime together.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextvars
import logging
import os
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import tvm
from tvm.ir.base import from_json_graph_str

from .codegen.compile import check_limits, compile_module, device_source
from .codegen.horizontal import PASS_CONFIG, Member, MergeError, grid, merge_launches
from .codegen.lower import LoweredGroup, lower_group
from .codegen.schedule import BestRecordSource, ConfigPredictor, ScheduleChoice, apply_choice, choose_schedule
from .errors import BuildError, DynamicShapeError, GraphError, UnschedulableGroup
from .fusion import FusedGroup, ProloguePolicy, fuse_graph
from .fusion.horizontal import HorizontalRule, LaunchInfo, plan_launches
from .fusion.split_groups import split_group
from .fusion.workload import structure_key, workload_key
from .gil import quick_gil_handoff
from .graph.attention import fuse_attention as form_attention
from .graph.attention_keys import pad_attention_keys
from .graph.buckets import BucketPlan, BucketsArg, bucket_plan
from .graph.dims import DimRange, concrete_shape, dim_vars, is_static, parse_range
from .graph.fold_bn import fold_batch_norm, fold_batch_norm_params
from .graph.grouped import dense_grouped_convs
from .graph.ir import Graph
from .graph.qdq import fold_constant_dequantize, quantize_products
from .graph.pool_codes import quantize_before_max_pool
from .graph.layout import auto_layout, convert_layout
from .graph.patches import patch_convs_as_products
from .graph.pixel_convs import pixel_convs_as_dense
from .graph.scales import hoist_product_scales
from .graph.siblings import LINEARS, merge_siblings
from .graph.split_k import SplitPolicy, split_k as split_reductions, splits_of
from .graph.views import clone_shared_views
from .graph.weights import nk_gemm_weights
from .graph.calibration import Calibration, insert_qdq
from .graph.precision import QUANTIZED, check_precision, convert_precision, float_precision
from .ops.value import dim_hints, dim_limits
from .options import DEFAULT, BuildOptions
from .runtime.executor import BuildTimes, CompiledGraph, variant_modules
from .runtime.kernel import CompiledKernel, SplitKernel, Variant, split_picks
from .runtime.profiles import ProfiledGraph, profiled
from .schedules import graph_policy, op_supported, prologue_policy
from .schedules.registry import TIR_PIPELINE
from .schedules.warp_memory import LOWERS_ALL_WARP_BUFFERS
from .target import TargetLike, device_caps, make_target

log = logging.getLogger(__name__)
VERBOSE = logging.INFO - 5  # per-kernel detail (`tefuse -v`); INFO is one line per stage


@dataclass
class PreparedGroup:
    """A group lowered and scheduled, ready to compile: the cheap, Python-heavy half of a build."""

    group: FusedGroup
    lowered: LoweredGroup
    choice: ScheduleChoice
    mod: tvm.IRModule
    workload: str
    seconds: float
    # compile options beyond the template's (a merged launch's: codegen/horizontal.PASS_CONFIG)
    pass_config: dict = field(default_factory=dict)


def prepare_group(group: FusedGroup, target: tvm.target.Target, db: Optional[BestRecordSource] = None,
                  choice: Optional[ScheduleChoice] = None, options: BuildOptions = DEFAULT,
                  predictor: Optional[ConfigPredictor] = None,
                  sizes: Optional[Mapping[str, int]] = None,
                  lowered: Optional[LoweredGroup] = None) -> PreparedGroup:
    """Lower (unless `lowered` is the group lowered already) and schedule one group. sizes: the
    sizes a kernel with symbolic dims is scheduled for (the dim_hints in force), under which it
    also reads the tuning records of its group at fixed sizes (codegen.schedule.choose_schedule's
    record_key)."""
    t0 = time.perf_counter()
    lowered = lowered or lower_group(group)
    mod, choice = apply_choice(lowered, target, choice or _choose(lowered, target, db, options, predictor, sizes))
    return PreparedGroup(group, lowered, choice, mod, workload_key(group), time.perf_counter() - t0)


def _choose(lowered: LoweredGroup, target: tvm.target.Target, db: Optional[BestRecordSource],
            options: BuildOptions, predictor: Optional[ConfigPredictor],
            sizes: Optional[Mapping[str, int]]) -> ScheduleChoice:
    """The config a group is scheduled with (see prepare_group's sizes)."""
    at = sizes if sizes and lowered.info.symbolic else None
    return choose_schedule(lowered, target, db, options, predictor=predictor,
                           record_key=workload_key(lowered.group, at) if at else None,
                           record_structure=structure_key(lowered.group, at) if at else None)


def compile_group(prep: PreparedGroup, target: tvm.target.Target, cache=None) -> CompiledKernel:
    """The expensive half (codegen + device compiler); safe to run on several threads at once."""
    t0 = time.perf_counter()
    group, choice, key = prep.group, prep.choice, prep.workload
    module, hit, src, library = None, False, "", None
    if cache is not None:
        if hasattr(cache, "load_entry"):  # the on-disk cache: keep the library bytes for saving
            entry = cache.load_entry(key, target, choice)
            module, library = entry if entry is not None else (None, None)
        else:
            module = cache.load(key, target, choice)
        hit = module is not None
        src = cache.load_source(key, target, choice) if hit else ""
    if module is None:
        info = prep.lowered.info
        module = compile_module(prep.mod, choice.template.compile_target(info, choice.config, target), group.name,
                                {**choice.template.pass_config(info, choice.config, target), **prep.pass_config})
        src = device_source(module)
        if cache is not None:
            cache.store(key, target, choice, module, source=src)
    return _kernel_of(prep, module, prep.seconds + time.perf_counter() - t0, hit, src, library)


def _kernel_of(prep: PreparedGroup, module: tvm.runtime.Module, seconds: float, from_cache: bool,
               source: str, library: Optional[bytes] = None) -> CompiledKernel:
    choice = prep.choice
    return CompiledKernel(prep.group, prep.lowered.params, prep.group.outputs, module, prep.mod.script(),
                          prep.workload, choice.template.name, choice.config.index, choice.source,
                          seconds, from_cache, source, library)


def build_group(group: FusedGroup, target: tvm.target.Target, db: Optional[BestRecordSource] = None,
                choice: Optional[ScheduleChoice] = None, cache=None) -> CompiledKernel:
    return compile_group(prepare_group(group, target, db, choice), target, cache)


def prepare_groups(target: tvm.target.Target, fuse: Callable[[frozenset], list[FusedGroup]],
                   db: Optional[BestRecordSource] = None, options: BuildOptions = DEFAULT,
                   predictor: Optional[ConfigPredictor] = None, jobs: Optional[int] = None,
                   sizes: Optional[Mapping[str, int]] = None) -> tuple[list[FusedGroup], list[PreparedGroup]]:
    """Fuse (`fuse(bare_anchors)`) and schedule every group, `jobs` at a time in threads (TVM's
    lowering and schedule primitives run outside the GIL: DenseNet-121's 185 groups took 13.8 s
    one after another and 8.0 s in two threads on two cores). A group that no config of its
    template can schedule whole (a batched GEMM whose reshaped epilogue keeps its accumulators
    from compacting to a thread's tile) is fused again with its anchor bare, the epilogue a
    kernel of its own (logged); an anchor that fails bare is the error. Errors are raised in the
    groups' order, as one after another would meet them. sizes: see prepare_group."""
    bare: frozenset = frozenset()
    while True:
        groups = fuse(bare)
        outcomes = _once_per_workload(
            groups, lambda g: prepare_group(g, target, db=db, options=options, predictor=predictor, sizes=sizes), jobs)
        preps, failed = [], {}
        for g, (prep, err) in zip(groups, outcomes):
            if err is None:
                preps.append(prep)
                continue
            if (not isinstance(err, UnschedulableGroup) or g.anchor is None or g.anchor.name in bare
                    or g.nodes[-1] is g.anchor):
                raise err
            failed[g.anchor.name] = (g, err)  # the rest are still tried: one more fusion for all of them
        if not failed:
            return groups, preps
        for g, e in failed.values():
            log.info("%s: %s; building %s without its epilogue", g.name, str(e).split(": ", 1)[-1], g.anchor.name)
        bare = bare | frozenset(failed)


@dataclass
class VariantPrep:
    """A group scheduled again for a size bucket: `index` of its prepared group in the build,
    `key` the bucket key (graph/buckets.py) it was scheduled for, projected on the dims it holds;
    for a split-K pair (fusion/split_groups.py), `prep` its partial sums and `total` the rest."""

    index: int
    key: tuple
    prep: PreparedGroup
    total: Optional[PreparedGroup] = None


def prepare_variants(preps: list[PreparedGroup], plan: BucketPlan, target: tvm.target.Target,
                     db: Optional[BestRecordSource] = None, options: BuildOptions = DEFAULT,
                     predictor: Optional[ConfigPredictor] = None,
                     jobs: Optional[int] = None, split: Optional[SplitPolicy] = None) -> list[VariantPrep]:
    """Each kernel whose template sizes it from the sizes (Template.varies_with_size) scheduled
    for every other bucket of the dims it holds, under the bucket's representative sizes (the
    prepared groups themselves serve the buckets that hold the ranges' opt). Where `split` (the
    graph's split-K rules) splits the group's product at those sizes and not at opt, the
    variant is the split-K pair. A bucket whose scheduling fails keeps the kernel as it is
    (logged)."""
    todo = []
    opt = plan.opt_key
    for i, p in enumerate(preps):
        if p.group.anchor is None or not p.choice.template.varies_with_size(p.lowered.info):
            continue
        dims = set(dim_vars([n.shape for n in [*p.group.inputs, *p.group.nodes]]))
        mine = plan.project(opt, dims)
        for key in dict.fromkeys(plan.project(k, dims) for k in plan.keys):
            if key != mine:
                todo.append((i, key))

    def pair(group: FusedGroup) -> Optional[tuple[FusedGroup, FusedGroup]]:
        """The group as the split-K pair its bucket's sizes call for (the dim_hints in force)."""
        if split is None or group.anchor is None:
            return None
        s = splits_of(group.anchor, split)  # (1 for a product split already)
        return split_group(group, s) if s > 1 else None

    def one(item):
        """The group scheduled for the bucket: a split-K pair's two prepared groups, the group
        alone, or None where the bucket's config is the kernel's (nothing to compile)."""
        i, key = item
        hints = plan.hints(key)
        with dim_hints(hints):
            halves = pair(preps[i].group)
            if halves is not None:
                try:
                    return tuple(prepare_group(g, target, db=db, options=options, predictor=predictor, sizes=hints)
                                 for g in halves)
                except BuildError as e:
                    log.info("%s: no split-K variant for %s (%s)", preps[i].group.name, plan.describe(key),
                             str(e).split(": ", 1)[-1])
            lowered = lower_group(preps[i].group)
            choice = _choose(lowered, target, db, options, predictor, hints)
            if _same_code_key(preps[i]) == _same_code_key(replace(preps[i], choice=choice)):
                return None
            return prepare_group(preps[i].group, target, db=db, choice=choice, options=options, sizes=hints,
                                 lowered=lowered)

    def shared(outcome: tuple, i: int, key: tuple) -> tuple:
        """An identical group's outcome for group i: a split pair's halves each take group i's
        own halves (their nodes and parameters), else as _for_group."""
        prep, err = outcome
        if err is not None or not isinstance(prep, tuple):
            return _for_group(outcome, preps[i].lowered)
        with dim_hints(plan.hints(key)):
            halves = pair(preps[i].group)
        if halves is None:
            return None, BuildError("its split differs from the identical group's")
        return tuple(_for_group((p, None), lower_group(g))[0] for p, g in zip(prep, halves)), None

    # identical groups (ResNet's repeated blocks: same workload and config) are scheduled once a
    # bucket, the others take that schedule with their own nodes (compile_groups then shares the module)
    owner = _first_with_key([(_same_code_key(preps[i]), key) for i, key in todo])
    leads = sorted(set(owner))
    scheduled = dict(zip(leads, map_in_threads(one, [todo[n] for n in leads], jobs)))
    outcomes = [scheduled[o] if o == n else shared(scheduled[o], *todo[n]) for n, o in enumerate(owner)]
    out = []
    for (i, key), (prep, err) in zip(todo, outcomes):
        if prep is None and err is None:  # the kernel's own config
            continue
        if isinstance(prep, tuple):
            out.append(VariantPrep(i, key, prep[0], prep[1]))
            continue
        if err is not None or prep.lowered.params != preps[i].lowered.params:
            why = err or "its parameters differ"
            log.info("%s: no variant for %s (%s); the kernel for %s serves it", preps[i].group.name,
                     plan.describe(key), str(why).split(": ", 1)[-1], plan.describe(opt))
            continue
        out.append(VariantPrep(i, key, prep))
    return out


def _first_with_key(keys: Sequence) -> list[int]:
    """For each item, the index of the first item with its key: identical work done once."""
    firsts: dict = {}
    return [firsts.setdefault(k, i) for i, k in enumerate(keys)]


def _for_group(outcome: tuple, base: LoweredGroup) -> tuple:
    """A group scheduled for an identical one (same workload), as `base`'s: its nodes and
    parameters (compile_groups then shares the module)."""
    prep, err = outcome
    if err is not None or prep is None:
        return outcome
    lowered = replace(prep.lowered, group=base.group, params=base.params)
    return replace(prep, group=base.group, lowered=lowered, seconds=0.0), None


def _once_per_workload(groups: list[FusedGroup], prepare: Callable[[FusedGroup], PreparedGroup],
                       jobs: Optional[int]) -> list[tuple[Any, Optional[Exception]]]:
    """map_in_threads(prepare, groups), each workload scheduled once: ResNet-50's 57 groups are 28
    workloads, and scheduling took as long as compiling. The groups that repeat one take its
    schedule with their own nodes and parameters (lowered, which is cheap), and its error. Each
    takes a copy of the scheduled module (a JSON round trip: new variables and buffers), since
    horizontal fusion may put two of them in one launch (codegen/horizontal.py), which cannot
    declare one buffer twice."""
    owner = _first_with_key([workload_key(g) for g in groups])
    leads = sorted(set(owner))
    done = dict(zip(leads, map_in_threads(prepare, [groups[i] for i in leads], jobs)))
    out = []
    for i, o in enumerate(owner):
        prep, err = done[o] if o == i else _for_group(done[o], lower_group(groups[i]))
        if o != i and prep is not None:
            prep = replace(prep, mod=_copy_module(prep.mod))
        out.append((prep, err))
    return out


def _copy_module(mod: tvm.IRModule) -> tvm.IRModule:
    """A copy of `mod` with new variables and buffers, through TVM's JSON graph. Read back by the
    FFI loader itself: `tvm.ir.load_json` first upgrades the text for files of older TVM
    versions, in Python (a parse and a dump of the whole graph, under the GIL), which took 1.7 s of
    a ResNet-50 build's 7 for text this TVM has just written."""
    return from_json_graph_str(tvm.ir.save_json(mod))


def map_in_threads(fn: Callable, items: list, jobs: Optional[int]) -> list[tuple[Any, Optional[Exception]]]:
    """[(fn(item), None) or (None, the exception it raised)] in the items' order, schedule_jobs(jobs)
    threads at once; Ctrl-C drops the items not started."""
    def one(item):
        try:
            return fn(item), None
        except Exception as e:  # noqa: BLE001 - handed back in order, raised by the caller
            return None, e

    contexts = {id(item): contextvars.copy_context() for item in items}  # the caller's (dim_hints)
    one_in_context = one
    one = lambda item: contexts[id(item)].run(one_in_context, item)  # noqa: E731

    jobs = min(len(items), schedule_jobs(jobs)) or 1
    if jobs == 1:
        return [one(item) for item in items]
    pool = cf.ThreadPoolExecutor(jobs, thread_name_prefix="tefuse-schedule")
    try:
        out = list(pool.map(one, items))
    except BaseException:  # Ctrl-C: go now, as compile_groups does
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out


MAX_DEFAULT_JOBS = 32  # each nvcc takes a few hundred MB; a 128-CPU host need not run 128 at once
# threads that schedule at once: scheduling is mostly Python under the GIL, so past a few threads
# more only queue for it (16 cores, DenseNet-121: 1 thread 11.4 s, 2 8.3 s, 4 6.5-7.3 s, 8 9.0 s,
# 16 7.8-9.0 s: benchmarks/schedule_threads.json; docs/architecture.md, "Building a network")
MAX_SCHEDULE_JOBS = 4


def _env_count(name: str, env: Optional[str], what: str) -> Optional[int]:
    """The whole number `env` ($name's value) holds, at least 1; None when unset; anything else a
    BuildError naming the variable."""
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        raise BuildError(f"{name}={env!r} is not a whole number") from None
    if n < 1:
        raise BuildError(f"{name}={env!r}: {what} must be 1 or more")
    return n


def default_jobs() -> int:
    """$TEFUSE_BUILD_JOBS, else the CPUs this process may use (at most MAX_DEFAULT_JOBS)."""
    jobs = _env_count("TEFUSE_BUILD_JOBS", os.environ.get("TEFUSE_BUILD_JOBS"), "kernels compiled at once")
    if jobs is not None:
        return jobs
    return max(1, min(usable_cpus(), MAX_DEFAULT_JOBS))


def usable_cpus() -> int:
    """The CPUs this process may run on (a taskset's, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def schedule_jobs(jobs: Optional[int] = None) -> int:
    """Threads that schedule kernels: `jobs` (default_jobs()) at most $TEFUSE_SCHEDULE_JOBS,
    else at most MAX_SCHEDULE_JOBS."""
    cap = (_env_count("TEFUSE_SCHEDULE_JOBS", os.environ.get("TEFUSE_SCHEDULE_JOBS"), "kernels scheduled at once")
           or MAX_SCHEDULE_JOBS)
    return min(jobs or default_jobs(), cap)


def _kernel_dump_dir() -> Optional[str]:
    """Where TVM's nvcc path writes every compile to the same two file names, if it does."""
    if os.environ.get("TVM_KERNEL_DUMP"):
        return os.environ["TVM_KERNEL_DUMP"]
    cfg = tvm.transform.PassContext.current().config
    return str(cfg["cuda.kernels_output_dir"]) if "cuda.kernels_output_dir" in cfg else None


# horizontal fusion's cost rule (fusion/horizontal.py): a kernel of at most this many waves of
# thread blocks (one block an SM) costs about what its launch does, so it shares a launch
HORIZONTAL_MAX_WAVES = 1.0
PARAM_BYTES = 8  # a buffer's pointer among a kernel's parameters


def merge_horizontal(preps: list[PreparedGroup], target: tvm.target.Target,
                     max_waves: Optional[float] = HORIZONTAL_MAX_WAVES) -> list[PreparedGroup]:
    """Independent kernels (one dependency level) that are launch-bound, each at most
    `max_waves` waves of thread blocks (None: any size), as one launch a merge key
    (fusion/horizontal.py says which, codegen/horizontal.py merges them); a set that does not
    merge (MergeError, or over the target's limits) stays apart. The run order becomes level by
    level where anything merges."""
    caps = device_caps(target)
    gpu = target.kind.name != "llvm"
    infos = [_launch_info(p, target, gpu) for p in preps]
    rule = HorizontalRule(None if max_waves is None or not gpu else int(max_waves * caps.sm_count),
                          caps.kernel_param_bytes // PARAM_BYTES)
    out: list[PreparedGroup] = []
    for launch in plan_launches(infos, rule):
        run = [preps[i] for i in launch]
        if len(run) == 1:
            out.extend(run)
            continue
        try:
            out.append(_merged(run, target))
        except (MergeError, BuildError) as e:
            log.log(VERBOSE, "kernels %s stay apart: %s", ", ".join(p.group.name for p in run), e)
            out.extend(run)
    if len(out) < len(preps):
        log.info("horizontal fusion: %d kernels in %d launches", len(preps), len(out))
    return out


def _launch_info(prep: PreparedGroup, target: tvm.target.Target, gpu: bool) -> LaunchInfo:
    choice, info = prep.choice, prep.lowered.info
    key, blocks = None, 0
    if choice.template.shares_launch(info, choice.config, target):
        try:
            g = grid(prep.mod["main"])
        except MergeError:
            g = None
        # tensor-core fragments (warp-scope buffers) share a launch only where the kernels'
        # pipeline lowers every such buffer (merge_launches, schedules/warp_memory.py)
        if (g is not None and (not g.warp or _lowers_all_warp_buffers(prep, target))) or not gpu:
            blocks = g.num_blocks if g else 0
            key = (choice.template.name, str(choice.template.compile_target(info, choice.config, target)),
                   repr(sorted(choice.template.pass_config(info, choice.config, target).items())),
                   ("padded",) if g is None or g.paddable else g.threads)
    return LaunchInfo(tuple(prep.group.inputs), tuple(prep.group.outputs), key, blocks,
                      len(prep.lowered.params) + len(prep.group.outputs))


def _lowers_all_warp_buffers(prep: PreparedGroup, target: tvm.target.Target) -> bool:
    choice = prep.choice
    config = choice.template.pass_config(prep.lowered.info, choice.config, target)
    return config.get(TIR_PIPELINE) in LOWERS_ALL_WARP_BUFFERS


def _merged(run: list[PreparedGroup], target: tvm.target.Target) -> PreparedGroup:
    first = run[0]
    written = {id(o) for p in run for o in p.group.outputs}
    if any(id(i) in written for p in run for i in p.group.inputs):
        raise MergeError("a kernel reads another's output")
    func = merge_launches([Member(p.mod["main"], len(p.lowered.params)) for p in run], "main",
                          all_warp_buffers_lowered=all(_lowers_all_warp_buffers(p, target) for p in run))
    mod = tvm.IRModule({"main": func})
    check_limits(mod, first.choice.template.compile_target(first.lowered.info, first.choice.config, target))
    group = FusedGroup(first.group.index, [n for p in run for n in p.group.nodes],
                       [n for p in run for n in p.group.inputs], [n for p in run for n in p.group.outputs],
                       first.group.pattern, None, [])
    lowered = replace(first.lowered, group=group, func=func, params=[n for p in run for n in p.lowered.params])
    # the members' workloads and configs: equal keys compile to equal code (the kernel cache's key)
    workload = "horizontal(" + ";".join(f"{p.workload}@{'/'.join(map(str, _same_code_key(p)[1:]))}" for p in run) + ")"
    log.log(VERBOSE, "one launch: %s", ", ".join(p.group.name for p in run))
    return PreparedGroup(group, lowered, first.choice, mod, workload, sum(p.seconds for p in run), dict(PASS_CONFIG))


def _same_code_key(prep: PreparedGroup) -> tuple:
    """Groups with equal keys compile to the same module (the kernel cache keys on the same)."""
    values = sorted((k, repr(v)) for k, v in prep.choice.config.values.items())
    return prep.workload, prep.choice.template.name, tuple(values)


def _rebind(kernel: CompiledKernel, prep: PreparedGroup) -> CompiledKernel:
    """Another group's kernel that shares `kernel`'s compiled module (same workload and config)."""
    return _kernel_of(prep, kernel.module, prep.seconds, kernel.from_cache, kernel.device_source, kernel.library)


def compile_groups(preps: list[PreparedGroup], target: tvm.target.Target, cache=None,
                   jobs: Optional[int] = None,
                   progress: Optional[Callable[[int, int], None]] = None) -> list[CompiledKernel]:
    """Compile prepared groups, `jobs` at a time, in threads; groups that would compile to the
    same code (ResNet's repeated blocks) share one module.

    Threads, not processes: TVM's passes and nvcc (a subprocess) run outside the GIL, and a
    thread needs no second TVM import nor a module round trip through disk. (NVRTC
    serialises its compiles, which is why `ensure_cuda_compiler` prefers nvcc.) Results keep
    the groups' order; when several fail, the first in that order is the error raised.
    progress(done, total) is called after each compile (from the compiling thread, in turn).
    """
    if jobs is not None and jobs < 1:
        raise BuildError(f"jobs must be at least 1, got {jobs}")
    owner = _first_with_key([_same_code_key(p) for p in preps])
    unique = [preps[i] for i in sorted(set(owner))]
    jobs = min(len(unique), jobs or default_jobs()) or 1
    dump = _kernel_dump_dir() if jobs > 1 and target.kind.name == "cuda" else None
    if dump:
        log.info("TVM's kernel dump (%s) reuses one file name per compile: compiling one at a time", dump)
        jobs = 1
    done, lock = [0], threading.Lock()

    def one(prep: PreparedGroup) -> CompiledKernel:
        kernel = compile_group(prep, target, cache)
        with lock:
            done[0] += 1
            log.log(VERBOSE, "[%d/%d] built %s (%s, %.2fs%s)", done[0], len(unique), prep.group.name,
                    kernel.template, kernel.build_seconds, ", cached" if kernel.from_cache else "")
            if progress is not None:
                progress(done[0], len(unique))
        return kernel

    if jobs == 1:
        built = {id(p): one(p) for p in unique}
    else:
        pool = cf.ThreadPoolExecutor(jobs, thread_name_prefix="tefuse-build")
        try:
            futures = [pool.submit(one, p) for p in unique]
            cf.wait(futures, return_when=cf.FIRST_EXCEPTION)
        except BaseException:  # Ctrl-C: go now; the compiles in flight cannot be stopped
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        # on an error, kernels not started yet are dropped, not compiled
        pool.shutdown(wait=True, cancel_futures=True)
        failed = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
        if failed:
            raise failed[0]
        built = {id(p): f.result() for p, f in zip(unique, futures)}
    if len(unique) < len(preps):
        log.log(VERBOSE, "%d of %d groups share a kernel with an identical group", len(preps) - len(unique),
                len(preps))
    return [built[id(p)] if owner[i] == i else _rebind(built[id(preps[owner[i]])], p)
            for i, p in enumerate(preps)]


def build_summary(kernels: list[CompiledKernel], num_ops: int, seconds: float,
                  variants: Optional[Mapping[int, Mapping[tuple, Variant]]] = None,
                  plan: Optional[BucketPlan] = None) -> str:
    """One line for a whole build: kernels, how many were compiled, shared or cached, and how
    many configs came from tuning records, from the transfer model (when any did), and from the
    templates' fallbacks; for a build with size buckets, the variants compiled beside them."""
    distinct = variant_modules(kernels, variants or {})
    buckets = ""
    if plan is not None and plan.size > 1:
        buckets = (f"; {len(distinct)} size variant{'s' if len(distinct) != 1 else ''} of {len(variants or {})} "
                   f"kernels over buckets " + "; ".join(f"{d} {', '.join(map(str, bs))}"
                                                          for d, bs in zip(plan.dims, plan.buckets)))
    modules = {id(k.module): k for k in [*kernels, *distinct]}
    cached = sum(k.from_cache for k in modules.values())
    tuned = sum(k.config_source == "tuned" for k in kernels)
    predicted = sum(k.config_source == "predicted" for k in kernels)
    parts = [f"{len(modules) - cached} compiled"]
    if cached:
        parts.append(f"{cached} from the kernel cache")
    shared = len(kernels) - len({id(k.module) for k in kernels})
    if shared:
        parts.append(f"{shared} shared with an identical kernel")
    return (f"built {len(kernels)} kernels for {num_ops} ops in {seconds:.1f}s ({', '.join(parts)}); "
            f"{tuned} tuned, {f'{predicted} predicted, ' if predicted else ''}"
            f"{len(kernels) - tuned - predicted} fallback configs{buckets}")


def prepare_graph(graph: Graph, target, *, precision: str = "fp32", layout: Optional[str] = None,
                  fold_bn: bool = False, fuse_attention: Optional[bool] = None,
                  split_k: Union[bool, int] = True, qdq: bool = True,
                  calibration: Optional[Calibration] = None, siblings: Optional[bool] = None,
                  fp8_fast_accum: bool = False, horizontal: Optional[bool] = None) -> Graph:
    """The graph `build` fuses: calibrated products behind QDQ pairs (precision int8), QDQ products
    made int8 anchors, batch-norms folded (into a conv with fold_bn; else, their statistics
    constant, into a per-channel scale and shift), precision and layout converted, weights laid out for the
    tensor cores, sibling convs and Linears merged (siblings, see build; None: the Linears, and the convs too
    with horizontal), small-grid products split (see build); float8 products
    summed in the tensor cores' accumulator (fp8_fast_accum). `tefuse tune` calls it too, so the kernels
    it tunes are the ones a build then looks up."""
    if check_precision(precision) in QUANTIZED:
        if calibration is None:
            raise GraphError(f"precision {precision} needs a calibration: tefuse.calibrate(graph, samples) "
                             f"(CLI: --calibration samples.npz), or a saved one (Calibration.from_json)")
        graph = insert_qdq(graph, calibration, precision)
        qdq = True
    elif calibration is not None:
        raise GraphError(f"a calibration applies to precision {', '.join(QUANTIZED)}, not {precision}")
    precision = float_precision(precision)
    if qdq:  # before any pass that rewrites the float products the QDQ pattern is made of
        graph = quantize_before_max_pool(quantize_products(graph, fp8_fast_accum))
    if fp8_fast_accum and not any(n.attrs.get("codes") for n in graph.nodes):
        log.warning("fp8_fast_accum: this build has no float8 product (precision %s) to sum in the tensor "
                    "cores' accumulator", precision)
    graph = fold_constant_dequantize(graph)
    if fold_bn:
        graph = fold_batch_norm(graph)
    # attention as exporters write it: scaled operands and a shared q/k/v split (graph/scales.py, views.py)
    graph = clone_shared_views(hoist_product_scales(graph))
    graph = convert_precision(graph, precision)
    tgt = make_target(target)
    policy = graph_policy(device_caps(tgt), _forced_splits(split_k))
    split = split_policy(tgt, split_k, any(not is_static(i.shape) for i in graph.inputs))
    if policy.gemm_products:  # after precision (tensor-core dtypes only), before layout: NCHW as imported
        graph = patch_convs_as_products(graph)
    graph = convert_layout(graph, auto_layout(precision, policy.channels_last) if layout is None else layout)
    graph = pixel_convs_as_dense(graph)  # after layout: a one-pixel conv's reshapes are then layout-free
    # after precision (the statistics' type) and layout (the channel axis): one multiply-add an element
    graph = fold_batch_norm_params(graph)
    if policy.dense_groups:  # after layout (NHWC convs), before the weights' OHWI: the merged convs are dense
        graph = dense_grouped_convs(graph, max_groups=policy.dense_groups, min_mn=policy.min_mn)
    # horizontal: build's options; tune's None reads them from the environment as a build does
    sibling_ops = _sibling_ops(siblings, BuildOptions.from_env().horizontal if horizontal is None else horizontal)
    if sibling_ops:  # after layout (slices of the NHWC channel axis), before the weights' OHWI / [N, K]: one
        graph = merge_siblings(graph, sibling_ops)  # wide product's weight laid out once
    if policy.nk_weights:  # tensor-core GEMMs read a Linear's weight [N, K], on Hopper a conv's too (graph/weights.py)
        graph = nk_gemm_weights(graph, convs=policy.nk_conv_weights, int8=policy.nk_int8_weights,
                                min_mn=policy.min_mn)
    if fuse_attention is not False:  # after precision: whether a template takes the op depends on its dtype
        graph = form_attention(graph, lambda geo, dtype: op_supported(tgt, "attention", geo, dtype,
                                                                      by_default=fuse_attention is None))
    if policy.gemm_products:  # scores rows of whole 16-byte vectors where attention stays three kernels
        graph = pad_attention_keys(graph)
    if split is not None:  # after layout and weights: it splits NHWC convs and [N, K] Linears
        graph = split_reductions(graph, split)
    return graph


def _sibling_ops(siblings: Optional[bool], horizontal: bool) -> tuple[str, ...]:
    """The product kinds merge_siblings merges: see build's `siblings`."""
    if siblings is None:
        return (*LINEARS, "conv2d") if horizontal else LINEARS
    return (*LINEARS, "conv2d") if siblings else ()


def split_policy(target: tvm.target.Target, split_k: Union[bool, int], symbolic: bool) -> Optional[SplitPolicy]:
    """The split-K rules for build's `split_k` (True: the target's, N: N slices, False: none), None
    where the target splits nothing. Over symbolic dims without Hopper's in-kernel cluster split,
    which a run-time M does not take (schedules/cuda/gemm/cluster.py): the graph splits there."""
    policy = graph_policy(device_caps(target), _forced_splits(split_k)).split
    return replace(policy, in_kernel=None) if policy is not None and symbolic else policy


def _forced_splits(split_k: Union[bool, int]) -> Optional[int]:
    """graph_policy's split_k for build's: None for no split, 0 for the rules, N for N slices."""
    return None if not split_k else 0 if split_k is True else int(split_k)


GraphSource = Union[Graph, Mapping[int, Graph], Callable[[int], Graph]]


def build(graph: GraphSource, target: TargetLike = "llvm", *, db: Union[BestRecordSource, str, None] = None,
          cache=None, fuse: bool = True, prologue: ProloguePolicy = True, multi_output: bool = True,
          fold_bn: bool = False, jobs: Optional[int] = None, precision: str = "fp32",
          fuse_attention: Optional[bool] = None, split_k: Union[bool, int] = True,
          layout: Optional[str] = None, progress: Optional[Callable[[int, int], None]] = None,
          batch_sizes: Optional[Sequence[int]] = None, options: Optional[BuildOptions] = None,
          qdq: bool = True, calibration: Optional[Calibration] = None,
          dynamic: Optional[Mapping[str, Union[DimRange, str]]] = None, buckets: BucketsArg = None,
          siblings: Optional[bool] = None, fp8_fast_accum: bool = False):
    """Fuse and compile a graph; returns a `CompiledGraph` ready to run.

    Batch profiles: `graph` may be {batch: Graph} (e.g. `import_onnx_profiles(model, [1, 8])`),
    or a function batch -> Graph with `batch_sizes=[1, 8]`; each is built in turn and a
    `ProfiledGraph` comes back, whose `run` picks the profile by the inputs' shapes.

    prologue: True fuses producers into an anchor's input read where the target's templates read
    them well (schedules.prologue_policy), False nowhere, a predicate of a
    `tefuse.fusion.PrologueCandidate` where it says so (lambda c: True: everywhere).
    fold_bn folds constant inference batch-norms into the preceding conv's weights first.
    fuse_attention: matmul -> softmax -> matmul as one attention kernel (graph/attention.py):
    True where the target has a template for it, False never, None (default) where a template
    that beats the three kernels takes it (`forms_by_default`: the flash template on sm_80 and
    later, fp16; not the wmma one, slower than the three tuned kernels at ViT-B/16's batch 32).
    split_k: on CUDA, a tensor-core conv whose output gives too few tiles for the GPU's SMs
    computes partial sums over channel slices, added up by a second kernel with the epilogue
    (graph/split_k.py); False keeps every conv one kernel; an int N > 1 splits every tensor-core
    conv and Linear whose channels divide into N slices of whole 16-byte chunks (to measure a
    count against the policy's). On Hopper the deep small-grid convs that the wgmma template splits
    itself (schedules/cuda/gemm/cluster.py) are left to the kernel instead, which splits them among a cluster's CTAs (its own
    config, `slices`; not affected by this option).
    db / cache: None (off, the default: builds stay hermetic), an object, or "default" for
    the user + shipped tuning logs / the on-disk kernel cache (what the CLI passes).
    jobs: kernels compiled at once (default: `default_jobs()`); 1 compiles one at a time.
    precision: fp32 (default), tf32 (float32 tensors, matrix products' operands rounded to TF32
    and multiplied on tensor cores), fp16 or bf16 (float32 accumulation, float32 interface):
    see graph/precision.py. int8: the products `calibration` (tefuse.calibrate) has thresholds
    for compute on int8 operands (graph/calibration.py, then the QDQ pass), the rest in fp16;
    fp8 the same on float8 e4m3fn operands (Hopper's fp8 tensor cores).
    layout: "NHWC" converts NCHW convs (and what lies between them) to channels-last, layout
    changes fused into neighbouring kernels (graph/layout.py); "NCHW" leaves the graph alone;
    None (default): NHWC for fp16/bf16 on CUDA (tensor cores want it), else unchanged.
    progress(done, total): called as each distinct kernel is compiled (a progress bar).
    qdq: a conv / matmul / dense between DequantizeLinears (a QDQ model) computes on int8 operands
    with int32 accumulation (float8 ones: on their codes, float32 accumulation), its dequantize scale and what follows as the epilogue (graph/qdq.py);
    False computes it in float on the dequantized values.
    options: the BuildOptions (tefuse/options.py); None reads them from the environment. With a
    db, a kernel no record covers takes the transfer cost model's pick (options.transfer,
    tune/transfer.py; config_source "predicted"), else its template's fallback.
    dynamic: {dim name: DimRange or "min:opt:max"} for a graph with symbolic dims (an input
    declared with a name, `import_onnx(..., dynamic=True)`): one build whose kernels take those
    dims at run time, in range; templates size their tiles for each range's opt.
    buckets: with dynamic=, the size buckets (graph/buckets.py) a kernel whose template sizes its
    tiles from the sizes (tensor-core GEMMs and convs) is compiled for, one variant each, and a
    run launches the variant of the buckets its sizes fall in: None, each dim's default (upper
    ends opt/8 and max, and opt where max > 4 opt: graph/buckets.default_ends); {dim: upper ends}, e.g. {"N": [1, 8, 64]}; False, one bucket a dim
    (every kernel compiled once, for opt).
    siblings: convs that read one input with one geometry, and Linears that read one input, run as
    one product of their concatenated weights, each branch a channel slice of it
    (graph/siblings.py: Inception's 1x1 convs; a transformer's query, key and value); False keeps
    each its own kernel; None (default): the Linears (measured faster), the convs too where
    options.horizontal is on.
    fp8_fast_accum: float8 products (precision fp8, a float8 QDQ model) sum their whole reduction in
    Hopper's fp8 accumulator, as cuBLASLt's fast accumulation, instead of promoting each 128-deep
    row to float32 (ops/codes.fast_accumulation): about 1.5x faster GEMMs, an error that grows
    with the depth.
    Logs one INFO line for the whole build; per-kernel lines are at level VERBOSE (15).
    """
    check_build_args(graph, target)
    if batch_sizes is not None or not isinstance(graph, Graph):
        if dynamic or buckets:
            raise BuildError("dynamic= and buckets= take one graph with symbolic dims, not batch profiles")
        kw = dict(db=db, cache=cache, fuse=fuse, prologue=prologue, multi_output=multi_output, fold_bn=fold_bn,
                  fuse_attention=fuse_attention, split_k=split_k, qdq=qdq, calibration=calibration,
                  jobs=jobs, precision=precision, layout=layout, progress=progress, options=options,
                  siblings=siblings, fp8_fast_accum=fp8_fast_accum)
        return build_profiles(_graphs_by_batch(graph, batch_sizes), target, **kw)
    ranges = graph_ranges(graph, dynamic)
    if buckets and not ranges:
        raise BuildError("buckets= cuts the ranges of dynamic= dims, and this build has none")
    plan = bucket_plan(ranges, buckets) if ranges else None
    hints, limits = {k: r.opt for k, r in ranges.items()}, {k: (r.min, r.max) for k, r in ranges.items()}
    with dim_hints(hints), dim_limits(limits):
        cg = _build_graph(graph, target, db=db, cache=cache, fuse=fuse, prologue=prologue,
                          multi_output=multi_output, fold_bn=fold_bn, jobs=jobs, precision=precision,
                          fuse_attention=fuse_attention, split_k=split_k, layout=layout, progress=progress,
                          options=options, qdq=qdq, calibration=calibration, ranges=ranges, plan=plan,
                          siblings=siblings, fp8_fast_accum=fp8_fast_accum)
    return cg


def _build_graph(graph: Graph, target, *, db, cache, fuse, prologue, multi_output, fold_bn, jobs, precision,
                 fuse_attention, split_k, layout, progress, options, qdq, calibration,
                 ranges, plan: Optional[BucketPlan] = None, siblings: Optional[bool] = None,
                 fp8_fast_accum: bool = False) -> CompiledGraph:
    tgt = make_target(target)
    options = BuildOptions.from_env() if options is None else options
    t_graph = time.perf_counter()
    graph = prepare_graph(graph, tgt, precision=precision, layout=layout, fold_bn=fold_bn,
                          fuse_attention=fuse_attention, split_k=split_k, qdq=qdq, calibration=calibration,
                          siblings=siblings, fp8_fast_accum=fp8_fast_accum, horizontal=options.horizontal)
    t_graph = time.perf_counter() - t_graph
    if db == "default":
        from .tune.database import default_database
        db = default_database()
    predictor = _transfer_predictor(db, options)
    if cache == "default":
        from .codegen.cache import default_cache
        cache = default_cache()
    with quick_gil_handoff():  # the threads below call TVM thousands of times (gil.py)
        t0 = time.perf_counter()
        groups, preps = prepare_groups(tgt, lambda bare: fuse_graph(
            graph, fuse=fuse, prologue=prologue_policy(tgt, prologue), multi_output=multi_output, bare_anchors=bare),
            db, options, predictor, jobs, sizes=plan.hints(plan.opt_key) if plan else None)
        if options.horizontal:
            preps = merge_horizontal(preps, tgt, options.horizontal_waves)
        extra: list[VariantPrep] = []
        if plan and plan.size > 1:
            extra = prepare_variants(preps, plan, tgt, db, options, predictor, jobs, split_policy(tgt, split_k, True))
        t_compile = time.perf_counter()
        # the kernels and their size variants in one compile, after all scheduling: on 16 cores
        # ResNet-50's variants took 9.3 s to schedule beside the kernels' compiles, 2.2-3.8 s alone
        totals = [v.total for v in extra if v.total is not None]
        every = compile_groups(preps + [v.prep for v in extra] + totals, tgt, cache=cache, jobs=jobs,
                               progress=progress)
        kernels, compiled = every[:len(preps)], every[len(preps):]
        variants = bucket_variants(kernels, extra, compiled, plan) if extra else {}
    t_end = time.perf_counter()
    log.info("%s", build_summary(kernels, sum(len(g.nodes) for g in groups), t_end - t0, variants, plan))
    cg = CompiledGraph(graph, tgt, kernels, dim_ranges=ranges, variants=variants, buckets=plan)
    cg.calibration = calibration
    modules = {id(k.module): k for k in every}
    cg.build_times = BuildTimes(t_graph, t_compile - t0, t_end - t_compile, len(kernels),
                                sum(not k.from_cache for k in modules.values()))
    return cg


def bucket_variants(kernels: list[CompiledKernel], extra: list[VariantPrep], compiled: list[CompiledKernel],
                    plan: BucketPlan) -> dict[int, dict[tuple, Variant]]:
    """{kernel index: {bucket key: its variant}} over every key of the plan, for the variants
    whose code differs from the kernel's (a bucket whose config is the kernel's own shares its
    module, compile_groups' same-code rule, and needs no entry). `compiled`: the variants'
    kernels in `extra`'s order, then the split pairs' totals in theirs."""
    out: dict[int, dict[tuple, Variant]] = {}
    totals = iter(compiled[len(extra):])
    for v, k in zip(extra, compiled):
        base = kernels[v.index]
        run: Variant = k
        if v.total is not None:
            total = next(totals)
            run = SplitKernel(base.group, k, total, split_picks(base.params, base.outputs, k, total),
                              _scratch_shape(k.outputs[0], plan, v.key))
        elif k.module is base.module:
            continue
        dims = set(dim_vars([n.shape for n in [*base.group.inputs, *base.group.nodes]]))
        for key in plan.keys:
            if plan.project(key, dims) == v.key:
                out.setdefault(v.index, {})[key] = run
    return out


def _scratch_shape(partials, plan: BucketPlan, key: tuple) -> tuple[int, ...]:
    """A split pair's partial sums at the largest sizes its buckets hold (`key`, projected: a
    dim at its opt bucket there is one the kernel does not hold)."""
    return concrete_shape(partials.shape, plan.highs(key))


def _transfer_predictor(db, options: BuildOptions) -> Optional[ConfigPredictor]:
    """The transfer cost model over the build's tuning database (its records() and, for the
    default database, the shipped trials): None without one or with options.transfer off, so
    hermetic builds keep their fallbacks."""
    if db is None or not options.transfer or not hasattr(db, "records"):
        return None
    from .tune.transfer import transfer_predictor

    return transfer_predictor(db, getattr(db, "training_logs", ()))


def graph_ranges(graph: Graph, dynamic: Optional[Mapping[str, Union[DimRange, str]]]) -> dict[str, DimRange]:
    """The range of each symbolic dim of the graph's inputs, from `dynamic`; a dim without a
    range, or a range for a dim no input has, is refused in one line."""
    names = list(dim_vars([i.shape for i in graph.inputs]))
    given = {k: v if isinstance(v, DimRange) else parse_range(str(v)) for k, v in (dynamic or {}).items()}
    unknown = sorted(set(given) - set(names))
    if unknown:
        have = f"its symbolic dims are {', '.join(names)}" if names else "it has no symbolic dims"
        raise DynamicShapeError(f"dynamic names dim {unknown[0]!r}, which no graph input has; {have}")
    missing = [k for k in names if k not in given]
    if missing:
        where = next(i for i in graph.inputs if missing[0] in dim_vars([i.shape]))
        raise DynamicShapeError(f"input {where.name!r} ({where.type_str()}): dim {missing[0]!r} has no range; "
                                f"build with --dynamic {missing[0]}=min:opt:max (dynamic={{{missing[0]!r}: "
                                f"'1:8:32'}}) or fix its size with --shape")
    return {k: given[k] for k in names}


def check_build_args(graph, target) -> None:
    """build()'s graph and target of the wrong kind, refused in one line before any work."""
    if not isinstance(graph, (Graph, Mapping)) and not callable(graph):
        hint = "; for an ONNX file, tefuse.import_onnx(path) first" if isinstance(graph, (str, os.PathLike)) else ""
        raise BuildError(f"build: expected a tefuse Graph (GraphBuilder.build, tefuse.import_onnx), a "
                         f"{{batch: Graph}} dict or a function batch -> Graph, got {type(graph).__name__} "
                         f"{graph!r:.60}{hint}")
    if target is None:
        raise BuildError("build: target is None; pass 'llvm', 'cuda', 'cuda:sm_80', 'rocm' or a tvm Target")


def _graphs_by_batch(graph: GraphSource, batch_sizes: Optional[Sequence[int]]) -> dict[int, Graph]:
    if isinstance(graph, Mapping):
        if batch_sizes is not None and sorted(batch_sizes) != sorted(graph):
            raise BuildError(f"batch_sizes {list(batch_sizes)} differ from the graphs' batch sizes {sorted(graph)}")
        graphs = dict(graph)
    elif callable(graph) and not isinstance(graph, Graph):
        if not batch_sizes:
            raise BuildError("a function batch -> Graph needs batch_sizes, e.g. batch_sizes=[1, 8]")
        graphs = {b: graph(b) for b in batch_sizes}
    else:
        raise BuildError("batch_sizes needs a graph per batch size: pass {batch: Graph} (e.g. "
                         "tefuse.import_onnx_profiles(model, [1, 8])) or a function batch -> Graph")
    bad = [b for b in graphs if isinstance(b, bool) or not isinstance(b, int) or b < 1]
    if bad or not graphs:
        raise BuildError(f"batch sizes must be positive integers, got {bad or 'none'}")
    wrong = [b for b, g in graphs.items() if not isinstance(g, Graph)]
    if wrong:
        raise BuildError(f"batch {wrong[0]}: expected a Graph, got {type(graphs[wrong[0]]).__name__}")
    return graphs


def build_profiles(graphs: Mapping[int, Graph], target: TargetLike = "llvm", **build_kw) -> ProfiledGraph:
    """One CompiledGraph per batch size ({batch: Graph}), built in turn into a ProfiledGraph."""
    compiled = {}
    for k, b in enumerate(sorted(graphs), 1):
        log.info("batch profile %d (%d of %d)", b, k, len(graphs))
        compiled[b] = build(graphs[b], target, **build_kw)
    return profiled(compiled)
