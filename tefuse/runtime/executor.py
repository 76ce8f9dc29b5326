"""Executes a compiled graph: kernels in order over planned buffers.

Parameters (constants) are uploaded once; intermediate buffers are reused once their last
reader has run; inputs may be numpy arrays or any DLPack tensor (torch, cupy), taken
without a copy when already on the device, and outputs come back as the inputs' kind
(torch in, torch out), as numpy arrays, or in buffers of the caller's (`out=`).
Low-precision values (float8, int4... see graph/lowbit.py) come and go as ml_dtypes numpy arrays;
device tensors of them hold their one-byte storage.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import tvm

from .kernel import CompiledKernel, SplitKernel, Variant, variant_identity
from ..errors import DynamicShapeError, TefuseError
from ..graph.buckets import BucketKey, BucketPlan
from ..graph.dims import DimRange, bind_dims, concrete_shape, declared_shape, is_static, ranges_max
from ..graph.ir import CONST, INPUT, Graph, Node
from ..graph.lowbit import from_storage, logical_dtype, to_storage
from ..target import device_for, has_gpu

log = logging.getLogger(__name__)
SIZED_KEPT = 64  # bindings of a dynamic graph's dims whose argument lists a buffer set keeps


def to_device(x: Any, dev) -> tvm.runtime.Tensor:
    """A tensor on `dev`: DLPack tensors already there (torch, cupy) are used without a copy;
    numpy arrays in a non-native byte order are converted to the native one."""
    if isinstance(x, tvm.runtime.Tensor):
        return x if x.device == dev else x.copyto(dev)
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        try:
            t = tvm.runtime.from_dlpack(x)
        except (RuntimeError, BufferError) as e:  # TVM takes only 64-byte aligned data (a sliced tensor isn't)
            if x.__dlpack_device__()[0] != 1:  # not host memory: no copy we can make here
                raise TefuseError(f"cannot use a {type(x).__name__} input in place: "
                                  f"{str(e).strip().splitlines()[-1]}; pass a contiguous copy "
                                  "(e.g. tensor.clone())") from None
            return tvm.runtime.tensor(np.asarray(np.from_dlpack(x), order="C"), dev)  # 0-d stays 0-d
        if t.device == dev:
            return t
        return tvm.runtime.tensor(t.numpy(), dev)
    a = np.asarray(x, order="C")  # keeps 0-d arrays 0-d
    if not a.dtype.isnative:  # e.g. '>f4' read from a big-endian file; TVM knows native order only
        a = a.astype(a.dtype.newbyteorder("="))
    return tvm.runtime.tensor(a, dev)


def _framework(x: Any):
    """The module whose `from_dlpack` makes tensors of x's kind (torch, cupy...), or None for
    numpy arrays, TVM tensors and anything whose package has no from_dlpack."""
    if isinstance(x, (np.ndarray, np.generic, tvm.runtime.Tensor)) or not hasattr(x, "__dlpack__"):
        return None
    mod = sys.modules.get(type(x).__module__.split(".")[0])
    return mod if callable(getattr(mod, "from_dlpack", None)) else None


def _in_place(buf: Any, dev) -> Optional[tvm.runtime.Tensor]:
    """A TVM view of an `out=` buffer on `dev` (no copy), or None when TVM cannot take it as it
    is (not 64-byte aligned, not contiguous, on another device)."""
    if isinstance(buf, tvm.runtime.Tensor):
        return buf if buf.device == dev else None
    if not hasattr(buf, "__dlpack__"):
        return None
    try:
        t = tvm.runtime.from_dlpack(buf)
    except (RuntimeError, BufferError, TypeError, ValueError):
        return None
    return t if t.device == dev else None


@dataclass
class BufferSet:
    """One run's intermediate and output buffers and the kernels' argument lists bound to them:
    a run checks one out, so runs on several threads never share a buffer.

    launches: per kernel (kernel, argv, holes), see CompiledGraph.launch_list; out_uses: graph
    output slot -> the (launch, position) pairs that pass it; version: the graph's parameter
    version the argument lists hold; lock: held by the run using this set."""

    slots: list
    launches: list
    out_uses: dict
    kernels: list
    version: int
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # a dynamic graph's argument lists with its buffers viewed at one binding of its dims, by
    # that binding: a run at sizes seen before binds nothing again
    sized: dict = field(default_factory=dict, repr=False)
    # the split-K variants' partial sums (runtime/kernel.SplitKernel): one buffer, each variant's
    # a view of it (a run's kernels run one after another), None without such variants
    scratch: Optional[tvm.runtime.Tensor] = None


@dataclass(frozen=True)
class BuildTimes:
    """Where a build's seconds went: the graph passes (precision, layout, weights), fusion and
    scheduling (Python and TVM's schedule primitives, in threads; a dynamic build's size variants
    too), and code generation with the device compiler (in parallel; the variants too), with how
    many kernels were compiled."""

    graph_s: float
    schedule_s: float
    compile_s: float
    kernels: int
    compiled: int  # distinct modules compiled (the rest shared one, or came from the kernel cache)


class CompiledGraph:
    """A fused, compiled graph bound to a target; call `run` as often as needed, from any
    number of threads (each run uses a set of buffers of its own, see BufferSet)."""

    def __init__(self, graph: Graph, target, kernels: list[CompiledKernel], device_index: int = 0,
                 dim_ranges: Optional[Mapping[str, DimRange]] = None,
                 variants: Optional[Mapping[int, Mapping[BucketKey, Variant]]] = None,
                 buckets: Optional[BucketPlan] = None):
        self.graph = graph
        # symbolic dims (graph/dims.py): each input's declared shape, a dim's name where it is
        # not fixed; buffers are planned for each range's max and viewed at a run's sizes
        self.dim_ranges: dict[str, DimRange] = dict(dim_ranges or {})
        # size buckets (graph/buckets.py): {kernel index: {bucket key: the variant compiled for
        # those buckets}}; a run launches, per kernel, its variant for the run's buckets, else
        # the kernel itself. Variants take the same parameters as their kernel (a split-K pair,
        # runtime/kernel.SplitKernel, its scratch after them).
        self.buckets = buckets
        self.variants: dict[int, dict[BucketKey, Variant]] = {i: dict(v) for i, v in (variants or {}).items()}
        if self.variants and buckets is None:
            raise TefuseError("kernel variants need the size buckets they were compiled for")
        self._by_bucket: dict[BucketKey, tuple] = {}
        self._specs = {i.name: declared_shape(i.shape) for i in graph.inputs}
        self.dynamic = any(not is_static(n.shape) for n in graph.nodes)
        self.target = target
        self.kernels = kernels  # in run order; replace the list rather than its items
        self.build_times: Optional[BuildTimes] = None  # set by tefuse.build
        # the int8 calibration its quantized products were built with (saved with the artefact)
        self.calibration = None
        self.device = device_for(target, device_index)
        self._params: dict[Node, tvm.runtime.Tensor] = {}  # nodes hash by identity (eq=False)
        self._lock = threading.Lock()  # guards the pools below and _params
        self._free: list[BufferSet] = []  # buffer sets no run holds, the last returned on top
        self._stream_set: Optional[BufferSet] = None  # the set every run on a caller's stream shares
        self._version = 0  # bumped by set_param: buffer sets bound to older constants are dropped
        self._device_ok = False  # set once a run found the target's device
        self._plan = self._plan_buffers()

    # -- inspection ----------------------------------------------------------------------
    @property
    def num_kernels(self) -> int:
        """Kernels a run launches (a kernel with size variants counts once)."""
        return len(self.kernels)

    @property
    def num_variants(self) -> int:
        """Size variants compiled beside the kernels: distinct modules no kernel runs itself."""
        return len(variant_modules(self.kernels, self.variants))

    def kernels_for(self, sizes: Mapping[str, int]) -> list[CompiledKernel]:
        """The kernels a run at `sizes` (a binding of the dims) launches, in order: each kernel's
        variant for the buckets the sizes fall in, else the kernel itself; one list a bucket key,
        made on first use."""
        if not self.variants or not sizes:
            return self.kernels
        key, kernels = self.buckets.key_of(sizes), self.kernels
        got = self._by_bucket.get(key)
        if got is None or got[0] is not kernels:  # (made for a kernel list since replaced)
            got = (kernels, [self.variants.get(i, {}).get(key, k) for i, k in enumerate(kernels)])
            self._by_bucket[key] = got
        return got[1]

    def source(self, kind: Optional[str] = None) -> str:
        """Every kernel's source in run order, each size variant after its kernel."""
        kind = kind or {"cuda": "cuda", "rocm": "asm"}.get(self.target.kind.name, "tir")
        parts = []
        for i, k in enumerate(self.kernels):
            parts.append(f"// ---- {k.group.name} ----\n{k.source(kind)}")
            for where, v in self._variants_of(i):
                parts.append(f"// ---- {k.group.name} [{where}] ----\n{v.source(kind)}")
        return "\n".join(parts)

    def _variants_of(self, i: int) -> list[tuple[str, Variant]]:
        """(the buckets it serves, described; variant) for each distinct variant of kernel i."""
        keys: dict[tuple, list] = {}
        mods: dict[tuple, Variant] = {}
        for key, v in self.variants.get(i, {}).items():
            keys.setdefault(variant_identity(v), []).append(key)
            mods.setdefault(variant_identity(v), v)
        return [(" ".join(self.buckets.describe(k) for k in keys[m]), v) for m, v in mods.items()]

    def summary(self) -> str:
        ops = sum(len(k.group.nodes) for k in self.kernels)
        extra = f" (+{self.num_variants} size variants)" if self.variants else ""
        lines = [f"{len(self.kernels)} kernels{extra} for {ops} ops on {self.target.kind.name}"]
        for i, k in enumerate(self.kernels):
            lines.append(f"  {k.group.describe()}  [{k.template} #{k.config_index}, {k.config_source}]")
            for where, v in self._variants_of(i):
                lines.append(f"    at {where}: [{v.template} #{v.config_index}, {v.config_source}]")
        return "\n".join(lines)

    # -- memory planning ------------------------------------------------------------------
    def planned_shape(self, n: Node) -> tuple[int, ...]:
        """The shape a value's buffer is allocated for: its own, symbolic dims at their range's max."""
        return n.shape if is_static(n.shape) else concrete_shape(n.shape, ranges_max(self.dim_ranges))

    def _plan_buffers(self) -> dict[Node, int]:
        """Node -> buffer slot, reusing slots whose value is dead (same shape and dtype); a
        symbolic shape is planned at its dims' range maxima (the largest size a run may bind)."""
        last_use: dict[Node, int] = {}
        for step, k in enumerate(self.kernels):
            for p in k.params:
                last_use[p] = step
        for o in self.graph.outputs:
            last_use[o] = len(self.kernels)
        self._slots: list[tuple[tuple, str]] = []
        free: dict[tuple, list[int]] = {}
        plan: dict[Node, int] = {}
        for step, k in enumerate(self.kernels):
            for o in k.outputs:
                key = (self.planned_shape(o), o.dtype)
                if free.get(key) and o not in self.graph.outputs:
                    plan[o] = free[key].pop()
                else:
                    plan[o] = len(self._slots)
                    self._slots.append(key)
            for p in dict.fromkeys(k.params):
                if p.op not in (INPUT, CONST) and last_use.get(p) == step and p in plan:
                    free.setdefault((self.planned_shape(p), p.dtype), []).append(plan[p])
        return plan

    def dim_sizes(self, inputs: Mapping[str, Any], partial: bool = False) -> dict[str, int]:
        """{dim name: size} that these inputs (name -> array) bind, checked as a run checks them;
        {} for a graph of fixed shapes. partial: inputs may be missing (their dims stay unbound)."""
        if not self.dynamic:
            return {}
        specs = {k: v for k, v in self._specs.items() if k in inputs} if partial else self._specs
        return bind_dims(specs, {k: tuple(np.shape(v)) for k, v in inputs.items()}, self.dim_ranges)

    def memory(self) -> dict[str, int]:
        """Device bytes: "buffers", one run's intermediates and outputs as planned (a symbolic
        dim at its range's max) with the split-K variants' scratch, and "params", the constants uploaded so far (once per graph,
        whatever sizes it runs at)."""
        buffers = sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in self._slots)
        buffers += 4 * self._scratch_elements()
        with self._lock:
            params = sum(int(np.prod(t.shape)) * np.dtype(str(t.dtype)).itemsize for t in self._params.values())
        return {"buffers": buffers, "params": params}

    def _scratch_elements(self) -> int:
        """float32 elements of the largest split-K variant's partial sums (0: none)."""
        return max((int(np.prod(v.scratch_shape)) for per_key in self.variants.values() for v in per_key.values()
                    if isinstance(v, SplitKernel)), default=0)

    def _param(self, n: Node) -> tvm.runtime.Tensor:
        t = self._params.get(n)
        if t is None:
            t = tvm.runtime.tensor(np.asarray(n.value, order="C"), self.device)
            with self._lock:
                t = self._params.setdefault(n, t)
        return t

    def set_param(self, name: str, value: Any) -> None:
        """Replace a constant's value (same shape/dtype) without rebuilding."""
        n = self.graph.node(name)
        if n.op != CONST:
            raise TefuseError(f"{name!r} is not a constant of the graph")
        arr = np.asarray(value, dtype=n.dtype)
        if arr.shape != n.shape:
            raise TefuseError(f"parameter {name!r}: expected shape {n.shape}, got {arr.shape}")
        if arr.size == 1 and any(n in k.group.inputs and n not in k.params for k in self.kernels):
            raise TefuseError(f"parameter {name!r} is a scalar folded into the kernels; rebuild to change it")
        with self._lock:
            n.value = arr
            self._params.pop(n, None)
            self._version += 1  # the buffer sets' argument lists hold the old tensor
            self._free.clear()
            self._stream_set = None

    # -- execution ------------------------------------------------------------------------
    def _given(self, args: Sequence[Any], kwargs: dict) -> dict[str, Any]:
        """Input name -> value from positions, one {name: value} dict (ONNX Runtime's style) and
        keywords; an input given twice (by position and by name) is refused."""
        ins = [i.name for i in self.graph.inputs]
        if len(args) == 1 and isinstance(args[0], Mapping):
            given, by = dict(args[0]), "in the dict"
            for k in given:
                if not isinstance(k, str):
                    raise TefuseError(f"input dict keys must be input names, got {k!r}; inputs are {ins}")
        else:
            for a in args:
                if isinstance(a, Mapping):
                    raise TefuseError("pass inputs either as one {name: value} dict or by position, not both")
            if len(args) > len(ins):
                raise TefuseError(f"graph takes {len(ins)} inputs ({ins}), got {len(args)}")
            given, by = dict(zip(ins, args)), "by position"
        for k, v in kwargs.items():
            if k in given:
                raise TefuseError(f"input {k!r} given twice: {by} and by name")
            given[k] = v
        unknown = [k for k in given if k not in ins]
        if unknown:
            raise TefuseError(f"unknown input{'s' if len(unknown) > 1 else ''} "
                              f"{', '.join(map(repr, unknown))}; inputs are {ins}")
        return given

    def _check_device(self) -> None:
        """Once: the device exists (a graph built for cuda on a machine without a GPU says so)."""
        if self._device_ok:
            return
        kind = self.target.kind.name
        if kind != "llvm" and not has_gpu(kind):
            raise TefuseError(f"this graph was compiled for {kind} and there is no {kind} device here; "
                              f"its code can still be read: source({kind!r})")
        self._device_ok = True

    def bind_inputs(self, args: Sequence[Any], kwargs: dict) -> dict[Node, tvm.runtime.Tensor]:
        return self._bind(args, kwargs)[0]

    def _bind(self, args: Sequence[Any], kwargs: dict) -> tuple[dict[Node, tvm.runtime.Tensor], dict[str, int]]:
        """The inputs on the device and the size of each symbolic dim they bind (checked once,
        against each other and the ranges: one DynamicShapeError line)."""
        self._check_device()
        given = self._given(args, kwargs)
        out = {}
        for i in self.graph.inputs:
            if i.name not in given:
                raise TefuseError(f"missing input {i.name!r} ({_type_str(i)})")
            if given[i.name] is None:
                raise TefuseError(f"input {i.name!r}: got None, expected an array ({_type_str(i)})")
            v = given[i.name]
            kind = getattr(getattr(v, "dtype", None), "kind", None)
            if isinstance(v, (np.ndarray, np.generic, list, tuple)) and _not_numbers(
                    v.dtype if kind is not None else np.asarray(v).dtype):
                raise TefuseError(f"input {i.name!r}: expected {_type_str(i)}, got an array of "
                                  f"{np.asarray(v).dtype} (strings or objects)")
            logical = logical_dtype(i)
            if logical != i.dtype and isinstance(v, (np.ndarray, np.generic, list, tuple)):
                a = np.asarray(v)  # a low-precision input: numpy holds it as ml_dtypes' type
                if str(a.dtype) != logical or (a.shape != i.shape and is_static(i.shape)):
                    raise TefuseError(f"input {i.name!r}: expected {_type_str(i)}, got {a.dtype}"
                                      f"[{','.join(map(str, a.shape))}]")
                v = to_storage(a)
            try:
                t = to_device(v, self.device)
            except (ValueError, TypeError) as e:
                raise TefuseError(f"input {i.name!r}: expected {_type_str(i)}, got {type(v).__name__} "
                                  f"({str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__})") from None
            if (tuple(t.shape) != i.shape and is_static(i.shape)) or str(t.dtype) != i.dtype:
                held = f" (device tensors of {logical} values are passed in their {i.dtype} storage)" \
                    if logical != i.dtype else ""
                raise TefuseError(f"input {i.name!r}: expected {_type_str(i)}, got "
                                  f"{t.dtype}[{','.join(map(str, t.shape))}]{held}")
            out[i] = t
        if not self.dynamic:
            return out, {}
        bound = bind_dims(self._specs, {i.name: tuple(t.shape) for i, t in out.items()}, self.dim_ranges)
        return out, bound

    def _new_buffer_set(self) -> BufferSet:
        """Buffers for one run and, per kernel, the kernel, its arguments with constants and
        buffers bound once, and the (position, input node) holes each run fills. Why: the Python
        work per kernel is what a small network's run time is made of (binding once took a run of
        MobileNet-V2's 54 kernels from 1.38 to 0.48 ms on the H100). out_uses: graph output slot -> the (launch, position) pairs that use it,
        so that a run can write an output into a buffer of the caller's (`out=`)."""
        version, kernels = self._version, self.kernels
        slots = [tvm.runtime.empty(shape, dtype, self.device) for shape, dtype in self._slots]
        out_slots = {self._plan[o] for o in self.graph.outputs if o.op not in (INPUT, CONST)}
        launches, uses = [], {s: [] for s in out_slots}
        for li, k in enumerate(kernels):
            nodes = [*k.params, *k.outputs]
            argv: list = [None if p.op == INPUT else self._param(p) if p.op == CONST
                          else slots[self._plan[p]] for p in nodes]
            holes = [(i, p) for i, p in enumerate(k.params) if p.op == INPUT]
            for pos, n in enumerate(nodes):
                if n.op not in (INPUT, CONST) and self._plan.get(n) in out_slots:
                    uses[self._plan[n]].append((li, pos))
            launches.append((k, argv, holes))
        # allocated with the buffers: a run captured into a CUDA graph may allocate nothing
        n = self._scratch_elements()
        scratch = tvm.runtime.empty((n,), "float32", self.device) if n else None
        return BufferSet(slots, launches, uses, kernels, version, scratch=scratch)

    def _current(self, bs: Optional[BufferSet]) -> bool:
        return bs is not None and bs.version == self._version and bs.kernels is self.kernels

    @contextlib.contextmanager
    def buffer_set(self, stream: Optional[int] = None):
        """A set of buffers for one run, held until the block ends. Without a stream, one no
        other run holds (from the pool, or a new one when all are in use); the pool keeps
        every set made, so it grows to the most runs at once and no further. On a caller's
        stream (any stream), the one set that every stream run shares, its runs serialised: a
        CUDA graph captured on one stream after a warm-up run on another keeps pointing at the
        buffers the warm-up made (nothing may be allocated while a stream captures). Runs on two
        streams at once are ordered on the device by the caller, as for any shared buffers."""
        with self._lock:
            bs = self._stream_set if stream is not None else (self._free.pop() if self._free else None)
        if not self._current(bs):
            fresh = self._new_buffer_set()
            if stream is None:
                bs = fresh
            else:
                with self._lock:  # another thread may have made the stream set meanwhile
                    if not self._current(self._stream_set):
                        self._stream_set = fresh
                    bs = self._stream_set
        if stream is not None:
            with bs.lock:
                yield bs
            return
        try:
            yield bs
        finally:
            with self._lock:
                if self._current(bs):
                    self._free.append(bs)

    def run(self, *args, out: Union[Sequence[Any], Mapping[str, Any], None] = None,
            as_numpy: Optional[bool] = None, stream: Any = None, **kwargs) -> list:
        """Run on inputs given by position, by name, or as one {name: value} dict (ONNX
        Runtime's style); returns the graph outputs in order.

        Inputs may be numpy arrays or any DLPack tensor (torch, cupy, TVM): one already on
        this graph's device is used without a copy. What comes back:

        - out=[buffers] (or {name: buffer}): the outputs are written into these (numpy
          arrays, torch tensors, TVM tensors of the right shape and dtype; written in place
          when TVM can use the memory as it is, else copied in) and the buffers are returned;
        - as_numpy=True: numpy arrays (copied to the host);
        - as_numpy=False: device tensors owned by this graph: the next run overwrites them
          (copy them, or read them through DLPack, before running again);
        - by default, tensors of the inputs' framework when the inputs are torch (or cupy...)
          tensors: new ones each run, on this graph's device, handed over through DLPack
          without a copy; numpy arrays otherwise.

        stream=: the kernels launch on this stream (a raw cudaStream_t/hipStream_t as an int,
        or an object with `.cuda_stream`, such as torch.cuda.Stream) instead of the device's
        current one, so they order with the caller's work on it (and can be captured into the
        caller's CUDA graph, with out= device tensors, as capture allows no allocation). Results
        that must be copied (numpy, out= buffers TVM cannot use in place) wait for the stream.

        Safe from several threads at once: each run uses buffers no other run holds (see
        buffer_set), except runs given a stream= (any stream), which share one set and take
        turns. Device tensors returned with as_numpy=False belong to the graph and a later run
        may overwrite them.
        """
        handle = None if stream is None else _stream_handle(stream)
        env, sizes = self._bind(args, kwargs)
        framework = None
        if out is None and as_numpy is None:
            given = args[0].values() if len(args) == 1 and isinstance(args[0], Mapping) else [*args, *kwargs.values()]
            framework = next((f for f in map(_framework, given) if f is not None), None)
        buffers: Optional[list] = None
        if out is not None:
            if as_numpy is not None:
                raise TefuseError("pass out= or as_numpy=, not both")
            buffers = self._out_buffers(out, sizes)
        elif framework is not None:  # fresh tensors each run: the caller keeps them
            buffers = [tvm.runtime.empty(self._shape(o, sizes), o.dtype, self.device) for o in self.graph.outputs]
        with self.buffer_set(handle) as bs:
            return self._run_on(bs, env, sizes, handle, buffers, framework, as_numpy)

    def _shape(self, n: Node, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """A value's shape in a run that bound the symbolic dims to `sizes`."""
        return n.shape if not sizes else concrete_shape(n.shape, sizes)

    def _sized(self, bs: BufferSet, sizes: Mapping[str, int]) -> tuple[list, list]:
        """(launches, slots) of the buffer set for a run at `sizes`: for a static graph its own;
        for a dynamic one each buffer viewed at its value's shape in this run (a view of the
        buffer planned for the range's max, no allocation), the argument lists bound to them."""
        if not sizes:
            return bs.launches, bs.slots
        key = tuple(sorted(sizes.items()))
        hit = bs.sized.get(key)
        if hit is not None:
            return hit
        if len(bs.sized) >= SIZED_KEPT:  # the oldest binding's lists go (they are rebuilt on use)
            bs.sized.pop(next(iter(bs.sized)))
        slot_of = {}
        for n, slot in self._plan.items():
            shape = self._shape(n, sizes)
            base = bs.slots[slot]
            if int(np.prod(shape)) > int(np.prod(base.shape)):
                raise DynamicShapeError(f"{n.name}: shape {list(shape)} at {dict(sizes)} is larger than its "
                                        f"buffer {list(base.shape)} planned for the ranges' maxima")
            slot_of[n] = base._create_view(shape, n.dtype)  # TVM's view: same memory, this run's shape
        launches = []
        for run, (k, argv, holes) in zip(self.kernels_for(sizes), bs.launches):  # each its bucket's variant
            nodes = [*k.params, *k.outputs]
            bound = [slot_of.get(p, a) for p, a in zip(nodes, argv)]
            if isinstance(run, SplitKernel):  # its partial sums last, viewed at this run's sizes
                bound.append(bs.scratch._create_view(self._shape(run.scratch, sizes), "float32"))
            launches.append((run, bound, holes))
        slots = list(bs.slots)
        for n, v in slot_of.items():  # an output's slot as this run sees it
            if n in self.graph.outputs:
                slots[self._plan[n]] = v
        bs.sized[key] = hit = (launches, slots)
        return hit

    def _run_on(self, bs: BufferSet, env: dict, sizes: Mapping[str, int], handle: Optional[int],
                buffers: Optional[list], framework, as_numpy: Optional[bool]) -> list:
        launches, slots = self._sized(bs, sizes)
        outputs = self.graph.outputs
        direct = self._redirect(bs, launches, buffers) if buffers is not None else {}
        try:
            with _on_stream(self.device, handle):
                for k, argv, holes in launches:
                    for i, key in holes:
                        argv[i] = env[key]
                    k.function(*argv)  # a property, so that a kernel given a new module runs it
        finally:
            for _, argv, holes in launches:  # drop the references to this run's inputs
                for i, _key in holes:
                    argv[i] = None
            if direct:  # and to the caller's buffers
                for slot, where in bs.out_uses.items():
                    for li, pos in where:
                        launches[li][1][pos] = slots[slot]
        if handle is not None and ((buffers is None and as_numpy is not False)
                                   or (buffers is not None and len(direct) < len(outputs))):
            self.device.sync(handle)  # the copies below run on TVM's own stream: wait for the kernels
        # an output listed twice was written once, into the first one's buffer where that took it
        written = {self._plan[outputs[j]]: view for j, view in direct.items()}
        res = []
        for j, o in enumerate(outputs):
            t = (env[o] if o.op == INPUT else self._param(o) if o.op == CONST
                 else written.get(self._plan[o], slots[self._plan[o]]))
            if buffers is not None:
                if j not in direct:  # not written in place: copy in
                    self._copy_into(t, buffers[j], o.name)
                res.append(buffers[j] if framework is None else framework.from_dlpack(buffers[j]))
            else:
                res.append(t if as_numpy is False else from_storage(t.numpy(), logical_dtype(o)))
        return res

    def _out_buffers(self, out: Union[Sequence[Any], Mapping[str, Any]], sizes: Mapping[str, int]) -> list:
        outputs = self.graph.outputs
        names = [o.name for o in outputs]
        if isinstance(out, Mapping):
            unknown = [k for k in out if k not in names]
            if unknown or len(out) != len(names):
                raise TefuseError(f"out= names {sorted(out)}; the outputs are {names}")
            out = [out[n] for n in names]
        out = list(out)
        if len(out) != len(outputs):
            raise TefuseError(f"out= has {len(out)} buffer(s); the graph has {len(outputs)} output(s) {names}")
        for o, b in zip(outputs, out):
            shape = tuple(getattr(b, "shape", ()))
            dtype = str(getattr(b, "dtype", "")).replace("torch.", "")
            # a low-precision output: a numpy buffer of its ml_dtypes type, or a device one of its storage
            want = logical_dtype(o) if isinstance(b, np.ndarray) else o.dtype
            if shape != self._shape(o, sizes) or dtype != want:
                raise TefuseError(f"out= buffer for {o.name!r}: expected {want}[{','.join(map(str, self._shape(o, sizes)))}], got {dtype}"
                                  f"[{','.join(map(str, shape))}]")
        return out

    def _redirect(self, bs: BufferSet, launches: list, buffers: list) -> dict[int, tvm.runtime.Tensor]:
        """Point the kernels that write (or read) each graph output at the caller's buffer, where
        TVM can use that buffer in place; {output index: its TVM view} for those."""
        direct: dict[int, tvm.runtime.Tensor] = {}
        taken: set[int] = set()
        for j, o in enumerate(self.graph.outputs):
            if o.op in (INPUT, CONST) or self._plan[o] in taken or logical_dtype(o) != o.dtype:
                continue  # an input or constant as output, the same node listed twice, or a
                # low-precision value (its numpy buffer holds another byte form): copied
            view = _in_place(buffers[j], self.device)
            if view is None:
                continue
            slot = self._plan[o]
            taken.add(slot)
            direct[j] = view
            for li, pos in bs.out_uses[slot]:
                launches[li][1][pos] = view
        return direct

    def _copy_into(self, t: tvm.runtime.Tensor, buf: Any, name: str) -> None:
        if isinstance(buf, tvm.runtime.Tensor):
            t.copyto(buf)
        elif isinstance(buf, np.ndarray):
            np.copyto(buf, from_storage(t.numpy(), buf.dtype))
        elif hasattr(buf, "copy_") and _framework(buf) is not None:  # torch: its copy_, any device
            buf.copy_(_framework(buf).from_dlpack(t))
        else:
            raise TefuseError(f"out= buffer for {name!r}: cannot write into a {type(buf).__name__} "
                              "(pass a numpy array, a torch tensor or a TVM tensor)")

    def time_kernels(self, *args, number: int = 10, repeat: int = 5, min_repeat_ms: int = 50,
                     **kwargs) -> list[float]:
        """Median device time of each kernel in seconds (TVM's time_evaluator, after a warm-up run; a
        split-K variant's two kernels added)."""
        self.run(*args, as_numpy=False, **kwargs)
        env, sizes = self._bind(args, kwargs)
        times = []
        with self.buffer_set() as bs:
            for k, bound, holes in self._sized(bs, sizes)[0]:
                argv = list(bound)
                for i, key in holes:
                    argv[i] = env[key]
                parts = [(k, range(len(argv)))] if not isinstance(k, SplitKernel) else zip(k.parts, k.picks)
                t = 0.0
                for part, picks in parts:
                    f = part.module.time_evaluator("main", self.device, number=number, repeat=repeat,
                                                   min_repeat_ms=min_repeat_ms)
                    t += float(np.median(f(*[argv[i] for i in picks]).results))
                times.append(t)
        return times

    __call__ = run


def variant_modules(kernels: Sequence[CompiledKernel],
                    variants: Mapping[int, Mapping[BucketKey, Variant]]) -> list[CompiledKernel]:
    """The size variants' distinct modules that no kernel runs itself (one each; a split-K
    variant's two)."""
    base = {id(k.module) for k in kernels}
    seen: dict[int, CompiledKernel] = {}
    for per_key in variants.values():
        for v in per_key.values():
            for k in (v.parts if isinstance(v, SplitKernel) else (v,)):
                if id(k.module) not in base:
                    seen.setdefault(id(k.module), k)
    return list(seen.values())


def _type_str(n: Node) -> str:
    """A graph input's or output's type as the caller holds it (int4[2,3], not its int8 storage)."""
    return f"{logical_dtype(n)}[{','.join(map(str, n.shape))}]"


def _stream_handle(stream: Any) -> int:
    """The raw handle behind run()'s stream= (an int, or an object with .cuda_stream)."""
    handle = getattr(stream, "cuda_stream", stream)
    if hasattr(handle, "value"):  # ctypes.c_void_p
        handle = handle.value or 0
    if not isinstance(handle, int) or isinstance(handle, bool):
        raise TefuseError(f"stream=: expected a stream handle (int) or an object with .cuda_stream, "
                          f"got {type(stream).__name__}")
    return handle


def _not_numbers(dtype: np.dtype) -> bool:
    """Strings, objects or records: numpy void without being one of ml_dtypes' number types
    (bfloat16 and the float8s are void to numpy, with no fields)."""
    return dtype.kind in "USO" or (dtype.kind == "V" and dtype.names is not None) or dtype == np.dtype("V")


def _on_stream(device, handle: Optional[int]):
    """TVM's stream context for `handle` (see CompiledGraph.run), or a no-op for None."""
    if handle is None:
        return contextlib.nullcontext()
    import tvm_ffi

    return tvm_ffi.use_raw_stream(device, handle)
