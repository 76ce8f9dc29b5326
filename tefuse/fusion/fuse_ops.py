"""Operator fusion: partitions a graph's op nodes into groups that each become one kernel.

Follows Relay's FuseOps (post-dominator based, so a value with several consumers only
fuses where every path allows it), with three extensions:
- prologue fusion: injective producers of an anchor's input (pad, cast, normalise, layout
  change) join the anchor's group and are computed inside its input read, where the target's
  templates read that operand well (schedules.registry.register_prologue_rule); the row-wise
  norms, opaque otherwise, take one too (PROLOGUE_OPAQUE: BERT's embedding lookup and its adds
  in LayerNorm's kernel);
- multi-output elementwise groups: connected elementwise groups of one shape merge into one
  kernel with several outputs (an Adam step updates param, m and v in one launch);
- quantized outputs: a QuantizeLinear of an anchor group's value that is also read elsewhere
  (a residual block's output, read by the next residual add and, quantized, by the next convs)
  is written by that group's epilogue as a second output, instead of by a kernel of its own or
  inside the consuming product's tile loads (which would recompute it and keep them off cp.async);
  a LayerNorm's kernel writes the codes of its rows the same way (QUANTIZED_OUTPUT_OPAQUE: a
  transformer's int8 / float8 Linear after each norm, its rows also read by the residual add);
  an anchor's epilogue also stops at codes that a residual add reads dequantized where the add's
  other operand ends another anchor's epilogue (a projection shortcut against its block's body),
  so its kernel stores the codes and the dequantize joins the add in the other kernel.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from ..graph.ir import CONST, Graph, Node
from ..ops import OpPattern
from .dominator import DomNode, post_dominator_tree, same_shape

log = logging.getLogger(__name__)

ANCHOR_PATTERNS = (OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.COMM_REDUCE)
# anchor kinds of opaque ops (no epilogue) that still compute an injective prologue inside their
# input read: layer_norm and group_norm_rows read each row three times (sum, centred squares,
# output), so a cheap producer (an embedding lookup and its adds) is recomputed per read instead
# of written by a kernel of its own and read back
PROLOGUE_OPAQUE = ("norm",)
# anchor kinds of opaque ops whose kernel also writes a QuantizeLinear of its output (the
# quantized-outputs extension): LayerNorm's rows, quantized for the int8 / float8 Linear after it
QUANTIZED_OUTPUT_OPAQUE = ("norm",)
MAX_GROUP_SIZE = 256


@dataclass(frozen=True, eq=False)
class PrologueCandidate:
    """A producer group that prologue fusion would compute inside an anchor's input read."""

    anchor: Node
    producers: tuple[Node, ...]  # the producer group's ops (elementwise ones may have joined a transpose)

    @property
    def computes(self) -> bool:
        """Arithmetic (an elementwise op: a cast, LayerNorm's normalisation), not only data
        movement (reshapes, transposes, pads: a copy's index)."""
        return any(p.pattern <= OpPattern.BROADCAST for p in self.producers)


# whether a candidate prologue joins its anchor; True fuses every one
ProloguePolicy = Union[bool, Callable[[PrologueCandidate], bool]]


@dataclass(eq=False)
class _UF:
    pattern: OpPattern
    parent: Optional["_UF"] = None
    size: int = 1

    def root(self) -> "_UF":
        r = self
        while r.parent is not None:
            r = r.parent
        node = self
        while node.parent is not None and node.parent is not r:
            node.parent, node = r, node.parent
        return r


@dataclass(eq=False)
class FusedGroup:
    """A set of nodes compiled into one kernel (one PrimFunc)."""

    index: int
    nodes: list[Node]  # topological
    inputs: list[Node]  # values read from outside: graph inputs, constants, other groups
    outputs: list[Node]  # values needed outside the group (or graph outputs)
    pattern: OpPattern
    anchor: Optional[Node] = None
    prologue: list[Node] = field(default_factory=list)

    @property
    def name(self) -> str:
        ops = [n.op for n in self.nodes]
        head = "_".join(ops[:6]) + ("_etc" if len(ops) > 6 else "")
        return f"g{self.index}_{head}"

    @property
    def anchor_kind(self) -> str:
        if self.anchor is not None:
            return self.anchor.anchor_kind or "opaque"
        return "injective"

    def describe(self) -> str:
        outs = ", ".join(o.name for o in self.outputs)
        return f"{self.name}: [{', '.join(n.op for n in self.nodes)}] -> {outs}"


class _Fuser:
    def __init__(self, graph: Graph, prologue: ProloguePolicy, multi_output: bool,
                 bare_anchors: frozenset = frozenset()):
        self.graph = graph
        self.bare_anchors = bare_anchors
        self.ops = [n for n in graph.nodes if n.is_op]
        self.consumers = {n: [c for c in cs if c.is_op] for n, cs in graph.consumers().items()}
        self.readers = graph.reader_counts()  # a graph output's caller is a reader too
        self.groups = {n: _UF(n.pattern) for n in self.ops}
        self.order = {id(n): k for k, n in enumerate(self.ops)}
        self.tree = post_dominator_tree(graph, self.ops, self.consumers)
        self.prologue = prologue
        self.multi_output = multi_output

    # -- Relay's path checks -------------------------------------------------------------
    def _check_path(self, src: Node, sink: Node, fcond: Callable[[OpPattern, bool], bool],
                    node_ok: Optional[Callable[[Node], bool]] = None) -> bool:
        seen: set[int] = set()

        def visit(n: Node) -> bool:
            if id(n) in seen:
                return True
            seen.add(id(n))
            if not fcond(self.groups[n].root().pattern, n is sink) or (node_ok is not None and not node_ok(n)):
                return False
            if n is sink:
                return True
            return all(visit(c) for c in self.consumers[n])

        return all(visit(c) for c in self.consumers[src])

    def _commit(self, src: Node, sink: Node) -> None:
        target = self.groups[sink]
        seen: set[int] = set()

        def visit(n: Node) -> None:
            if n is sink or id(n) in seen:
                return
            seen.add(id(n))
            self._merge(self.groups[n], target)
            for c in self.consumers[n]:
                visit(c)

        visit(src)

    @staticmethod
    def _merge(child: _UF, parent: _UF) -> None:
        child, parent = child.root(), parent.root()
        if child is parent:
            return
        parent.size += child.size
        child.parent = parent
        parent.pattern = max(parent.pattern, child.pattern)

    def _size_ok(self, a: Node, b: Node) -> bool:
        return self.groups[a].root().size + self.groups[b].root().size <= MAX_GROUP_SIZE

    # -- phases ---------------------------------------------------------------------------
    def run(self) -> list[FusedGroup]:
        for phase in range(3):
            for n in self.ops:
                self._visit(n, phase)
            if phase == 0:
                self._quantized_outputs()
        groups = self._collect()
        if self.multi_output:
            groups = self._merge_elementwise(groups)
        return groups

    def _visit(self, n: Node, phase: int) -> None:
        g = self.groups[n].root()
        dom: DomNode = self.tree[n]
        if g.pattern == OpPattern.OPAQUE or dom.parent is None:
            return
        sink = dom.parent.node
        if self.groups[sink].root() is g or not self._size_ok(n, sink):
            return
        if g.pattern in ANCHOR_PATTERNS:
            if n.name in self.bare_anchors:
                return
            # phase 0: an anchor takes its elementwise/broadcast epilogue
            if phase == 0 and dom.pattern == OpPattern.ELEMWISE:
                # (not past codes that another anchor's epilogue reads dequantized, such as a
                # projection shortcut's: they are this kernel's output; _codes_read_elsewhere)
                if self._check_path(n, sink, lambda k, is_sink: k <= OpPattern.BROADCAST,
                                    lambda m: not self._codes_read_elsewhere(m)):
                    self._commit(n, sink)
            elif phase == 0 and self._moves_rows_whole(n, sink):
                # a GEMM's rows written to permuted places (a transformer's [L*B, E] output back
                # to [B, L, E]): each row stays whole and contiguous, so the epilogue's stores stay
                # vectors; its residual add then joins the epilogue too, no kernel of its own
                def fcond(k, is_sink):
                    return k <= OpPattern.BROADCAST or (is_sink and k == OpPattern.INJECTIVE)
                if self._check_path(n, sink, fcond):
                    self._commit(n, sink)
            elif phase == 0 and _to_nchw(sink) and self._anchor_nhwc(n):
                # a layout change back to NCHW (graph/layout.py) is written by the NHWC
                # anchor's store, as its last epilogue step
                def fcond(k, is_sink):
                    return k <= OpPattern.BROADCAST or (is_sink and k == OpPattern.INJECTIVE)
                if self._check_path(n, sink, fcond):
                    self._commit(n, sink)
        elif g.pattern <= OpPattern.BROADCAST:
            # elementwise producers fuse into injective, reduce or anchor consumers
            def fcond(k, is_sink):
                return k <= OpPattern.INJECTIVE or (is_sink and k in ANCHOR_PATTERNS)
            if phase == 1 and (dom.pattern <= OpPattern.INJECTIVE or dom.pattern == OpPattern.COMM_REDUCE):
                if self._check_path(n, sink, fcond):
                    self._commit(n, sink)
            elif phase == 2 and self._takes_prologue(sink) and self._prologue_ok(n, sink):
                # prologue: an elementwise producer (cast, scale, normalise) of an anchor's
                # input is computed inside the anchor's input read, like injective ones below
                if self._check_path(n, sink, _prologue_path):
                    self._commit(n, sink)
        elif g.pattern == OpPattern.INJECTIVE:
            if phase == 1 and dom.pattern <= OpPattern.INJECTIVE:
                if self._check_path(n, sink, lambda k, is_sink: k <= OpPattern.INJECTIVE):
                    self._commit(n, sink)
            elif phase == 2 and self._takes_prologue(sink) and self._prologue_ok(n, sink):
                # beyond Relay: injective producer computed inside the anchor's input read
                if self._check_path(n, sink, _prologue_path):
                    self._commit(n, sink)

    def _moves_rows_whole(self, n: Node, sink: Node) -> bool:
        """Whether sink, a data movement after n's row-anchored group, keeps its rows whole
        (_keeps_rows, for GEMMs and attention; _merges_heads, for attention)."""
        if _keeps_rows(sink):
            return self._anchor_kind(n) in ROW_ANCHORS
        return _merges_heads(sink) and self._anchor_kind(n) == "attention"

    def _codes_read_elsewhere(self, n: Node) -> bool:
        """Whether n dequantizes the codes a quantize_linear just made for an elementwise op (a
        residual add) whose other operand ends another anchor's epilogue, which takes that op
        instead: this anchor's epilogue then stops at the codes, which its kernel stores (a byte an
        element), and the dequantize joins the other kernel, rather than ending this epilogue and
        storing the dequantized float value. A calibrated build's projection shortcut against its
        block's body (graph/calibration.py); in an onnxruntime QDQ model, where both operands are
        dequantized codes of such epilogues, the later one in the graph (the earlier takes the
        op). Where the other operand is no anchor's (an identity shortcut's codes, also read by
        the next conv; SiLU's sigmoid), nothing changes: the op has no other kernel to join."""
        if n.op != "dequantize_linear" or n.inputs[0].op != "quantize_linear" or self.readers[id(n)] != 1 \
                or not self.consumers[n]:
            return False
        c = self.consumers[n][0]
        others = [i for i in c.inputs if i is not n and i.op != CONST]
        if not (c.pattern <= OpPattern.BROADCAST and same_shape(c.shape, n.shape) and len(others) == 1):
            return False
        o = others[0]
        return (same_shape(o.shape, c.shape) and self._ends_anchor_epilogue(o)
                and (o.op != "dequantize_linear" or self.order[id(o)] < self.order[id(n)]))

    def _ends_anchor_epilogue(self, o: Node) -> bool:
        """Whether o is read once, at the end of a chain of elementwise ops each read once (reading
        nothing else but constants) from an anchor: the epilogue that anchor's group takes."""
        while o.is_op and self.readers[id(o)] == 1:
            if o.pattern in ANCHOR_PATTERNS:
                return True
            computed = [i for i in o.inputs if i.op != CONST]
            if o.pattern > OpPattern.BROADCAST or len(computed) != 1:
                return False
            o = computed[0]
        return False

    def _quantized_outputs(self) -> None:
        """Each elementwise chain from an anchor group's output value to a quantize_linear (a
        saturating cast, the quantize), reading nothing else but constants, joins that group."""
        for n in self.ops:
            root = self.groups[n].root()
            if n.name in self.bare_anchors or not (root.pattern in ANCHOR_PATTERNS or
                                                   n.anchor_kind in QUANTIZED_OUTPUT_OPAQUE):
                continue  # (of a norm's group, only the norm's own value is read outside it)
            for c in self.consumers[n]:
                chain = _quantize_chain(n, c, self.consumers)
                if chain and all(self.groups[m].root().size == 1 for m in chain) and \
                        root.size + len(chain) <= MAX_GROUP_SIZE:
                    for m in chain:
                        self._merge(self.groups[m], root)

    def _takes_prologue(self, sink: Node) -> bool:
        """Whether sink's group computes a producer inside its anchor's input read: an anchor
        pattern's group, or an opaque one whose anchor kind is in PROLOGUE_OPAQUE."""
        root = self.groups[sink].root()
        if root.pattern in ANCHOR_PATTERNS:
            return True
        anchor = self._anchor(sink)
        return root.pattern == OpPattern.OPAQUE and anchor is not None and anchor.anchor_kind in PROLOGUE_OPAQUE

    def _prologue_ok(self, n: Node, sink: Node) -> bool:
        if isinstance(self.prologue, bool):
            return self.prologue
        anchor, mine = self._anchor(sink), self.groups[n].root()
        ok = self.prologue(PrologueCandidate(anchor, tuple(m for m in self.ops if self.groups[m].root() is mine)))
        if not ok:
            log.debug("prologue %s kept out of %s's kernel", n.name, anchor.name)
        return ok

    def _anchor(self, n: Node) -> Optional[Node]:
        """The anchor op of n's group, an opaque op included (a group holds at most one), else None."""
        root = self.groups[n].root()
        return next((m for m in self.ops if self.groups[m].root() is root and _is_anchor(m)), None)

    def _anchor_kind(self, n: Node) -> Optional[str]:
        anchor = self._anchor(n)
        return anchor.anchor_kind if anchor is not None else None

    def _anchor_nhwc(self, n: Node) -> bool:
        anchor = self._anchor(n)
        return anchor is not None and anchor.attrs.get("layout") == "NHWC"

    # -- result ---------------------------------------------------------------------------
    def _collect(self) -> list[FusedGroup]:
        members: dict[int, list[Node]] = {}
        order: list[int] = []
        for n in self.ops:
            r = id(self.groups[n].root())
            if r not in members:
                members[r] = []
                order.append(r)
            members[r].append(n)
        return [self._make_group(k, members[r]) for k, r in enumerate(order)]

    def _make_group(self, index: int, nodes: list[Node]) -> FusedGroup:
        inside = set(map(id, nodes))
        graph_outs = set(map(id, self.graph.outputs))
        inputs: list[Node] = []
        for n in nodes:
            for i in n.inputs:
                if id(i) not in inside and all(i is not x for x in inputs):
                    inputs.append(i)
        outputs = [n for n in nodes if id(n) in graph_outs
                   or any(id(c) not in inside for c in self.consumers[n])]
        anchors = [n for n in nodes if _is_anchor(n)]
        if len(anchors) > 1:  # invariant of the rules above
            raise AssertionError(f"group with several anchors: {[a.name for a in anchors]}")
        anchor = anchors[0] if anchors else None
        pattern = max(n.pattern for n in nodes)
        prologue = []
        if anchor is not None:  # what the anchor reads, computed in the group (not every node
            # before it: a residual add's other operand may come first in the graph's order)
            read, stack = set(), list(anchor.inputs)
            while stack:
                i = stack.pop()
                if id(i) in inside and id(i) not in read:
                    read.add(id(i))
                    stack.extend(i.inputs)
            prologue = [n for n in nodes if id(n) in read]
        return FusedGroup(index, nodes, inputs, outputs, pattern, anchor, prologue)

    def _merge_elementwise(self, groups: list[FusedGroup]) -> list[FusedGroup]:
        """Merge a pure-elementwise group into a same-shape elementwise consumer group."""
        changed = True
        while changed:
            changed = False
            owner = {id(n): g for g in groups for n in g.nodes}
            for a in groups:
                for b in groups:
                    if a is b or not self._mergeable(a, b, owner, groups):
                        continue
                    nodes_ids = set(map(id, a.nodes + b.nodes))
                    nodes = [n for n in self.ops if id(n) in nodes_ids]
                    merged = self._make_group(0, nodes)
                    groups = [g for g in groups if g is not a and g is not b]
                    groups.append(merged)
                    groups = self._reindex(groups)
                    changed = True
                    break
                if changed:
                    break
        return groups

    def _mergeable(self, a: FusedGroup, b: FusedGroup, owner, groups) -> bool:
        if a.pattern > OpPattern.BROADCAST or b.pattern > OpPattern.BROADCAST:
            return False
        shape = b.outputs[0].shape
        if not all(same_shape(o.shape, shape) for o in a.outputs + b.outputs):
            return False
        if not any(owner.get(id(i)) is a for i in b.inputs):
            return False  # only producer -> consumer pairs
        if len(a.nodes) + len(b.nodes) > MAX_GROUP_SIZE:
            return False
        # no path a -> other group -> b, or merging would make a cycle
        succ = {id(g): {id(owner[id(c)]) for n in g.nodes for c in self.consumers[n]
                        if owner.get(id(c)) is not g} for g in groups}
        stack = [s for s in succ[id(a)] if s != id(b)]
        seen = set()
        while stack:
            s = stack.pop()
            if s == id(b):
                return False
            if s not in seen:
                seen.add(s)
                stack.extend(succ[s])
        return True

    def _reindex(self, groups: list[FusedGroup]) -> list[FusedGroup]:
        """Topological order of the groups (Kahn), ties broken by graph order."""
        pos = {id(n): k for k, n in enumerate(self.ops)}
        owner = {id(n): g for g in groups for n in g.nodes}
        preds = {id(g): {id(owner[id(i)]) for i in g.inputs if id(i) in owner} for g in groups}
        done: set[int] = set()
        ordered: list[FusedGroup] = []
        pending = sorted(groups, key=lambda g: min(pos[id(n)] for n in g.nodes))
        while pending:
            g = next(g for g in pending if preds[id(g)] <= done)
            pending.remove(g)
            done.add(id(g))
            ordered.append(g)
        return [self._make_group(k, g.nodes) for k, g in enumerate(ordered)]


def _is_anchor(n: Node) -> bool:
    """An op that is its group's kernel: an anchor pattern's, or an opaque one."""
    return n.pattern in ANCHOR_PATTERNS or n.pattern == OpPattern.OPAQUE


def _quantize_chain(src: Node, first: Node, consumers: dict) -> list[Node]:
    """The elementwise nodes from `first` (a consumer of `src`) to a quantize_linear, each the
    only consumer of the one before and reading nothing but it and constants; [] if none."""
    chain, prev, n = [], src, first
    while n.pattern <= OpPattern.BROADCAST and same_shape(n.shape, src.shape) and all(
            i is prev or i.op == CONST for i in n.inputs):
        chain.append(n)
        if n.op == "quantize_linear":
            return chain
        nxt = consumers[n]
        if len(nxt) != 1:
            break
        prev, n = n, nxt[0]
    return []


def _prologue_path(k: OpPattern, is_sink: bool) -> bool:
    """The path from a prologue to the group taking it (checked to take one: _takes_prologue)
    holds injective ops only."""
    return k <= OpPattern.INJECTIVE or is_sink


# anchors whose output rows (last axis) are written whole by their epilogue's stores: GEMMs, and
# attention (its head merge, [B, H, L, D] -> [L, B, H, D], or to [B, L, H*D]: _merges_heads,
# written by its kernel with what follows, a quantized model's QuantizeLinear before the output
# projection)
ROW_ANCHORS = ("dense", "attention")


def _merges_heads(n: Node) -> bool:
    """A reshape that merges the last two axes over static shapes: attention's heads merged,
    [B, L, H, D] -> [B, L, H*D], whole rows laid end to end at the same addresses. Attention only:
    its head dim is never padded (its templates take whole 16-wide dims), where a GEMM's padded
    columns would land on the next row once its store is bounded by the merged index alone."""
    if n.op != "reshape" or not n.inputs:
        return False
    src = n.inputs[0].shape
    return len(src) >= 2 and all(isinstance(d, int) for d in (*src, *n.shape)) and \
        tuple(n.shape) == (*src[:-2], src[-2] * src[-1])


def _keeps_rows(n: Node) -> bool:
    """A reshape, transpose, squeeze or expand_dims that leaves the last axis where it is, whole:
    it only moves rows."""
    if not n.inputs or n.op not in ("reshape", "transpose", "squeeze", "expand_dims"):
        return False
    src = n.inputs[0].shape
    if not src or not n.shape or src[-1] != n.shape[-1]:
        return False
    if n.op == "transpose":
        axes = tuple(n.attrs.get("axes") or reversed(range(len(src))))
        return axes[-1] % len(src) == len(src) - 1
    if n.op in ("squeeze", "expand_dims"):
        rank = len(src) if n.op == "squeeze" else len(n.shape)
        return all(a % rank != rank - 1 for a in (n.attrs.get("axes") or ()))
    return True


def _to_nchw(n: Node) -> bool:
    """A transpose NHWC -> NCHW (what graph/layout.py puts before NCHW readers and outputs)."""
    return n.op == "transpose" and tuple(n.attrs.get("axes") or ()) == (0, 3, 1, 2)


def fuse_graph(graph: Graph, *, fuse: bool = True, prologue: ProloguePolicy = True,
               multi_output: bool = True, bare_anchors: frozenset = frozenset()) -> list[FusedGroup]:
    """Fused groups of `graph` in an order that respects their dependencies.

    fuse=False gives one group per op: the unfused baseline that benchmarks compare with.
    prologue: True fuses every prologue, False none, a function decides each candidate (the
    driver passes the target's rules, schedules.prologue_policy).
    bare_anchors: names of anchor ops that take no epilogue (the driver's retry of a group no
    template could schedule whole).
    """
    fuser = _Fuser(graph, prologue, multi_output, bare_anchors)
    groups = fuser._reindex(fuser.run() if fuse else fuser._collect())
    log.debug("fused %d ops into %d groups", sum(len(g.nodes) for g in groups), len(groups))
    return groups
