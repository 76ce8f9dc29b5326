"""Einsum, lowered onto existing ops: a label summed out of one operand is a reduce_sum, two
operands contract as one batched `matmul` between transposes and reshapes (batch labels, then
each side's free labels, then the contracted ones) or, with nothing to sum, one broadcasting
`mul`; more operands pairwise from the left, and
the result is transposed to the output's order. The GEMM is then a tensor-core kernel wherever
a MatMul would be; the transposes and reshapes are its operands' reads.

Supported: any labels, `...` (numpy's right-aligned broadcasting of the dims it stands for),
implicit outputs (no `->`), a label repeated within one operand (a diagonal, `ii->i`; a trace,
`ii`): its dims moved last, flattened, and read with a stride of 1 + n + n^2...: a strided view,
computed inside whatever reads it. Refused with the equation named: a contracted label whose
sizes broadcast (1 against n), labels that do not fit the operands.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ....graph.ir import Node
from ..context import ImportContext, Unsupported
from ..registry import converter

_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


@dataclass
class _Operand:
    node: Node
    labels: list[str]  # one a dim; `...` dims are "0", "1"... (right-aligned across operands)


def _parse(eq: str, shapes: list[tuple[int, ...]]) -> tuple[list[list[str]], list[str]]:
    """(each operand's labels, the output's labels), `...` expanded; Unsupported on a malformed
    or unsupported equation."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise Unsupported(f"equation {eq!r} names {len(terms)} operand(s), the node has {len(shapes)}")
    if not all(_TERM.match(t) for t in terms) or (arrow and not _TERM.match(rhs)):
        raise Unsupported(f"equation {eq!r}: terms are letters with at most one '...'")
    ell = max((len(s) - len(t) + 3 for t, s in zip(terms, shapes) if "..." in t), default=0)
    dots = [str(k) for k in range(ell)]
    labels = []
    for t, s in zip(terms, shapes):
        head, _, tail = t.partition("...")
        n = len(s) - len(head) - len(tail)
        if n < 0 or ("..." not in t and n != 0):
            raise Unsupported(f"equation {eq!r}: term {t!r} does not fit an operand of shape {tuple(s)}")
        labels.append(list(head) + dots[ell - n:] + list(tail))
    if arrow:
        head, has_dots, tail = rhs.partition("...")
        out = list(head) + (dots if has_dots else []) + list(tail)
    else:  # implicit: the broadcast dims, then the labels seen once, in alphabetical order
        seen = [c for lab in labels for c in lab if not c.isdigit()]
        out = dots + sorted(c for c in set(seen) if seen.count(c) == 1)
    if len(set(out)) != len(out) or not set(out) <= {c for lab in labels for c in lab}:
        raise Unsupported(f"equation {eq!r}: output labels must be distinct labels of the operands")
    return labels, out


def _sizes(eq: str, ops: list[_Operand]) -> dict[str, int]:
    """Each label's size; `...` dims broadcast (numpy), named labels must agree."""
    size: dict[str, int] = {}
    for op in ops:
        for c, d in zip(op.labels, op.node.shape):
            have = size.get(c, d)
            if have != d and not (c.isdigit() and 1 in (have, d)):
                raise Unsupported(f"equation {eq!r}: label {c!r} has sizes {have} and {d}")
            size[c] = max(have, d)
    return size


def _diagonals(ctx: ImportContext, eq: str, op: _Operand) -> _Operand:
    """op with each label it repeats taken once: the diagonal of those dims."""
    while len(set(op.labels)) != len(op.labels):
        c = next(c for c in op.labels if op.labels.count(c) > 1)
        pos = [k for k, l in enumerate(op.labels) if l == c]
        rest = [k for k, l in enumerate(op.labels) if l != c]
        sizes = {op.node.shape[k] for k in pos}
        if len(sizes) != 1:
            raise Unsupported(f"equation {eq!r}: repeated label {c!r} has sizes {sorted(sizes)}")
        d, r = sizes.pop(), len(pos)
        perm = rest + pos
        x = op.node if perm == sorted(perm) else ctx.emit("transpose", [op.node], None, axes=tuple(perm))
        x = ctx.emit("reshape", [x], None, shape=tuple(op.node.shape[k] for k in rest) + (d ** r,))
        step = (d ** r - 1) // (d - 1) if d > 1 else 1  # the flat offset from (i, i, ..) to (i+1, i+1, ..)
        x = ctx.emit("slice", [x], None, starts=(0,), ends=(d ** r,), axes=(-1,), steps=(step,))
        op = _Operand(x, [op.labels[k] for k in rest] + [c])
    return op


def _sum_out(ctx: ImportContext, op: _Operand, keep: set[str]) -> _Operand:
    """The operand with its labels outside `keep` summed out."""
    gone = [k for k, c in enumerate(op.labels) if c not in keep]
    if not gone:
        return op
    node = ctx.emit("reduce_sum", [op.node], None, axes=tuple(gone), keepdims=False)
    return _Operand(node, [c for c in op.labels if c in keep])


def _arrange(ctx: ImportContext, op: _Operand, order: list[str], shape: tuple[int, ...]) -> Node:
    """op's dims permuted to `order`, then reshaped to `shape`."""
    perm = tuple(op.labels.index(c) for c in order)
    x = op.node if perm == tuple(range(len(perm))) else ctx.emit("transpose", [op.node], None, axes=perm)
    return x if tuple(x.shape) == tuple(shape) else ctx.emit("reshape", [x], None, shape=tuple(shape))


def _contract(ctx: ImportContext, eq: str, a: _Operand, b: _Operand, keep: set[str]) -> _Operand:
    """a and b multiplied and summed over their shared labels outside `keep`, as one batched
    matmul [batch..., M, K] @ [batch..., K, N]; the result's labels: batch, a's free, b's free."""
    a = _sum_out(ctx, a, keep | set(b.labels))
    b = _sum_out(ctx, b, keep | set(a.labels))
    batch = [c for c in a.labels if c in b.labels and c in keep]
    red = [c for c in a.labels if c in b.labels and c not in keep]
    a_free = [c for c in a.labels if c not in b.labels]
    b_free = [c for c in b.labels if c not in a.labels]
    da, db = dict(zip(a.labels, a.node.shape)), dict(zip(b.labels, b.node.shape))
    if any(da[c] != db[c] for c in red):
        raise Unsupported(f"equation {eq!r}: a summed label broadcasts (sizes 1 and n)")

    def prod(dims, labels):
        out = 1
        for c in labels:
            out *= dims[c]
        return out

    labels = batch + a_free + b_free
    if not red:  # nothing summed: a broadcasting product (an outer or elementwise one), no GEMM
        an = _arrange(ctx, a, batch + a_free, [da[c] for c in batch + a_free] + [1] * len(b_free))
        bn = _arrange(ctx, b, batch + b_free, [db[c] for c in batch] + [1] * len(a_free) + [db[c] for c in b_free])
        return _Operand(ctx.emit("mul", [an, bn]), labels)
    k = prod(da, red)
    an = _arrange(ctx, a, batch + a_free + red, [da[c] for c in batch] + [prod(da, a_free), k])
    bn = _arrange(ctx, b, batch + red + b_free, [db[c] for c in batch] + [k, prod(db, b_free)])
    y = ctx.emit("matmul", [an, bn])
    shape = [max(da[c], db[c]) for c in batch] + [da[c] for c in a_free] + [db[c] for c in b_free]
    if tuple(y.shape) != tuple(shape):
        y = ctx.emit("reshape", [y], None, shape=tuple(shape))
    return _Operand(y, labels)


@converter("Einsum", attrs=["equation"])
def _einsum(ctx, n):
    eq = str(n.attr("equation", ""))
    names = [i for i in n.inputs if i]
    ops = [_Operand(ctx.node(nm), []) for nm in names]
    labels, out = _parse(eq, [o.node.shape for o in ops])
    for op, lab in zip(ops, labels):
        op.labels = lab
    ops = [_diagonals(ctx, eq, op) for op in ops]
    _sizes(eq, ops)
    acc = ops[0]
    for k, nxt in enumerate(ops[1:], start=1):
        later = {c for o in ops[k + 1:] for c in o.labels}
        acc = _contract(ctx, eq, acc, nxt, set(out) | later)
    acc = _sum_out(ctx, acc, set(out))
    dims = dict(zip(acc.labels, acc.node.shape))
    return [_arrange(ctx, acc, out, [dims[c] for c in out])]
