"""ONNX conformance: onnx's own backend runner (`onnx.backend.test.BackendTest`) over tefuse.

Which cases: onnx 1.23 ships no node/ data; its runner generates the node cases in memory from
onnx's case code (`onnx.backend.test.loader.load_node_model_tests`, each `expect(...)` call of
`onnx/backend/test/case/node/*.py`). We take the node cases of every op type tefuse converts
(`supported_ops()`; a case's op type is the op of its `expect` node, and its `_expanded`
function-body variants belong to it, as `collect_testcases(op_type)` counts them), and every
case of the `simple`, `pytorch-converted` and `pytorch-operator` data onnx ships. The `real`
models are the light model zoo, which tests/frontend/test_onnx_zoo.py runs.

How a case runs: the runner's own test function for it (prepare through `TefuseBackend`, feed the
stored inputs, compare with onnx's expected outputs by `Runner.assert_similar_outputs` at the
case's rtol/atol, dtypes and shapes included). Its outcome is one of

    pass     the outputs match
    refused  tefuse refused the model cleanly: ModelImportError naming the node(s)
    wrong    it ran and an output differs (values, shape or dtype)
    crash    anything else (an exception of another type; a dead process in `record`)

`python -m tests.frontend.conformance record OUT.json` runs them all in worker processes (a
segfault or a hang costs one case, not the run) and writes the figures.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
import unittest
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

EXPECTED_FILE = Path(__file__).with_name("conformance_expected_failures.txt")
DATA_KINDS = {"Simple": "simple", "PyTorchConverted": "pytorch-converted", "PyTorchOperator": "pytorch-operator"}
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")
OPS_WITHOUT_NODE_CASES: set[str] = set()  # supported op types onnx has no node case for (none today)


@dataclass(frozen=True)
class Case:
    name: str  # the runner's test name without its device suffix, e.g. test_abs
    kind: str  # node, simple, pytorch-converted, pytorch-operator
    op_type: Optional[str]  # node cases: the op under test
    category: str  # the runner's category, e.g. NodeModel
    method: str  # the runner's test method, e.g. test_abs_cpu


@functools.lru_cache(maxsize=None)
def _runner():
    from onnx.backend.test import BackendTest

    from tefuse.frontend.onnx.backend import TefuseBackend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's case code overflows casts on purpose
        rt = BackendTest(TefuseBackend, __name__)
    return rt, rt.test_cases


@functools.lru_cache(maxsize=None)
def node_op_types() -> dict[str, str]:
    """Node case name -> the op type under test (expanded variants map to their op)."""
    from onnx.backend.test.loader import load_node_model_tests

    ops: dict[str, str] = {}
    for tc in load_node_model_tests():
        if not _EXPANDED.search(tc.name):
            nodes = tc.model.graph.node
            ops[tc.name] = nodes[0].op_type if len(nodes) == 1 else "?"
    for tc in load_node_model_tests():
        if _EXPANDED.search(tc.name):
            ops[tc.name] = ops.get(_EXPANDED.sub("", tc.name), "?")
    return ops


@functools.lru_cache(maxsize=None)
def all_cases() -> tuple[Case, ...]:
    """Every case the conformance suite runs, sorted by name."""
    from tefuse.frontend.onnx import supported_ops

    _, classes = _runner()
    supported = set(supported_ops())
    ops = node_op_types()
    out = []
    for category, cls in classes.items():
        cat = category[len("OnnxBackend"):-len("Test")]  # NodeModelTest... -> NodeModel
        for method in dir(cls):
            if not (method.startswith("test_") and method.endswith("_cpu")):
                continue
            name = method[:-len("_cpu")]
            if cat == "NodeModel":
                op = ops.get(name)
                if op in supported:
                    out.append(Case(name, "node", op, category, method))
            elif cat[:-len("Model")] in DATA_KINDS:
                out.append(Case(name, DATA_KINDS[cat[:-len("Model")]], None, category, method))
    return tuple(sorted(out, key=lambda c: c.name))


def case_by_name() -> dict[str, Case]:
    return {c.name: c for c in all_cases()}


class MemoryKernelCache:
    """Compiled kernels kept in this process, keyed as the on-disk kernel cache keys them: cases
    that compile the same kernel (the same op on the same shapes: most Add/Mul/... cases) share
    it, without the on-disk cache's export and link per kernel (which costs more than it saves
    within one run)."""

    def __init__(self):
        from tefuse.codegen.cache import KernelCache

        self._keyer = KernelCache("/nonexistent")
        self._mods: dict[str, tuple] = {}
        self.hits = 0

    def load(self, workload_key, target, choice):
        got = self._mods.get(self._keyer.key(workload_key, target, choice))
        self.hits += got is not None
        return None if got is None else got[0]

    def load_source(self, workload_key, target, choice) -> str:
        got = self._mods.get(self._keyer.key(workload_key, target, choice))
        return "" if got is None else got[1]

    def store(self, workload_key, target, choice, module, source=""):
        self._mods[self._keyer.key(workload_key, target, choice)] = (module, source)


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    text = " | ".join(lines[:3]) if lines else ""
    return f"{type(e).__name__}: {text}"[:400]


def run_case(case: Case) -> tuple[str, str]:
    """(outcome, one-line detail) of one case, run by onnx's runner."""
    from tefuse.errors import ModelImportError

    _, classes = _runner()
    cls = classes[case.category]
    test = getattr(cls(case.method), case.method)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            test()
    except ModelImportError as e:
        return "refused", _one_line(e)
    except AssertionError as e:
        return "wrong", _one_line(e)
    except unittest.SkipTest as e:
        return "crash", f"skipped by the runner: {e}"
    except Exception as e:  # noqa: BLE001 - the point is to classify it
        return "crash", _one_line(e)
    return "pass", ""


def read_expected(path: Path = EXPECTED_FILE) -> dict[str, str]:
    """Case name -> reason, from `name  reason` lines (# comments and blank lines ignored)."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for ln in path.read_text().splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        name, _, reason = ln.partition(" ")
        out[name] = reason.strip()
    return out


# -- recording the figures, crash-proof ------------------------------------------------------
def _worker(names_file: str, out_file: str) -> None:
    from tefuse.codegen.cache import KernelCache
    from tefuse.frontend.onnx.backend import TefuseBackend

    cache_dir = os.environ.get("TEFUSE_CONFORMANCE_CACHE")  # an on-disk cache kept between runs
    TefuseBackend.cache = KernelCache(cache_dir) if cache_dir else MemoryKernelCache()
    cases = case_by_name()
    names = Path(names_file).read_text().split()
    with open(out_file, "a", buffering=1) as out:
        for name in names:
            out.write(json.dumps({"begin": name, "t": time.time()}) + "\n")
            t0 = time.perf_counter()
            kind, detail = run_case(cases[name])
            out.write(json.dumps({"name": name, "outcome": kind, "detail": detail,
                                  "seconds": round(time.perf_counter() - t0, 3)}) + "\n")


def _record_shard(names: list[str], tmp: Path, shard: int, timeout: float) -> dict[str, dict]:
    import subprocess

    results: dict[str, dict] = {}
    todo = list(names)
    attempt = 0
    while todo:
        attempt += 1
        nf, of = tmp / f"names{shard}.{attempt}", tmp / f"out{shard}.{attempt}"
        nf.write_text("\n".join(todo))
        of.write_text("")
        p = subprocess.Popen([sys.executable, "-m", "tests.frontend.conformance", "worker", str(nf), str(of)],
                             cwd=Path(__file__).resolve().parents[2])
        began: Optional[tuple[str, float]] = None
        while True:
            time.sleep(0.5)
            for ln in of.read_text().split("\n")[:-1]:  # complete lines only: the worker may be mid-line
                rec = json.loads(ln)
                if "begin" in rec:
                    began = (rec["begin"], rec["t"])
                elif rec["name"] not in results:
                    results[rec["name"]] = rec
            rc = p.poll()
            stuck = began is not None and began[0] not in results and time.time() - began[1] > timeout
            if rc is not None or stuck:
                if stuck:
                    p.kill()
                    p.wait()
                break
        if began is not None and began[0] not in results:
            why = f"timed out after {timeout:.0f}s" if stuck else f"worker died (exit status {p.returncode})"
            results[began[0]] = {"name": began[0], "outcome": "crash", "detail": why, "seconds": None}
        todo = [n for n in todo if n not in results]
        if rc is not None and rc != 0 and began is None:
            raise RuntimeError(f"conformance worker failed before its first case (exit {rc})")
    return results


def summarize(results: dict[str, dict]) -> dict:
    cases = case_by_name()
    by_kind: dict[str, dict[str, int]] = {}
    for name, r in results.items():
        k = cases[name].kind
        d = by_kind.setdefault(k, {"cases": 0, "pass": 0, "refused": 0, "wrong": 0, "crash": 0})
        d["cases"] += 1
        d[r["outcome"]] += 1
    node = by_kind.get("node", {"cases": 0, "pass": 0})
    total = {o: sum(d[o] for d in by_kind.values()) for o in ("cases", "pass", "refused", "wrong", "crash")}
    return {"total": total, "by_kind": by_kind,
            "node_pass_percent": round(100.0 * node["pass"] / max(node["cases"], 1), 1)}


def record(out_path: str, jobs: int = 2, timeout: float = 300.0) -> dict:
    import concurrent.futures as cf
    import tempfile

    import onnx

    import tefuse
    from tefuse.frontend.onnx import supported_ops

    names = [c.name for c in all_cases()]
    shards = [names[k::jobs] for k in range(jobs)]
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="tefuse-conformance-") as tmp:
        with cf.ThreadPoolExecutor(jobs) as ex:
            parts = list(ex.map(lambda k: _record_shard(shards[k], Path(tmp), k, timeout), range(jobs)))
    results = {k: v for part in parts for k, v in part.items()}
    cases = case_by_name()
    out = {
        "onnx": onnx.__version__, "tefuse": tefuse.__version__, "target": "llvm",
        "supported_op_types": len(supported_ops()), "wall_seconds": round(time.time() - t0, 1),
        "workers": jobs, "summary": summarize(results),
        "cases": {n: {"kind": cases[n].kind, "op_type": cases[n].op_type, "outcome": r["outcome"],
                      "detail": r["detail"], "seconds": r["seconds"]} for n, r in sorted(results.items())},
    }
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(out, indent=1) + "\n")
    return out


HEADER = """\
# ONNX conformance cases (tests/frontend/conformance.py) that do not pass, one a line:
#   <case> <one-line reason>
# Each must fail as a clean refusal (ModelImportError naming the node), never a wrong number or a
# crash. tests/frontend/test_onnx_conformance.py fails when a listed case passes (remove its line:
# the list only shrinks) and when an unlisted case does not pass.
"""


def short_reason(detail: str) -> str:
    """The reason of a refusal, without the model name and node header."""
    m = re.search(r"\(\w+, opset \d+\): (.*?)( \| node |$)", detail)
    text = m.group(1) if m else detail.removeprefix("ModelImportError: ")
    return re.sub(r"\s+", " ", text).strip()[:160]


def expected_text(recorded: dict) -> str:
    lines = [f"{name} {short_reason(c['detail'])}" for name, c in sorted(recorded["cases"].items())
             if c["outcome"] != "pass"]
    return HEADER + "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["worker"]:
        _worker(argv[1], argv[2])
        return 0
    if argv[:1] == ["record"]:
        jobs = int(argv[2]) if len(argv) > 2 else 2
        out = record(argv[1], jobs)
        print(json.dumps(out["summary"], indent=1), f"\n{out['wall_seconds']} s")
        return 0
    if argv[:1] == ["expected"]:  # the expected-failures file from a recorded run
        print(expected_text(json.loads(Path(argv[1]).read_text())), end="")
        return 0
    if argv[:1] == ["list"]:
        for c in all_cases():
            print(c.name, c.kind, c.op_type or "")
        return 0
    print("usage: python -m tests.frontend.conformance record OUT.json [JOBS] | list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
