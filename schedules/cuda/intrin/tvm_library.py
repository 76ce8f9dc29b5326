"""TVM's own CUDA tensor intrinsics (mma.sync, wmma, ldmatrix; `tvm.s_tir.tensor_intrin.cuda`),
each registered when a schedule first names it.

Importing TVM's module registers all 91 of its intrinsics, each parsed from TVMScript: 3.8 s of
a cold build, and its package (`tvm.s_tir.tensor_intrin`) adds every other backend's, 1.4 s more,
on the first tensor-core kernel of every process (build threads and tuning workers alike), where
a model's kernels use a handful. So the module is executed from TVM's own file without its
top-level `TensorIntrin.register(NAME, *generator(...))` statements, and each of those runs the
first time NAME is asked for (`ensure`; the intrinsic groups ask for theirs), unless an intrinsic
of that name is registered already. The code keeps its file name and line numbers, so TVMScript
reads each generator's source from TVM's file as it would. The module is installed under its own
name in `sys.modules`: a later `from tvm.s_tir.tensor_intrin.cuda import ...` (dlight's
tensor-core rule) or import of the package gets this one, not a second copy that would register
its global functions again and fail. Where TVM's module was imported before, it is used as it is.
"""
from __future__ import annotations

import ast
import importlib.util
import sys
import threading
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterable, Mapping, Optional, TypeVar

import tvm
from tvm.s_tir import TensorIntrin

from ....errors import TefuseError
from ...intrin import quick_frames

MODULE = "tvm.s_tir.tensor_intrin.cuda"
REGISTER = "TensorIntrin.register"
GROUPS = ("get_mma_intrin_group", "get_wmma_intrin_group")  # generators of name groups

Names = TypeVar("Names", Mapping[str, str], Iterable[str])

_lock = threading.RLock()  # re-entrant: a generator run under it may ask for this module again
_made: set[str] = set()  # TVM's names this process has registered (or found registered)
_module: Optional[ModuleType] = None
_failed: Optional[str] = None  # why the first load failed


class IntrinSourceError(TefuseError, RuntimeError):
    """The installed TVM's intrinsics source no longer has what tefuse reads or edits in it."""


def _is_registration(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and ast.unparse(stmt.value.func) == REGISTER and len(stmt.value.args) == 2
            and isinstance(stmt.value.args[1], ast.Starred) and not stmt.value.keywords)


def source_path() -> Path:
    """TVM's module's file, found without importing it or its package (find_spec of a submodule
    imports the package, and this package's __init__ imports every backend's intrinsics)."""
    package, _, name = MODULE.rpartition(".")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package} not found in the installed TVM", name=package)
    for directory in spec.submodule_search_locations:
        path = Path(directory) / f"{name}.py"
        if path.is_file():
            return path
    raise ModuleNotFoundError(f"{MODULE} not found in the installed TVM", name=MODULE)


def _lazy_module() -> ModuleType:
    """TVM's module executed from its file without its registrations; each is kept as the
    compiled (desc, impl) expression under the name it registers, run by `ensure`."""
    origin = str(source_path())
    tree = ast.parse(Path(origin).read_text(), origin)
    body = [s for s in tree.body if not _is_registration(s)]
    module = ModuleType(MODULE, ast.get_docstring(tree))
    module.__file__ = origin
    module.__package__ = MODULE.rpartition(".")[0]
    exec(compile(ast.Module(body=body, type_ignores=[]), origin, "exec"), module.__dict__)
    makers: dict[str, Callable] = {}
    for stmt in tree.body:
        if _is_registration(stmt):
            name_expr, pair = stmt.value.args
            name = eval(compile(ast.Expression(name_expr), origin, "eval"), module.__dict__)
            pair_expr = ast.Expression(ast.Tuple(elts=[pair], ctx=ast.Load()))
            ast.copy_location(pair_expr.body, pair)
            makers[name] = partial(eval, compile(pair_expr, origin, "eval"), module.__dict__)
    module.ensure = partial(_ensure, makers)
    for group in GROUPS:  # the names a group function returns are registered before they are used
        if callable(getattr(module, group, None)):
            setattr(module, group, _registering(getattr(module, group), module.ensure))
    return module


def _ensure(makers: Mapping[str, Callable], names: Names) -> Names:
    """Register each of `names` that is one of TVM's and not registered yet (tefuse's own
    intrinsics of the same name, registered before or after, win: schedules/intrin.register_once
    overrides); return `names`."""
    for name in names.values() if isinstance(names, Mapping) else names:
        if name in makers and name not in _made:
            with quick_frames(), _lock:  # the order register_once takes them in (a make may load this)
                if name not in _made:
                    if TensorIntrin.get(name, allow_missing=True) is None:
                        TensorIntrin.register(name, *makers[name]())
                    _made.add(name)
    return names


def _registering(group: Callable, ensure: Callable) -> Callable:
    def wrapped(*args, **kwargs):
        return ensure(group(*args, **kwargs))

    wrapped.__name__, wrapped.__doc__ = group.__name__, group.__doc__
    return wrapped


def tvm_cuda_intrinsics() -> ModuleType:
    """TVM's module: get_mma_intrin_group, get_wmma_intrin_group (their names registered),
    shared_16x16_to_ldmatrix_32x8_layout..., and `ensure(names)`, which registers those of
    `names` that are TVM's. A load that failed fails again, with its first error: the module's
    global functions may be registered already, so neither it nor TVM's import can run twice."""
    global _module, _failed
    if _module is None:
        with quick_frames(), _lock:  # quick_frames first: register_once's order
            if _module is None:
                if _failed is not None:
                    raise IntrinSourceError(_failed)
                loaded = sys.modules.get(MODULE)
                if loaded is not None:  # imported whole before: everything is registered
                    loaded.ensure = getattr(loaded, "ensure", lambda names: names)
                else:
                    try:
                        loaded = _lazy_module()
                    except Exception as e:  # noqa: BLE001 - a TVM whose module no longer fits
                        _failed = (f"TVM {tvm.__version__}'s CUDA intrinsics ({MODULE}) could not be loaded "
                                   f"name by name: {type(e).__name__}: {e}")
                        raise IntrinSourceError(_failed) from e
                    sys.modules[MODULE] = loaded
                _module = loaded
    return _module
