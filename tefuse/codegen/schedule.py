"""Choosing and applying a schedule for a lowered group: best tuning record, else a cost model's
pick (a ConfigPredictor: the transfer model of tune/transfer.py, which the driver passes in, as
tune sits above codegen), else the template's fallback."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Protocol, Sequence

import tvm

from .. import schedules
from ..errors import BuildError, SymbolicExtentError, UnschedulableGroup
from ..options import DEFAULT, BuildOptions
from ..fusion.workload import structure_key, workload_key
from ..schedules import KernelInfo, Template
from ..schedules.space import Config, ConfigSpace
from ..target import target_key
from .compile import KernelSpec, schedule_kernel
from .lower import LoweredGroup

log = logging.getLogger(__name__)


class BestRecordSource(Protocol):
    """What build needs from a performance database."""

    def best(self, workload: str, target: str) -> Optional[object]: ...


class ConfigPredictor(Protocol):
    """What build needs from a cost model: the config it expects to be fastest for a workload
    no record covers, among those `space` holds, or None where it has no opinion (no records of
    the template on the target). `templates`: a template's name and its record_names."""

    def pick(self, workload: str, target: str, templates: Sequence[str], space: ConfigSpace,
             fallback: Config) -> Optional[Config]: ...


#: ScheduleChoice.source values (CompiledKernel.config_source): a tuning record's config, a cost
#: model's pick for a workload no record covers, the template's rule-based config
SOURCES = ("tuned", "predicted", "fallback")


@dataclass
class ScheduleChoice:
    template: Template
    config: Config
    source: str  # one of SOURCES
    options: BuildOptions = DEFAULT  # the build options it was chosen under (the kernel cache keys by them)
    # the workload whose tuning record chose it, where that is not the kernel's own (a size
    # bucket's variant reads the records of its group at fixed sizes): such a config may not
    # apply to the symbolic kernel, and then gives way to the fallback
    record_key: Optional[str] = None


def find_template(target: tvm.target.Target, anchor_kind: str, name: Optional[str] = None,
                  info: Optional[KernelInfo] = None, options: BuildOptions = DEFAULT,
                  where: str = "") -> list[Template]:
    """Templates for the anchor kind; with `info`, those that accept it, most preferred first
    (the first is the untuned fallback choice). A kernel with symbolic extents (a build over dim
    ranges) takes only templates that take them (Template.takes_symbolic); none is one
    SymbolicExtentError line naming `where` (the group and its anchor)."""
    temps = schedules.get_templates(target, anchor_kind)
    if info is not None:
        temps = sorted((t for t in temps if t.accepts(info)), key=lambda t: -t.preference(info, target, options))
    if info is not None and info.symbolic and temps:
        fixed = [t.name for t in temps]
        temps = [t for t in temps if t.takes_symbolic(info)]
        if not temps:
            raise SymbolicExtentError(
                f"{where or 'kernel'}: no {target.kind.name} template for anchor {anchor_kind!r} takes a "
                f"symbolic extent ({', '.join(fixed)} size their tiles from fixed shapes); build it with fixed "
                f"shapes (--shape) or batch profiles (--batch)")
    if not temps:
        split = info is not None and info.attrs.get("split_k", 1) > 1
        hint = "; a split-K product takes only the tensor-core template (build with split_k=False)" if split else ""
        raise BuildError(f"no schedule template for target {target.kind.name!r}, anchor {anchor_kind!r}{hint}")
    if name is not None:
        temps = [t for t in temps if t.name == name or name in t.record_names]
    return temps


def choose_schedule(lowered: LoweredGroup, target: tvm.target.Target,
                    db: Optional[BestRecordSource] = None, options: BuildOptions = DEFAULT,
                    predictor: Optional[ConfigPredictor] = None,
                    record_key: Optional[str] = None, record_structure: Optional[str] = None) -> ScheduleChoice:
    """The fastest record measured under `options` that fits a template (the kernel's own or one
    of a kernel of its structure, fusion.workload.structure_key: `_records`), else the most
    preferred template's config that `predictor` picks (with options.transfer), else that
    template's fallback config. record_key: a workload whose records are tried before the
    kernel's own (a symbolic kernel's group at its size bucket's sizes: the records of the same
    group at fixed sizes, fusion.workload.workload_key(group, sizes)); record_structure: the
    same for its structure (structure_key(group, sizes)), tried before the kernel's own
    structure."""
    info = lowered.info
    key = workload_key(lowered.group)
    anchor = lowered.group.anchor
    where = f"group {lowered.group.name}" + (f" (anchor {anchor.name!r}, {anchor.op})" if anchor is not None else "")
    if db is not None:
        recs = _records(db, target_key(target), [(record_key, record_structure),
                                                 (key, structure_key(lowered.group))])
        changed = options.changed()
        for found_under, rec in recs:  # fastest first: a record that does not fit never masks the next one
            if getattr(rec, "options", {}) != changed:  # measured under other options
                continue
            temps = find_template(target, info.anchor_kind, rec.template, info=info, options=options, where=where)
            if not temps:
                log.warning("tuning record for %s names template %s, which does not serve this group "
                            "(any more); ignoring it", rec.workload, rec.template)
            for t in temps:
                space = t.space(info, target)
                index = space.find(rec.config)
                if index is not None:
                    return ScheduleChoice(t, space.get(index), "tuned", options,
                                          found_under if found_under != key else None)
            if temps:
                log.warning("tuning record for %s does not fit template %s; ignoring it", rec.workload, rec.template)
    t = find_template(target, info.anchor_kind, info=info, options=options, where=where)[0]
    space = t.space(info, target)
    fallback = t.fallback(info, target, space)
    if predictor is not None and options.transfer:
        picked = predictor.pick(key, target_key(target), (t.name, *t.record_names), space, fallback)
        if picked is not None:
            log.log(logging.INFO - 5, "no tuning record for %s on %s: %s #%d predicted (fallback #%d)",
                    key, target_key(target), t.name, picked.index, fallback.index)
            return ScheduleChoice(t, picked, "predicted", options)
    if target.kind.name != "llvm":
        # per kernel, so below INFO (`tefuse -v` shows it); build() logs the tuned/fallback count
        log.log(logging.INFO - 5, "no tuning record for %s on %s: fallback config of %s", key,
                target_key(target), t.name)
    return ScheduleChoice(t, fallback, "fallback", options)


def _records(db, target: str, pairs) -> list:
    """(key found under, record) in the order choose_schedule tries them: for each (workload,
    structure) pair, a bucket's sizes first, the workload's records and those of the other
    workloads of its structure together, fastest first (the workload's own on ties): kernels of
    one structure differ only in their folded constants, so their measurements compare, and a
    record of the kernel's own never shadows a faster config measured on its like."""
    ranked = getattr(db, "ranked", None)
    by_structure = getattr(db, "ranked_structure", None)
    keys = {k for k, _ in pairs if k is not None}
    out = []
    for k, s in pairs:
        own = [] if k is None else [(k, r) for r in (ranked(k, target) if ranked is not None else
                                                     [r for r in [db.best(k, target)] if r is not None])]
        alike = [(s, r) for r in by_structure(s, target) if r.workload not in keys] \
            if by_structure is not None and s is not None else []
        out += sorted(own + alike, key=lambda kr: kr[1].median_cost) if alike else own  # stable: own first on ties
    return out


def kernel_spec(lowered: LoweredGroup, choice: ScheduleChoice) -> KernelSpec:
    return KernelSpec(lowered.group.name, lowered.func, lowered.info, choice.template, choice.config)


def apply_schedule(lowered: LoweredGroup, target: tvm.target.Target, choice: ScheduleChoice) -> tvm.IRModule:
    """The chosen config applied to a lowered group, checked against the target's limits."""
    return schedule_kernel(kernel_spec(lowered, choice), target)


def apply_choice(lowered: LoweredGroup, target: tvm.target.Target,
                 choice: ScheduleChoice) -> tuple[tvm.IRModule, ScheduleChoice]:
    """apply_schedule, and for an untuned config that does not apply, the template's
    alternatives in turn (Template.fallback_alternatives); the choice returned is the one
    applied. A predicted config that does not apply gives way to the fallback (and its
    alternatives), and so does one tuned for another workload (ScheduleChoice.record_key). A
    config tuned for this kernel that does not apply is an error: its record says it did."""
    try:
        return apply_schedule(lowered, target, choice), choice
    except BuildError as first:
        if choice.source == "predicted" or (choice.source == "tuned" and choice.record_key is not None):
            space = choice.template.space(lowered.info, target)
            fallback = ScheduleChoice(choice.template, choice.template.fallback(lowered.info, target, space),
                                      "fallback", choice.options)
            log.info("%s: %s config #%d of %s does not apply (%s); taking the fallback", lowered.group.name,
                     "predicted" if choice.source == "predicted" else f"{choice.record_key}'s tuned",
                     choice.config.index, choice.template.name,
                     str(first).split(": ", 1)[-1])
            return apply_choice(lowered, target, fallback)
        if choice.source != "fallback":
            raise
        space = choice.template.space(lowered.info, target)
        for cfg in choice.template.fallback_alternatives(lowered.info, target, space, choice.config):
            alt = ScheduleChoice(choice.template, cfg, "fallback", choice.options)
            try:
                mod = apply_schedule(lowered, target, alt)
            except BuildError:
                continue
            log.info("%s: fallback config #%d of %s does not apply; took #%d instead (%s)",
                     lowered.group.name, choice.config.index, choice.template.name, cfg.index,
                     str(first).split(": ", 1)[-1])
            return mod, alt
        raise UnschedulableGroup(str(first)) from first
