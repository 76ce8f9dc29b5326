"""Where a GEMM's epilogue sends an index past the end of its rows or columns.

A template whose tiles do not divide M (or N) covers padding rows (columns) that the product
masks; an epilogue computed under the tile then visits them too, with the epilogue's own bounds.
When a reshape merges the row axis with a more significant axis (Swin's window reverse merges a
window's 7 rows with the window row: [16, 49, C] -> [1, 4, 4, 7, 7, C] -> [1, 28, 28, C]), a
padding row's index is a real row of the next entry, so the epilogue would write it from an
accumulator never computed. A transpose, a reshape that keeps the axis outermost in its group, or
elementwise ops keep such an index out of range, where the bounds mask it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..ops import OpPattern
from .fuse_ops import FusedGroup

# same element count, indices regrouped: followed axis by axis
_RESHAPES = frozenset({"reshape", "flatten", "squeeze", "expand_dims"})


@dataclass(frozen=True)
class Spill:
    """Whether a padded row (`rows`) or column (`cols`) index of the anchor's output can land on
    another element of the group's outputs."""

    rows: bool = False
    cols: bool = False


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> Optional[list[tuple[list[int], list[int]]]]:
    """The axes of `src` and `dst` that a row-major reshape maps onto each other, as (src axes,
    dst axes) groups of equal products, in order. None when the element counts differ."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        ia, jb, pa, pb = [], [], 1, 1
        if i < len(src):
            pa, i = pa * src[i], i + 1
            ia.append(i - 1)
        if j < len(dst):
            pb, j = pb * dst[j], j + 1
            jb.append(j - 1)
        while pa != pb:
            if pa < pb and i < len(src):
                pa, i = pa * src[i], i + 1
                ia.append(i - 1)
            elif pb < pa and j < len(dst):
                pb, j = pb * dst[j], j + 1
                jb.append(j - 1)
            else:
                return None
        groups.append((ia, jb))
    return groups


def _through_reshape(axis: int, src: Sequence[int], dst: Sequence[int]) -> tuple[Optional[int], bool]:
    """(the dst axis holding `axis`'s most significant part, whether it merges with a more
    significant src axis of extent > 1)."""
    groups = reshape_groups(src, dst)
    if groups is None:
        return None, True
    for ia, jb in groups:
        if axis in ia:
            merged = any(src[k] > 1 for k in ia if k < axis)
            outer = next((k for k in jb if dst[k] > 1), jb[0] if jb else None)
            return outer, merged
    return None, True


def _follow(axis: Optional[int], node, src_shape: Sequence[int]) -> tuple[Optional[int], bool]:
    """Where `axis` of `node`'s tracked input goes in its output, and whether it spills."""
    if axis is None:
        return None, False
    out = tuple(node.shape)
    if node.pattern <= OpPattern.BROADCAST:  # elementwise: leading dims may be added by broadcasting
        return axis + len(out) - len(src_shape), False
    if node.op == "transpose":
        perm = node.attrs.get("axes") or list(range(len(src_shape)))[::-1]
        perm = [p % len(src_shape) for p in perm]
        return perm.index(axis), False
    if node.op in _RESHAPES:
        return _through_reshape(axis, src_shape, out)
    return None, True  # slices, concats, pads, gathers...: assume the worst


def padding_spill(group: FusedGroup) -> Spill:
    """Spill of the anchor's last two axes (a GEMM's rows and columns) through the epilogue."""
    a = group.anchor
    if a is None or len(a.shape) < 2:
        return Spill()
    rank = len(a.shape)
    where: dict[int, tuple[Optional[int], Optional[int]]] = {id(a): (rank - 2, rank - 1)}
    rows = cols = False
    for n in group.nodes[group.nodes.index(a) + 1:]:
        src = next((i for i in n.inputs if id(i) in where), None)
        if src is None:
            continue
        r, c = where[id(src)]
        r, spill_r = _follow(r, n, src.shape)
        c, spill_c = _follow(c, n, src.shape)
        rows, cols = rows or spill_r, cols or spill_c
        where[id(n)] = (r, c)
    return Spill(rows, cols)
