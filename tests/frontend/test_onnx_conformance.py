"""ONNX conformance in CI: every case of onnx's own backend runner that tefuse claims (the node
cases of each op type it converts, and onnx's simple / pytorch-converted / pytorch-operator data)
runs through `TefuseBackend` on llvm and is compared by onnx's runner with onnx's expected outputs
(see conformance.py for how the cases are chosen and classified).

A case passes, or is listed in conformance_expected_failures.txt with a one-line reason and is
refused cleanly (ModelImportError naming the node). A listed case that passes fails here (the list
only shrinks), as does an unlisted one that does not pass, and a listed one that gives a wrong
number or crashes. Kernels are shared between cases of one worker (MemoryKernelCache).
"""
from __future__ import annotations

import pytest

from tests.frontend import conformance as C

CASES = C.all_cases()
EXPECTED = C.read_expected()


@pytest.fixture(scope="module", autouse=True)
def _shared_kernels():
    from tefuse.frontend.onnx.backend import TefuseBackend

    old, TefuseBackend.cache = TefuseBackend.cache, C.MemoryKernelCache()
    yield
    TefuseBackend.cache = old


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_backend_case(case):
    outcome, detail = C.run_case(case)
    what = f"{case.name} ({case.kind}{', ' + case.op_type if case.op_type else ''})"
    reason = EXPECTED.get(case.name)
    if reason is None:
        assert outcome == "pass", (f"{what}: {outcome}: {detail}\n(fix it, or list it in "
                                   f"{C.EXPECTED_FILE.name} with a one-line reason if it is refused cleanly)")
        return
    assert outcome != "pass", f"{what} passes now: remove its line from {C.EXPECTED_FILE.name}"
    assert outcome == "refused", f"listed {what} must be refused cleanly, got {outcome}: {detail}"


def test_expected_failures_list_is_well_formed():
    names = {c.name for c in CASES}
    lines = [ln.split(" ", 1)[0] for ln in C.EXPECTED_FILE.read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert len(lines) == len(set(lines)), "a case is listed twice"
    assert lines == sorted(lines), "keep the list sorted"
    unknown = sorted(set(lines) - names)
    assert not unknown, f"listed cases that the suite does not run: {unknown}"
    assert all(EXPECTED[n] for n in lines), "every listed case needs a reason"


def test_the_suite_covers_every_supported_op_type_onnx_has_cases_for():
    """The node cases are chosen by op type from supported_ops(): a converter added later brings
    its cases in, and one that onnx has no case for is named here rather than passing silently."""
    from tefuse.frontend.onnx import supported_ops

    ops_with_cases = set(C.node_op_types().values())
    covered = {c.op_type for c in CASES if c.kind == "node"}
    assert covered == set(supported_ops()) & ops_with_cases
    assert set(supported_ops()) - ops_with_cases <= C.OPS_WITHOUT_NODE_CASES
    kinds = {c.kind for c in CASES}
    assert kinds == {"node", "simple", "pytorch-converted", "pytorch-operator"}
