"""Which loops of a scheduled block may be vectorized, and how wide, judged by evaluating the
block's index expressions over the loop's iterations with numpy (TVM 0.27 exposes no
expression evaluator or substituter, and its simplifier cannot prove `(8a + lane) % 192 // 64`
constant across lanes): whether the lanes of a vector read consecutive, aligned elements, and
whether a boolean (a select's condition) differs between them, which TVM's CUDA codegen cannot
print beyond 4 lanes. Shared by the tensor-core and window-pool templates."""
from __future__ import annotations

from typing import Optional

import numpy as np
from tvm import s_tir, tirx

from ...ops.value import expr_dtype as _dtype  # a Var's dtype may raise (TVM 0.27)
from ...ops.value import is_if_then_else


# sizes each symbolic dim (a dim bound at run time) takes in turn where lanes are judged: the
# lanes must line up at every one of them
SYMBOLIC_PROBES = (1, 5, 64)
# the longest loop whose iterations are evaluated (arrays of this many int64 a block iterator):
# a longer one (the last axis of a tensor past 2^31 elements, 2^30 long) is judged not to take
# vectors, as an index the evaluator does not know is, instead of evaluating gigabytes of indices
MAX_EVALUATED = 1 << 20


def lane_envs(sch, block_rv, loop_rv):
    """(the block's realize, [env]) where each env maps the block's iterator names to numpy
    arrays over every iteration of loop_rv (the block's innermost loop), with the outer loops
    at their first value and, one at a time, at their last; None where the loops are not
    constant (TVM's simplifier cannot prove `(8a + lane) % 192 // 64` constant across lanes,
    so lanes are judged by evaluating the indices). A loop whose extent a symbolic dim sets (the
    grid of a kernel over dim ranges) is evaluated with the dim at each of SYMBOLIC_PROBES, the
    dim's name bound in the envs too. None too for a loop longer than MAX_EVALUATED."""
    loop, realize = sch.get(loop_rv), sch.get_sref(block_rv).parent.stmt.body
    outer = [sch.get(lp) for lp in sch.get_loops(block_rv)]
    outer = [lp for lp in outer if not lp.loop_var.same_as(loop.loop_var)]
    if not isinstance(realize, s_tir.SBlockRealize) or not all(
            isinstance(x, tirx.IntImm) for x in (loop.min, loop.extent)) or loop.extent.value > MAX_EVALUATED:
        return None
    loop_names = {lp.loop_var.name for lp in [loop, *outer]}
    free = sorted(_var_names([x for lp in [loop, *outer] for x in (lp.min, lp.extent)]) - loop_names)
    probes = [dict.fromkeys(free, size) for size in SYMBOLIC_PROBES] if free else [{}]
    out = []
    for probe in probes:
        try:
            bounds = [(int(_eval(lp.min, probe)), int(_eval(lp.extent, probe))) for lp in outer]
        except (KeyError, TypeError):
            return None
        first = {lp.loop_var.name: lo for lp, (lo, _) in zip(outer, bounds)}
        envs = [first] + [{**first, lp.loop_var.name: lo + ext - 1}
                          for lp, (lo, ext) in zip(outer, bounds) if ext > 1]
        for env in envs:  # every iteration of the loop at once, as numpy arrays
            outer_env = {**probe, **env, loop.loop_var.name: loop.min.value + np.arange(loop.extent.value)}
            out.append({**probe, **{iv.var.name: _eval(v, outer_env)
                                    for iv, v in zip(realize.block.iter_vars, realize.iter_values)}})
    return realize, out


def _var_names(exprs) -> set:
    """The names of the variables in integer expressions."""
    names, todo = set(), list(exprs)
    while todo:
        n = todo.pop()
        if type(n).__name__ in ("Var", "SizeVar"):
            names.add(n.name)
        else:
            todo.extend(children(n, ("a", "b", "value")))
    return names


def lanes_contiguous(sch, block_rv, loop_rv, vec: int) -> bool:
    """Whether every `vec` consecutive iterations of loop_rv (a tile copy's fused loop) read
    consecutive elements (or one element) of each global buffer they load. A copy whose
    innermost index is gathered (a C=3 conv fed by a layout-changing prologue: `k % 3` and
    strides) must stay scalar: vectorized, it becomes int32x8 index arithmetic that CUDA
    codegen gets wrong."""
    lanes_env = _lane_envs_or_none(sch, block_rv, loop_rv)
    if lanes_env is None:
        return False
    realize, envs = lanes_env
    loads = _global_loads(realize.block.body)
    if loads is None:
        return False
    return _contiguous([ld.indices for ld in loads], envs, sch.get(loop_rv).extent.value, vec)


def _lane_envs_or_none(sch, block_rv, loop_rv):
    """lane_envs, or None also where an index holds what the evaluator does not know."""
    try:
        return lane_envs(sch, block_rv, loop_rv)
    except (KeyError, TypeError):
        return None


def stores_contiguous(sch, block_rv, loop_rv, vec: int) -> bool:
    """Whether every `vec` consecutive iterations of loop_rv write consecutive elements of the
    buffer the block stores to, starting on a multiple of `vec` (a vector store); a store
    through a layout change (an epilogue transposing back to NCHW) is not."""
    lanes_env = _lane_envs_or_none(sch, block_rv, loop_rv)
    if lanes_env is None:
        return False
    realize, envs = lanes_env
    store = realize.block.body
    if type(store).__name__ not in ("BufferStore", "TensorStore"):
        return False
    return _contiguous([store.indices], envs, sch.get(loop_rv).extent.value, vec, allow_same=False)


def _contiguous(index_lists, envs, extent: int, vec: int, allow_same: bool = True) -> bool:
    n = extent // vec * vec
    lanes = np.arange(vec)
    try:
        for block_env in envs:
            for indices in index_lists:
                idx = [_lane_groups(_eval(i, block_env), n, vec) for i in indices]
                if any((i - i[:, :1]).any() for i in idx[:-1]):
                    return False  # the lanes move along an outer dimension
                step = idx[-1] - idx[-1][:, :1]
                same, contiguous = ~step.any(axis=1), (step == lanes).all(axis=1)
                # a vector of 16 bytes starts on a multiple of its lanes (cp.async needs it aligned)
                ok = contiguous & (idx[-1][:, 0] % vec == 0)
                if not ((same & allow_same) | ok).all():
                    return False
    except (KeyError, TypeError):  # an index the evaluator does not know: stay scalar
        return False
    return True


def _lane_groups(values, n: int, vec: int):
    """An index's values over a loop's first n iterations as rows of `vec` lanes."""
    return np.broadcast_to(values, (max(n, np.size(values)),))[:n].reshape(-1, vec)


# the widest bool vector TVM's CUDA codegen can print (as ushort4): a select whose condition
# differs between the lanes of a wider vector fails with "Cannot convert type T.boolx8"
MAX_BOOL_LANES = 4


# the widest vector a float32 constant is broadcast to that TVM's CUDA codegen prints right: a
# float32x8 is held as ulonglong4, and the constant is printed as make_ulonglong4 of eight floats,
# which nvcc refuses (GELU computed in float32, 8 lanes wide)
MAX_FLOAT32_LANES = 4


def has_float32_constants(body) -> bool:
    """Whether a block body holds a float32 constant (which its vectors would broadcast)."""
    todo = [body]
    while todo:
        n = todo.pop()
        if isinstance(n, tirx.FloatImm) and _dtype(n) == "float32":
            return True
        todo.extend(children(n))
    return False


def bool_lanes_vary(sch, block_rv, loop_rv, vec: int) -> bool:
    """Whether loop_rv, vectorized `vec` wide, would compute a boolean that differs between
    the lanes of one vector: a select on loaded data (a ReLU, leaky ReLU or clip prologue or
    epilogue: `x < 0 ? 0 : x`) or on an index that moves within the vector. if_then_else is
    left out (TVM's vectorizer scalarizes it rather than making a bool vector), and so is the
    block's predicate. Unknown expressions count as varying."""
    lanes_env = _lane_envs_or_none(sch, block_rv, loop_rv)
    if lanes_env is None:
        return True
    realize, envs = lanes_env
    conds = _bool_exprs(realize.block.body)
    if conds is None:
        return True
    if not conds:
        return False
    n = sch.get(loop_rv).extent.value // vec * vec
    try:
        for block_env in envs:
            for cond in conds:
                for idx in _index_leaves(cond):
                    v = _lane_groups(_eval(idx, block_env), n, vec)
                    if (v - v[:, :1]).any():
                        return True
    except (KeyError, TypeError):
        return True
    return False


def branches_uniform(sch, block_rv, loop_rv, vec: int) -> bool:
    """Whether every if_then_else condition of a block (a concat's choice of input) takes one
    value across the lanes of each vector of loop_rv, `vec` wide: vectorized, the block then
    loads one input's vector in one branch, which TVM keeps whole once its simplifier has taken
    the lane out of the condition (`8a + lane < 64` is `a < 8`). A condition that differs
    between lanes makes TVM scalarize the block. Unknown expressions count as differing."""
    lanes_env = _lane_envs_or_none(sch, block_rv, loop_rv)
    if lanes_env is None:
        return False
    realize, envs = lanes_env
    conds, todo = [], [realize.block.body]
    while todo:
        n = todo.pop()
        if type(n).__name__ in ("Let", "LetStmt", "Ramp", "Shuffle"):
            return False
        if is_if_then_else(n):
            conds.append(n.args[0])
        todo.extend(children(n))
    n = sch.get(loop_rv).extent.value // vec * vec
    try:
        for block_env in envs:
            for cond in conds:
                v = _lane_groups(_eval(cond, block_env), n, vec)
                if (v != v[:, :1]).any():
                    return False
    except (KeyError, TypeError):
        return False
    return True


ALL_FIELDS = ("a", "b", "value", "condition", "true_value", "false_value", "indices", "args", "seq",
              "body", "then_case", "else_case")


def children(n, attrs=ALL_FIELDS):
    """The expressions and statements among `n`'s fields `attrs` (each one, or an array of them)."""
    for attr in attrs:
        child = getattr(n, attr, None)
        if isinstance(child, (tirx.Expr, tirx.Stmt)):
            yield child
        elif child is not None and not isinstance(child, (str, int, float)):
            try:
                yield from (c for c in child if isinstance(c, (tirx.Expr, tirx.Stmt)))
            except TypeError:
                pass


def _bool_exprs(node) -> Optional[list]:
    """The outermost boolean expressions of a block body (conditions of selects, comparisons
    cast to numbers), not looking into if_then_else conditions; None where the walk meets a
    node it cannot see through."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        kind = type(n).__name__
        if kind in ("Let", "LetStmt", "Ramp", "Shuffle"):
            return None
        if isinstance(n, tirx.Expr) and _dtype(n).startswith("bool"):
            out.append(n)
            continue
        if is_if_then_else(n):
            todo.extend(n.args[1:])
            continue
        todo.extend(children(n))
    return out


def _index_leaves(expr) -> list:
    """The integer expressions a boolean depends on: the indices of what it loads, and the
    iterators it compares."""
    out, todo = [], [expr]
    while todo:
        n = todo.pop()
        kind = type(n).__name__
        if kind in ("TensorLoad", "BufferLoad"):
            out.extend(n.indices)
        elif kind in ("Var", "SizeVar"):
            out.append(n)
        else:
            todo.extend(children(n))
    return out


_INT_OPS = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
            "FloorDiv": lambda a, b: a // b, "FloorMod": lambda a, b: a % b, "Min": np.minimum,
            "Max": np.maximum, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
            "GE": np.greater_equal, "EQ": np.equal, "NE": np.not_equal, "And": np.logical_and,
            "Or": np.logical_or}


def _eval(e, env: dict):
    """An integer index expression's (or a comparison of them's) value, elementwise over numpy arrays in `env` (TVM 0.27
    exposes no evaluator or substituter)."""
    kind = type(e).__name__
    if kind == "IntImm":
        return e.value
    if kind in ("Var", "SizeVar"):
        return env[e.name]
    if kind == "Cast":
        return _eval(e.value, env)
    if kind in _INT_OPS:
        return _INT_OPS[kind](_eval(e.a, env), _eval(e.b, env))
    if kind == "Not":
        return np.logical_not(_eval(e.a, env))
    raise TypeError(kind)


def _loaded(load):
    src = getattr(load, "source", None)
    return load.buffer if src is None else src


def _global_loads(node) -> Optional[list]:
    """The loads of global buffers in a block's body (TVM 0.27 exposes no expression visitor);
    None where it meets a node it cannot see through."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if type(n).__name__ in ("Let", "LetStmt", "Ramp", "Shuffle"):
            return None  # a binding or vector this walk does not follow: the caller stays scalar
        if type(n).__name__ in ("TensorLoad", "BufferLoad") and _loaded(n).scope() == "global":
            out.append(n)
        todo.extend(children(n, ("a", "b", "value", "condition", "true_value", "false_value", "indices",
                                  "args", "seq")))
    return out


# the widest vector TVM's CUDA codegen handles as one value: 16 bytes (float4, uint4 for 8
# halves); float32 x 8 becomes a `ulonglong4` built from 8 floats, which nvcc refuses
MAX_VECTOR_BYTES = 16


def widest_value_bytes(sch, block_rv, uniform_branches: bool = False) -> int:
    """Bytes of the widest value a block computes (what it loads, stores and computes in
    between; not its indices, which a vector access keeps scalar): a vectorized loop of it
    is at most MAX_VECTOR_BYTES // that many lanes wide. `uniform_branches`: the block's
    if_then_else conditions are known to agree across lanes (branches_uniform), so their index
    arithmetic stays scalar too and is left out."""
    widest, todo = 1, [sch.get(block_rv).body]
    while todo:
        n = todo.pop()
        if isinstance(n, tirx.Expr):
            dt = _dtype(n)
            bits = "".join(ch for ch in dt.split("x")[0] if ch.isdigit())
            if bits and not dt.startswith(("bool", "handle")):
                widest = max(widest, int(bits) // 8)
        if uniform_branches and is_if_then_else(n):
            todo.extend(n.args[1:])
            continue
        todo.extend(children(n, ("a", "b", "value", "condition", "true_value", "false_value", "args", "seq",
                                  "body", "then_case", "else_case")))  # not "indices"
    return widest
