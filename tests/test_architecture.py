"""The layers depend one way: every import (top-level and function-local) of a tefuse module
points down this list, so no two subpackages import each other.

    errors, version, options, paths -> target -> ops -> graph -> fusion -> schedules -> codegen -> runtime
    -> tune -> driver -> plan, frontend -> the tefuse facade (__init__) -> bench -> commands, cli

Units of one layer may import each other as long as no cycle forms. Within the tree, no two
files import each other, directly or round a loop, counting imports inside functions: a
function-local import that hides such a loop is a loop all the same (an import kept inside a
function to defer a heavy module is fine where no loop needs it).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = [("errors", "version", "options", "paths", "gil"), ("target",), ("ops",), ("graph",), ("fusion",), ("schedules",),
          ("codegen",), ("runtime",), ("tune",), ("driver",), ("calibrate", "optim"), ("plan", "frontend"), ("__init__",),
          ("bench",), ("commands", "cli", "__main__")]
RANK = {unit: k for k, units in enumerate(LAYERS) for unit in units}


def _modules() -> dict[str, Path]:
    """Module name -> file, with schedules/ under its installed name, tefuse.schedules."""
    mods = {}
    for base, pkg in ((ROOT / "tefuse", "tefuse"), (ROOT / "schedules", "tefuse.schedules")):
        for f in base.rglob("*.py"):
            parts = list(f.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = f
    return mods


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement anywhere in the file."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                out.append((mod, node.lineno))
            out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]  # `from . import x`
    return out


def _unit(module: str) -> str | None:
    """The layer unit of a tefuse module: its subpackage or top-level module, `__init__` for the
    package facade itself (None: not tefuse's)."""
    parts = module.split(".")
    if parts[0] != "tefuse":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _edges() -> list[tuple[str, str, str]]:
    mods = _modules()
    edges = []
    for name, path in mods.items():
        src = _unit(name)
        for target, line in _imports(name, path):
            if target.split(".")[0] == "schedules":
                edges.append((src or "tefuse", "<top-level schedules>", f"{path.relative_to(ROOT)}:{line}"))
            dst = _unit(target)
            if src is not None and dst is not None and src != dst:
                edges.append((src, dst, f"{path.relative_to(ROOT)}:{line}"))
    return edges


def test_every_unit_has_a_layer():
    units = {_unit(n) for n in _modules()} - {None}
    assert units <= set(RANK), f"add these to LAYERS: {sorted(units - set(RANK))}"


def test_imports_point_down_the_layers():
    bad = sorted({f"{where}: {src} imports {dst}" for src, dst, where in _edges()
                  if dst not in RANK or RANK[dst] > RANK[src]})
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def _cycles(edges: list[tuple[str, str, str]]) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for s, d, _ in edges:
        graph.setdefault(s, set()).add(d)
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_subpackages():
    assert _cycles(_edges()) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = _edges() + [("ops", "driver", "planted")]
    assert any({"ops", "driver"} <= set(c) for c in _cycles(planted))


def test_function_local_and_relative_imports_are_resolved(tmp_path):
    f = tmp_path / "executor.py"
    f.write_text("from ..codegen import lower\n\ndef run():\n    from ..driver import build\n    import tefuse.tune.database\n")
    found = {m for m, _ in _imports("tefuse.runtime.executor", f)}
    assert {"tefuse.codegen", "tefuse.codegen.lower", "tefuse.driver.build", "tefuse.tune.database"} <= found
    assert {_unit(m) for m in found} == {"codegen", "driver", "tune"}


def _file_edges() -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) between tefuse's files, every import counted
    (function-local ones too). `from pkg import name` counts as an import of pkg.name where that
    is a module, else of pkg; a package's own registration imports of its submodules are left out
    (they load the package, nothing else)."""
    mods = _modules()
    edges = []
    for name, path in mods.items():
        for target, line in _imports(name, path):
            dst = target if target in mods else target.rpartition(".")[0]
            if dst not in mods or dst == name:
                continue
            if path.name == "__init__.py" and dst.startswith(name + "."):
                continue
            edges.append((name, dst, f"{path.relative_to(ROOT)}:{line}"))
    return edges


def test_no_import_cycle_between_files():
    cycles = _cycles(_file_edges())
    assert cycles == [], "files importing each other (directly or round a loop):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_the_file_cycle_finder_sees_a_function_local_import(tmp_path):
    """A loop closed by an import inside a function is found: the edge is there."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from . import b\n")
    b.write_text("def f():\n    from .a import x\n")
    imports = {m for m, _ in _imports("tefuse.pkg.b", b)}
    assert "tefuse.pkg.a" in imports
    planted = [("tefuse.pkg.a", "tefuse.pkg.b", "a.py:1"), ("tefuse.pkg.b", "tefuse.pkg.a", "b.py:2")]
    assert _cycles(planted) == [["tefuse.pkg.a", "tefuse.pkg.b"]]


def test_no_private_name_is_imported_from_another_module():
    """A leading underscore says "this module's own": no other file imports it."""
    bad = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("tefuse")):
                bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)
