"""FusionPlan: MIOpen's Fusion API on tefuse.

Describe the input tensor, add operators in order (each add is checked at once and raises
`UnsupportedFusion` naming the step), compile once, then execute many times with runtime
arguments (weights, bias, batch-norm statistics, residual operands) kept in a separate
`OperatorArgs` object. A plan's ops always fuse into one kernel; an op that would need a second
kernel is refused when it is added. The one launch a plan may add is a copy before it: where
Hopper's wgmma reads an image's 3 channels, the input is first padded to one 8-byte vector a
pixel (as cuDNN and TensorRT pad a first layer), since no 16-byte tile copy can read 6-byte
pixels and the fallback without it ran 2.6x cuDNN's time.

Activation parameters (alpha, clip bounds) are compile-time, as parameters that rarely
change should be (MIOpen's dynamic-kernels lesson): changing them means a new plan.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..driver import build
from ..errors import GraphError, OpError, PlanStateError, UnsupportedFusion
from ..fusion import fuse_graph
from ..graph.ir import Graph, GraphBuilder, Node
from ..graph.precision import convert_precision
from ..graph.grouped import convert_weight, dense_layout, dense_weight_inputs, input_dense_candidate, split_layout
from ..graph.weights import conv_form, form_weight_inputs, input_conv_candidate, is_form_layout, ohwi_weight_inputs
from ..ops import ACTIVATIONS
from ..ops.conv2d import WEIGHT_LAYOUT, normalize_padding, normalize_pair
from ..ops.elemwise import BINARY, UNARY
from ..runtime.executor import CompiledGraph
from ..schedules import graph_policy
from ..target import TargetLike, device_caps, make_target

log = logging.getLogger(__name__)


DTYPES = ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16")


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _check_activation_params(step: int, kind: str, params: dict, defaults: dict) -> None:
    """Known names and values of the right kind, checked when the step is added."""
    what = f"step {step} ({kind})"
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        known = ", ".join(sorted(defaults)) or "none"
        raise UnsupportedFusion(f"{what}: unknown parameter(s) {unknown}; {kind} takes: {known}")
    for k, v in params.items():
        d = defaults[k]
        if isinstance(d, str):
            if k == "approximate" and v not in ("none", "tanh"):
                raise UnsupportedFusion(f"{what}: {k} must be 'none' or 'tanh', got {v!r}")
        elif not _number(v) or v != v:
            raise UnsupportedFusion(f"{what}: {k} must be a number, got {v!r}")


@dataclass(frozen=True)
class TensorDesc:
    """Shape, dtype and layout of a tensor (MIOpen's tensor descriptor)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    layout: str = "NCHW"

    def __post_init__(self):
        try:
            shape = tuple(self.shape)
        except TypeError:
            raise UnsupportedFusion(f"TensorDesc: shape must be a tuple of integers, got {self.shape!r}") from None
        if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
            raise UnsupportedFusion(f"TensorDesc: shape must be a tuple of integers, got {self.shape!r}")
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        if self.dtype not in DTYPES:
            raise UnsupportedFusion(f"TensorDesc: unknown dtype {self.dtype!r}; use one of {', '.join(DTYPES)}")


@dataclass(frozen=True)
class OpHandle:
    """Names one step of a plan; used to set its runtime arguments."""

    step: int
    kind: str
    arg_names: tuple[str, ...]  # graph inputs this step reads at run time
    arg_shapes: tuple[tuple[int, ...], ...]
    arg_layouts: tuple[str, ...] = ()  # the layout the user passes each in ("" where it has none)


@dataclass
class OperatorArgs:
    """Runtime arguments of a plan, set per op handle, separate from the compiled plan.

    Users pass every argument in the plan's documented layout (a conv weight OIHW or HWIO).
    `layouts` names those the compiled kernel reads in another one (an NHWC conv's weight as
    OHWI where Hopper's wgmma runs, a grouped conv's made dense for the tensor cores, as
    graph/grouped.py does with constants): they are converted once, when set, not at each
    execute.
    `values` holds what the kernel reads; `held` the (user's, held) layout of each laid-out one,
    `given` the user's array of each (a padded form is made from it, never converted back)."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    layouts: dict[str, str] = field(default_factory=dict)
    held: dict[str, tuple[str, str]] = field(default_factory=dict)
    given: dict[str, Any] = field(default_factory=dict)

    def _set(self, h: OpHandle, kind: str, arrays: Sequence[Any]) -> None:
        if h.kind != kind:
            raise PlanStateError(f"step {h.step} is a {h.kind}, not a {kind}")
        layouts = h.arg_layouts or ("",) * len(h.arg_names)
        for name, shape, layout, a in zip(h.arg_names, h.arg_shapes, layouts, arrays):
            arr = np.asarray(a) if not hasattr(a, "__dlpack__") or isinstance(a, np.ndarray) else a
            if tuple(arr.shape) != shape:
                raise PlanStateError(f"step {h.step} ({kind}): {name} must have shape {shape}, "
                                     f"got {tuple(arr.shape)}")
            self.values[name] = arr
            if layout:
                self.held[name] = (layout, layout)
                self.given[name] = arr
        self.read_as(self.layouts)

    def read_as(self, layouts: dict[str, str]) -> None:
        """Hold every laid-out argument as `layouts` says (the user's layout where it names none),
        converting those held otherwise from the user's array: args set before compile, or for a
        plan since compiled for another target, are converted here once, then read as they are."""
        self.layouts = dict(layouts)
        for name, (user, held) in self.held.items():
            want = self.layouts.get(name, user)
            if want != held:
                self.values[name] = convert_weight(self.given[name], user, want)
                self.held[name] = (user, want)

    def set_conv(self, h: OpHandle, weight) -> None:
        self._set(h, "conv2d", [weight])

    def set_bias(self, h: OpHandle, bias) -> None:
        self._set(h, "bias", [bias])

    def set_batch_norm(self, h: OpHandle, gamma, beta, mean, var) -> None:
        self._set(h, "batch_norm", [gamma, beta, mean, var])

    def set_elementwise(self, h: OpHandle, other) -> None:
        self._set(h, "elementwise", [other])

    def set_rects(self, h: OpHandle, rects) -> None:
        """A crop_resize step's rectangles: [n, 5] rows of image, x, y, w, h ([n, 7] with the
        planes' output height and width under plane_sizes; int32; new values run the same
        compiled kernel)."""
        on_device = hasattr(rects, "__dlpack__") and not isinstance(rects, np.ndarray)
        self._set(h, "crop_resize", [rects if on_device else np.asarray(rects, np.int32)])


class FusionPlan:
    """An ordered chain of ops on one input tensor, compiled into one kernel."""

    def __init__(self, input_desc: TensorDesc):
        if input_desc.layout not in WEIGHT_LAYOUT:
            raise UnsupportedFusion(f"input layout must be NCHW or NHWC, got {input_desc.layout!r}")
        if len(input_desc.shape) != 4 or min(input_desc.shape) < 1:
            raise UnsupportedFusion(f"input must be a 4-D tensor with positive dims, got {input_desc.shape}")
        self.input = input_desc
        self._b = GraphBuilder()
        self._x = self._b.input("x", input_desc.shape, input_desc.dtype)
        self._cur: Node = self._x
        self._steps: list[OpHandle] = []
        self._compiled: Optional[CompiledGraph] = None
        self._compiled_steps = 0
        self._kernel_layouts: dict[str, str] = {}

    # -- building ---------------------------------------------------------------------------
    @property
    def channel_axis(self) -> int:
        return 1 if self.input.layout == "NCHW" else 3

    @property
    def output_desc(self) -> TensorDesc:
        return TensorDesc(self._cur.shape, self._cur.dtype, self.input.layout)

    def _add(self, kind: str, op: str, args: list[tuple], arg_layouts: tuple[str, ...] = (), **attrs) -> OpHandle:
        """Add a step reading the current tensor and run-time arguments `args`: (name, shape), in
        the input's dtype, or (name, shape, dtype)."""
        step = len(self._steps)
        what = f"step {step} ({kind})"
        b = self._b
        try:
            arg_nodes = [b.input(a[0], a[1], a[2] if len(a) > 2 else self.input.dtype) for a in args]
        except GraphError as e:
            raise UnsupportedFusion(f"{what}: {e}") from None
        try:
            node = b.op(op, self._cur, *arg_nodes, name=f"s{step}_{op}", **attrs)
        except GraphError as e:
            b.discard(arg_nodes)
            raise UnsupportedFusion(f"{what}: {e}") from None
        groups = fuse_graph(Graph(b.inputs, [node]))
        if len(groups) != 1:
            b.discard(arg_nodes + [node])
            raise UnsupportedFusion(
                f"{what}: {op} after {[h.kind for h in self._steps]} would need {len(groups)} kernels "
                f"({'; '.join(g.describe() for g in groups)}); a plan fuses into one kernel")
        self._cur = node
        h = OpHandle(step, kind, tuple(a[0] for a in args), tuple(tuple(a[1]) for a in args), arg_layouts)
        self._steps.append(h)
        if self._compiled is not None:
            log.info("plan changed after compile (%s); compile again before executing", what)
        return h

    def add_conv(self, weight: TensorDesc, *, stride=1, padding=0, dilation=1, groups: int = 1) -> OpHandle:
        """Convolution; `weight` is OIHW for NCHW plans, HWIO for NHWC plans."""
        step = len(self._steps)
        want = WEIGHT_LAYOUT[self.input.layout]
        wl = weight.layout if weight.layout in ("OIHW", "HWIO") else want
        if wl != want:
            raise UnsupportedFusion(f"step {step} (conv2d): weight layout {wl} does not match the "
                                    f"{self.input.layout} plan, which takes {want} weights")
        if weight.dtype != self.input.dtype:
            raise UnsupportedFusion(f"step {step} (conv2d): weight dtype {weight.dtype} differs from "
                                    f"input dtype {self.input.dtype}")
        if any(h.kind == "conv2d" for h in self._steps):
            raise UnsupportedFusion(f"step {step} (conv2d): a plan holds one convolution")
        try:
            normalize_pair(stride, "stride")
            normalize_pair(dilation, "dilation")
            normalize_padding(padding)
        except OpError as e:
            raise UnsupportedFusion(f"step {step} (conv2d): {e}") from None
        if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or groups < 1:
            raise UnsupportedFusion(f"step {step} (conv2d): groups must be a positive integer, got {groups!r}")
        return self._add("conv2d", "conv2d", [(f"s{step}_weight", weight.shape)], (want,), strides=stride,
                         padding=padding, dilation=dilation, groups=groups, layout=self.input.layout)

    def add_bias(self) -> OpHandle:
        """Per-channel bias; must directly follow a convolution."""
        step = len(self._steps)
        if not self._steps or self._steps[-1].kind != "conv2d":
            raise UnsupportedFusion(f"step {step} (bias): bias must directly follow a convolution")
        c = self._cur.shape[self.channel_axis]
        return self._add("bias", "bias_add", [(f"s{step}_bias", (c,))], axis=self.channel_axis)

    def add_batch_norm(self, epsilon: float = 1e-5) -> OpHandle:
        """Inference batch-norm over channels (statistics are runtime args)."""
        step = len(self._steps)
        if not _number(epsilon) or not epsilon > 0:
            raise UnsupportedFusion(f"step {step} (batch_norm): epsilon must be a positive number, got {epsilon!r}")
        c = self._cur.shape[self.channel_axis]
        names = [(f"s{step}_{k}", (c,)) for k in ("gamma", "beta", "mean", "var")]
        return self._add("batch_norm", "batch_norm", names, axis=self.channel_axis, epsilon=epsilon)

    def add_activation(self, kind: str, **params) -> OpHandle:
        """Activation by name (relu, leaky_relu(alpha=), clip(min=, max=), gelu, silu...)."""
        step = len(self._steps)
        if kind not in ACTIVATIONS:
            raise UnsupportedFusion(f"step {step} (activation): unknown activation {kind!r}; "
                                    f"supported: {', '.join(ACTIVATIONS)}")
        _check_activation_params(step, kind, params, UNARY[kind][1])
        return self._add("activation", kind, [], **params)

    def add_elementwise(self, kind: str, other: Optional[TensorDesc] = None) -> OpHandle:
        """Binary op with a runtime operand (default: same shape, e.g. a residual add)."""
        step = len(self._steps)
        if kind not in BINARY:
            raise UnsupportedFusion(f"step {step} (elementwise): unknown op {kind!r}; "
                                    f"supported: {', '.join(BINARY)}")
        shape = other.shape if other is not None else self._cur.shape
        if other is not None and other.dtype != self.input.dtype:
            raise UnsupportedFusion(f"step {step} (elementwise): operand dtype {other.dtype} differs "
                                    f"from {self.input.dtype}")
        return self._add("elementwise", kind, [(f"s{step}_other", shape)])

    def add_unary(self, kind: str, **params) -> OpHandle:
        """Any elementwise unary op of tefuse (exp, sqrt, abs...)."""
        if kind not in UNARY:
            raise UnsupportedFusion(f"step {len(self._steps)} (unary): unknown op {kind!r}")
        _check_activation_params(len(self._steps), kind, params, UNARY[kind][1])
        return self._add("activation", kind, [], **params)

    def _channels_last(self, kind: str) -> None:
        if self.input.layout != "NHWC":
            raise UnsupportedFusion(f"step {len(self._steps)} ({kind}): image steps read channels last; the "
                                    f"plan's input is {self.input.layout} (use an NHWC plan)")

    def add_crop_resize(self, n: int, size: Sequence[int], *, mode: str = "linear", keep_aspect_ratio: bool = False,
                        background=0.0, dtype: str = "float32", coordinate: str = "half_pixel",
                        plane_sizes: bool = False) -> OpHandle:
        """n planes of size (height, width) cut from the NHWC input by rectangles set at run time
        (set_rects: [n, 5] rows of image, x, y, w, h; with plane_sizes [n, 7], each row ending
        with its own output height and width, up to `size`) and resized (nearest, linear, cubic;
        half_pixel or asymmetric coordinates; with keep_aspect_ratio centred on `background`):
        one launch for every plane."""
        self._channels_last("crop_resize")
        step = len(self._steps)
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise UnsupportedFusion(f"step {step} (crop_resize): n must be a positive integer, got {n!r}")
        bg = tuple(background) if isinstance(background, (tuple, list)) else background
        return self._add("crop_resize", "crop_resize", [(f"s{step}_rects", (int(n), 7 if plane_sizes else 5), "int32")],
                         size=tuple(size), mode=mode, keep_aspect_ratio=bool(keep_aspect_ratio), background=bg,
                         dtype=dtype, coordinate=coordinate, plane_sizes=bool(plane_sizes))

    def add_color_convert(self, code: str) -> OpHandle:
        """A colour conversion of the channels (rgb2bgr, rgba2rgb, rgb2gray...: ops/color.py)."""
        self._channels_last("color_convert")
        return self._add("color_convert", "color_convert", [], code=code)

    def add_normalize(self, mul=1.0, sub=0.0, div=1.0) -> OpHandle:
        """((x * mul) - sub) / div per channel (each one number or one per channel), as float32."""
        vals = {k: tuple(v) if isinstance(v, (tuple, list)) else v for k, v in (("mul", mul), ("sub", sub), ("div", div))}
        return self._add("normalize", "normalize", [], axis=self.channel_axis, **vals)

    @property
    def graph(self) -> Graph:
        if not self._steps:
            raise PlanStateError("the plan holds no operators yet")
        return Graph(self._b.inputs, [self._cur])

    # -- compile and run --------------------------------------------------------------------
    def kernel_layouts(self, target: TargetLike = "llvm", precision: str = "fp32") -> dict[str, str]:
        """{argument: layout} for the run-time arguments the plan's kernel for `target` reads in
        another layout than users pass: an NHWC conv's HWIO weight in its ConvForm where Hopper's
        wgmma runs (sm_90, fp16/bf16 or tf32 operands, M and N a tile big enough): OHWI, over
        an image's few channels padded, pixels paired and rows widened ("OHWI:c4:pairs1x4:taps1"),
        as graph/weights.py lays out a constant weight at build time; a
        grouped conv's weight dense (block-diagonal, `dense_layout`: "HWIO:dense32") where the
        tensor cores take it so, as graph/grouped.py makes a constant one. The precision is
        applied first, as the build does: a weight it casts is read as cast."""
        policy = graph_policy(device_caps(make_target(target)))
        graph = convert_precision(self.graph, precision)
        dense = {n.inputs[1].name: n.geometry.groups for n in graph.nodes
                 if input_dense_candidate(n, max_groups=policy.dense_groups, min_mn=policy.min_mn)}
        graph = dense_weight_inputs(graph, dense) if dense else graph
        forms = {n.inputs[1].name: "OHWI" if n.inputs[1].name in dense else conv_form(n).layout
                 for n in graph.nodes if policy.nk_conv_weights and input_conv_candidate(n, policy.min_mn)}
        return {name: dense_layout(forms.get(name, "HWIO"), dense.get(name, 1))
                for name in sorted(forms.keys() | set(dense))}

    def kernel_graph(self, target: TargetLike = "llvm", precision: str = "fp32") -> Graph:
        """The graph `compile` builds: the plan's, its laid-out weights declared in the layout the
        kernel reads (`kernel_layouts`); what the command line builds and tunes for a chain."""
        return self._graph_reading(self.kernel_layouts(target, precision))

    def _graph_reading(self, layouts: dict[str, str]) -> Graph:
        """The plan's graph with the arguments `layouts` names declared in that layout (dense,
        OHWI)."""
        dense = {name: g for name, layout in layouts.items() for g in [split_layout(layout)[1]] if g > 1}
        graph = dense_weight_inputs(self.graph, dense) if dense else self.graph
        ohwi = {name for name, layout in layouts.items() if split_layout(layout)[0] == "OHWI"}
        graph = ohwi_weight_inputs(graph, ohwi) if ohwi else graph
        forms = {n.inputs[1].name: conv_form(n) for n in graph.nodes
                 if n.op == "conv2d" and is_form_layout(layouts.get(n.inputs[1].name, ""))}
        for name, form in forms.items():
            if form.layout != layouts[name]:
                raise PlanStateError(f"{name}: the plan reads it as {form.layout}, not {layouts[name]}")
        return form_weight_inputs(graph, forms) if forms else graph

    def compile(self, target: TargetLike = "llvm", *, precision: str = "fp32", **build_kwargs) -> "FusionPlan":
        """Build the plan's single kernel (expensive: do it once). precision: fp32, fp16 or bf16
        (float32 accumulation; arguments and results stay in the plan's dtype). No split-K: a
        plan is one kernel, so a small-grid conv stays whole (graph/split_k.py). On Hopper the
        conv weight is read OHWI or in its padded form (`kernel_layouts`); OperatorArgs converts
        it when set. The kernel's config comes from the performance database, as MIOpen's
        compile reads its perf-db: the user's tuning log and the shipped ones (db="default";
        db=None: the template's fallback config)."""
        build_kwargs.setdefault("split_k", False)
        build_kwargs.setdefault("db", "default")
        layouts = self.kernel_layouts(target, precision)
        self._compiled = build(self._graph_reading(layouts), target, precision=precision, **build_kwargs)
        self._kernel_layouts = layouts
        self._compiled_steps = len(self._steps)
        return self

    @property
    def compiled(self) -> CompiledGraph:
        if self._compiled is None:
            raise PlanStateError("the plan is not compiled: call compile(target) before execute")
        if self._compiled_steps != len(self._steps):
            raise PlanStateError(f"the plan changed after compile ({len(self._steps) - self._compiled_steps} "
                                 f"op(s) added); call compile(target) again")
        return self._compiled

    def new_args(self) -> OperatorArgs:
        """Arguments for this plan; after compile they convert weights to the kernel's layout as
        they are set (made before, they are converted at the first execute)."""
        return OperatorArgs(layouts=dict(self._kernel_layouts))

    def execute(self, x, args: OperatorArgs, *, as_numpy: bool = True):
        """Run the compiled kernel on input `x` with runtime arguments `args`."""
        cg = self.compiled
        if not isinstance(args, OperatorArgs):
            raise PlanStateError(f"execute(x, args): args must be the OperatorArgs from plan.new_args(), "
                                 f"got {type(args).__name__}")
        missing = [n for h in self._steps for n in h.arg_names if n not in args.values]
        if missing:
            raise PlanStateError(f"runtime arguments not set: {', '.join(missing)}")
        if args.layouts != self._kernel_layouts:
            args.read_as(self._kernel_layouts)
        return cg.run(x=x, as_numpy=as_numpy, **args.values)[0]

    def source(self, kind: Optional[str] = None) -> str:
        return self.compiled.source(kind)
