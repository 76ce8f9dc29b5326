"""Template registry keyed by (target kind, anchor kind); several templates may serve one key."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tvm import s_tir

from tefuse.tune.space import Config, ConfigSpace


@dataclass
class KernelInfo:
    """What a template needs to know about one lowered fused group."""

    anchor_kind: str  # conv2d, depthwise_conv2d, dense, pool, reduce, softmax, injective
    anchor_block: Optional[str]  # the main reduction block, if any
    inline_blocks: list[str]  # intermediate stages to inline or cache (pad_temp, data_in...)
    reduce_blocks: list[str]  # every block with a reduction (anchor included)
    output_blocks: list[str]  # blocks writing the group's outputs
    attrs: dict[str, Any] = field(default_factory=dict)  # the anchor node's attrs
    out_shape: tuple[int, ...] = ()  # the anchor's (else the first output's) shape
    in_shapes: list[tuple[int, ...]] = field(default_factory=list)  # the anchor's inputs
    dtype: str = "float32"


class Template:
    """A schedule template: a knob space, a fallback config, and how to apply a config."""

    name = "template"

    def accepts(self, info: KernelInfo) -> bool:
        """Whether the template can schedule this group at all (a key may hold templates
        for a subset of its groups, e.g. non-grouped convs only); those that can't are skipped."""
        return True

    def preference(self, info: KernelInfo, target) -> int:
        """Rank among a key's templates when no tuning record exists (highest wins, then
        registration order): a measured rule of thumb for which untuned fallback is faster."""
        return 0

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        return ConfigSpace()

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        return space.get(0)

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        raise NotImplementedError


_TEMPLATES: dict[tuple[str, str], list[Template]] = {}


def register(target_kind: str, *anchor_kinds: str):
    def deco(cls):
        inst = cls()
        for a in anchor_kinds:
            _TEMPLATES.setdefault((target_kind, a), []).append(inst)
        return cls

    return deco


def get_templates(target_kind: str, anchor_kind: str) -> list[Template]:
    """Templates for the key, falling back to the generic ones registered under '*'."""
    kind = "cuda" if target_kind in ("cuda", "rocm") else target_kind
    return _TEMPLATES.get((kind, anchor_kind)) or _TEMPLATES.get((kind, "*"), [])
