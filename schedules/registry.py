"""Template registry keyed by (target family, anchor kind); several templates may serve one key.

A target kind looks through its families in order: `cuda` -> cuda, then gpu; `rocm` -> rocm,
then gpu; `llvm` -> cpu. The gpu family's templates (schedules/cuda/: CUDA's thread model,
which ROCm shares) read warp size, SM count and limits from the target they are given, so a
family of its own (a ROCm template with MFMA) comes first where it exists. Within a key,
templates are ordered by their explicit `priority` (highest first); an anchor kind without
templates falls back to the family chain's generic ("*") ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from tvm import s_tir

from ..options import DEFAULT, BuildOptions
from .space import Config, ConfigSpace


# stage roles lowering finds structurally (see codegen.lower._kernel_info)
DATA = "data"  # the block computing the anchor's data operand (conv's padded input, a prologue)
WEIGHT = "weight"  # the block computing the anchor's weight operand (a weight prologue)
ACCUMULATOR = "accumulator"  # the anchor's reduction block
ROLES = (DATA, WEIGHT, ACCUMULATOR)

# a pass_config key that is no TVM option: the name of a TIR pipeline registered with
# tvm.tirx.compilation_pipeline.register_tir_pipeline, used instead of TVM's default
TIR_PIPELINE = "tefuse.tir_pipeline"


@dataclass
class KernelInfo:
    """What a template needs to know about one lowered fused group.

    `geometry` is the anchor op's typed shape facts (tefuse.ops: Conv2dGeometry, GemmGeometry,
    ReduceGeometry, PoolGeometry, LrnGeometry, SoftmaxGeometry); `stages` names the blocks by
    role and `operands` the buffers the accumulator reads by role, so templates never match
    block names or re-derive shapes from raw attrs.
    """

    anchor_kind: str  # conv2d, depthwise_conv2d, dense, pool, reduce, softmax, norm, injective
    anchor_block: Optional[str]  # the main reduction block, if any
    inline_blocks: list[str]  # intermediate stages to inline or cache (pad_temp, data_in...)
    reduce_blocks: list[str]  # every block with a reduction (anchor included)
    output_blocks: list[str]  # blocks writing the group's outputs
    attrs: dict[str, Any] = field(default_factory=dict)  # the anchor node's attrs
    out_shape: tuple[int, ...] = ()  # the anchor's (else the first output's) shape
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)  # the group's outputs
    in_shapes: list[tuple[int, ...]] = field(default_factory=list)  # the anchor's inputs
    dtype: str = "float32"
    geometry: Any = None  # the anchor op's geometry dataclass; None without one
    stages: dict[str, str] = field(default_factory=dict)  # role -> block name (ROLES)
    operands: dict[str, str] = field(default_factory=dict)  # data/weight -> buffer the accumulator reads
    # whether a padded row / column index of the anchor's output lands on another output element
    # through the epilogue's reshapes (fusion/epilogue.py): tiles must then divide that extent
    padding_spills: tuple[bool, bool] = (False, False)
    # whether an op of the group samples a window per output element (tefuse.ops OpDef.samples)
    samples: bool = False
    # intermediate blocks (also in inline_blocks) whose element is one input's element picked by
    # the index (a concat), kept as stages in a group without an anchor (tefuse.ops OpDef.picks_input)
    pick_stages: list[str] = field(default_factory=list)
    # a dim of the kernel is bound at run time (a build over dim ranges): its loop extents are
    # expressions, the shapes above are at the range's opt; only templates whose
    # `takes_symbolic` says yes schedule it
    symbolic: bool = False
    # which axes of the anchor's inputs (in order) and of its output have symbolic extents: what a
    # template that takes some symbolic dims (a batch on the grid) and not others asks
    symbolic_in: tuple[tuple[int, ...], ...] = ()
    symbolic_out: tuple[int, ...] = ()

    def stage(self, role: str) -> Optional[str]:
        """The block playing `role`, or None (a weight read straight from a parameter has none)."""
        if role not in ROLES:
            raise KeyError(f"unknown stage role {role!r}; roles: {ROLES}")
        return self.stages.get(role)

    def staged(self, *roles: str) -> list[str]:
        """The intermediate (inlinable) blocks playing `roles`, in that order."""
        return [b for b in (self.stage(r) for r in roles) if b is not None and b in self.inline_blocks]

    @property
    def epilogue(self) -> list[str]:
        """Output blocks other than the accumulator: they read it, so they go after it."""
        return [b for b in self.output_blocks if b != self.stages.get(ACCUMULATOR)]


class Template:
    """A schedule template: a knob space, a fallback config, and how to apply a config."""

    name = "template"
    # names of templates this one was split from or renamed from: their tuning records are read
    # as this template's where its space holds their config values
    record_names: tuple[str, ...] = ()
    priority = 0  # set by `register`: order among a key's templates
    # for an op the graph forms only where a template takes it (attention): whether this
    # template's kernel beats the unfused ones it replaces, so the op forms by default
    forms_by_default = False
    # whether its kernels may share a launch with independent kernels (see shares_launch)
    horizontal = False
    # whether the template schedules kernels whose extents are symbolic (KernelInfo.symbolic):
    # loops split with predicated tails, nothing in the schedule sized from an extent's value
    symbolic_extents = False
    # whether a kernel over dim ranges gets a compiled variant per size bucket (graph/buckets.py):
    # the template sizes its tiles and grid from the sizes (KernelInfo's shapes at a bucket's
    # representative size), so one config serves a range badly; the rest compile once
    size_buckets = False

    def accepts(self, info: KernelInfo) -> bool:
        """Whether the template can schedule this group at all (a key may hold templates
        for a subset of its groups, e.g. non-grouped convs only); those that can't are skipped."""
        return True

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        """Rank among a key's templates when no tuning record exists (highest wins, then
        registration order): a measured rule of thumb for which untuned fallback is faster.
        DOMINANT or more: it computes on units the others do not use (tensor cores), so none
        of them can win and tuning gives them no trials."""
        return 0

    def supports(self, geometry, dtype: str, target) -> bool:
        """Whether the template builds an op of this geometry and dtype, asked before the op
        exists: graph passes that form a fused op (graph/attention.py) only form it where a
        template of its own anchor kind says yes (see op_supported)."""
        return True

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        return ConfigSpace()

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        return space.get(0)

    def fallback_alternatives(self, info: KernelInfo, target, space: ConfigSpace, cfg: Config):
        """Configs to try, in order, where the fallback `cfg` does not apply (TVM refusing a
        schedule no space rule foresaw): an untuned build then takes the nearest one that does,
        rather than failing. None by default."""
        return ()

    def prepare(self, func, info: KernelInfo, cfg: Config, target):
        """The unscheduled func a config schedules: `func` itself, unless the config's instructions
        do part of its arithmetic elsewhere (tf32 wgmma rounds its operands in shared memory, so
        the op's rounding is taken out of the tile copies)."""
        return func

    def takes_symbolic(self, info: KernelInfo) -> bool:
        """Whether the template schedules this kernel with symbolic extents (KernelInfo.symbolic,
        symbolic_in, symbolic_out): `symbolic_extents`, unless it takes some axes symbolic and
        not others."""
        return self.symbolic_extents

    def varies_with_size(self, info: KernelInfo) -> bool:
        """Whether this kernel (symbolic, KernelInfo.symbolic) is compiled once a size bucket:
        `size_buckets`, for kernels with symbolic extents."""
        return self.size_buckets and info.symbolic

    def schedule_checks(self, info: KernelInfo, cfg: Config) -> bool:
        """Whether the schedule primitives check their prerequisites (TVM's `enable_check`) as
        this config is applied: on, unless the template knows a check that its schedule passes
        at every fixed size fails only for want of arithmetic on symbolic extents."""
        return True

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        raise NotImplementedError

    def finish(self, mod, info: KernelInfo, cfg: Config, target):
        """The scheduled module a config compiles: `mod` itself, unless the template rewrites what
        its schedule primitives cannot say (tensor-core kernels stage fp16/bf16 results in that
        type, cuda/passes/narrow_staging.py, and read real rows past an operand's last,
        cuda/passes/clamp_rows.py)."""
        return mod

    def compile_target(self, info: KernelInfo, cfg: Config, target):
        """The target a config is scheduled, checked and compiled for: `target` itself, unless the
        config needs an arch-specific variant of it (Hopper's wgmma: sm_90a, 227 KB of shared memory)."""
        return target

    def shares_launch(self, info: KernelInfo, cfg: Config, target) -> bool:
        """Whether a kernel of this config may share a launch with independent kernels (horizontal
        fusion, tefuse/codegen/horizontal.py): its grid is blockIdx loops on top and nothing about
        its launch is set outside the kernel (no cluster dimensions): the class's `horizontal`."""
        return self.horizontal

    def pass_config(self, info: KernelInfo, cfg: Config, target) -> dict:
        """TVM PassContext options the scheduled module must be compiled with (e.g. cp.async);
        the key TIR_PIPELINE names a registered TVM TIR pipeline to compile with instead."""
        return {}

    def preload(self) -> None:
        """Import what apply() would load on first use (tensor intrinsics), so a build worker
        pays for it once, up front, not inside its first timed build."""


FAMILIES: dict[str, tuple[str, ...]] = {"cuda": ("cuda", "gpu"), "rocm": ("rocm", "gpu"), "llvm": ("cpu",)}

_TEMPLATES: dict[tuple[str, str], list[Template]] = {}


DOMINANT = 10  # a preference no template of another kind can beat by tuning (Template.preference)


def register(family: str, *anchor_kinds: str, priority: int = 0):
    """Class decorator: one instance serves every (family, anchor kind) given."""

    def deco(cls):
        inst = cls()
        inst.priority = priority
        for a in anchor_kinds:
            entries = _TEMPLATES.setdefault((family, a), [])
            entries.append(inst)
            entries.sort(key=lambda t: -t.priority)  # stable: equal priorities keep their order
        return cls

    return deco


# target family -> rules that may keep an elementwise/injective producer out of an anchor's
# kernel (prologue fusion): what a family's templates cannot read well as a computed operand
_PROLOGUE_RULES: dict[str, list[Callable[[Any, Any], bool]]] = {}


def register_prologue_rule(family: str):
    """Decorator for rule(candidate: tefuse.fusion.PrologueCandidate, target) -> bool; a
    candidate is fused only where every rule of the target's families says True."""

    def deco(fn):
        _PROLOGUE_RULES.setdefault(family, []).append(fn)
        return fn

    return deco


def prologue_policy(target, prologue=True):
    """What the fusion pass's `prologue` argument becomes for `target`: True, the target's rules
    (see register_prologue_rule) as a predicate; False or a caller's predicate, unchanged."""
    if prologue is not True:
        return prologue
    rules = [r for fam in families(target) for r in _PROLOGUE_RULES.get(fam, [])]
    if not rules:
        return True
    return lambda candidate: all(r(candidate, target) for r in rules)


def template_names() -> set[str]:
    """Names of every registered template, any family."""
    return {t.name for entries in _TEMPLATES.values() for t in entries}


def families(target) -> tuple[str, ...]:
    """The template families a target (or target kind name) looks through, in order."""
    kind = target if isinstance(target, str) else target.kind.name
    return FAMILIES.get(kind, (kind,))


def preload(target) -> None:
    """Every template of the target's families preloads (see Template.preload)."""
    fams = families(target)
    seen = set()
    for (fam, _), entries in _TEMPLATES.items():
        for t in entries:
            if fam in fams and id(t) not in seen:
                seen.add(id(t))
                t.preload()


def op_supported(target, anchor_kind: str, geometry, dtype: str, by_default: bool = False) -> bool:
    """Whether a template registered for `anchor_kind` itself (the generic '*' ones do not count)
    along the target's families builds an op of this geometry and dtype (by_default: one whose
    `forms_by_default` says the op is worth forming unasked)."""
    return any(t.supports(geometry, dtype, target) and (t.forms_by_default or not by_default)
               for fam in families(target) for t in _TEMPLATES.get((fam, anchor_kind), []))


def get_templates(target, anchor_kind: str) -> list[Template]:
    """Templates for the anchor kind along the target's families, else the generic ones ('*')."""
    for anchor in (anchor_kind, "*"):
        found = [t for fam in families(target) for t in _TEMPLATES.get((fam, anchor), [])]
        if found:
            return found
    return []
