"""A non-editable wheel install: schedules/ lands as tefuse.schedules, nothing called `schedules`
reaches site-packages, and the explicit package list in pyproject.toml misses no package."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True)
    (whl,) = out.glob("tefuse-*.whl")
    return whl


def _packages_in_tree() -> set[str]:
    pkgs = set()
    for base, name in ((ROOT / "tefuse", "tefuse"), (ROOT / "schedules", "tefuse/schedules")):
        for init in base.rglob("__init__.py"):
            pkgs.add(str(Path(name) / init.parent.relative_to(base)).rstrip("/.").replace("/.", ""))
    return pkgs


def test_wheel_holds_every_package_and_no_top_level_schedules(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("schedules/")]
    in_wheel = {str(Path(n).parent) for n in names if n.endswith("__init__.py")}
    assert _packages_in_tree() <= in_wheel, f"missing from pyproject's packages: {_packages_in_tree() - in_wheel}"
    assert "tefuse/schedules/gpu/conv2d_implicit_gemm.py" in names


def test_installed_wheel_imports_tefuse_schedules_not_schedules(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, capture_output=True)
    code = ("import importlib.util as u, tefuse.schedules as s; print(s.__file__); "
            "print(u.find_spec('schedules')); print(len(s.get_templates('cuda', 'conv2d')))")
    env = {**os.environ, "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    path, spec, n = res.stdout.split("\n")[:3]
    assert Path(path).resolve().is_relative_to(site.resolve())
    assert spec == "None"
    assert int(n) == 4  # direct, implicit GEMM, and the two tensor-core templates (mma.sync, wgmma)


def test_installed_wheel_finds_the_shipped_tuning_logs(wheel, tmp_path):
    """The shipped logs are package data: a wheel install reads the same records as the checkout."""
    shipped = sorted(p.name for p in (ROOT / "tefuse" / "tuning_logs").glob("*.jsonl"))
    assert shipped
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, capture_output=True)
    code = ("import tefuse.tune.database as d; ps = d.system_db_paths(); print(d.__file__); "
            "print(','.join(p.name for p in ps)); print(sum(len(d.Database(p).records()) for p in ps)); "
            "import tefuse.tune.transfer as t; print(len(t.read_logs(d.trial_log_paths())))")
    env = {k: v for k, v in os.environ.items() if k != "TEFUSE_SYSTEM_DB"}
    env["PYTHONPATH"] = str(site)
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    path, names, count, trials = res.stdout.split("\n")[:4]
    assert Path(path).resolve().is_relative_to(site.resolve())
    assert names.split(",") == shipped
    want = sum(1 for name in shipped for ln in (ROOT / "tefuse" / "tuning_logs" / name).read_text().splitlines()
               if ln.strip())
    assert int(count) == want
    assert int(trials) > 1000  # the transfer model's trials (tuning_logs/trials/*.jsonl.gz) ship too


def test_every_dependency_ci_installs_is_pinned():
    """CI installs from scratch: an unpinned dependency's new release changes results under it
    (ml_dtypes 0.7 turned an out-of-range float's int4 cast into 0, and onnx's test data with it).
    Each of pyproject's requirements is one `==` pin, and CI's constraints file, which pins their
    dependencies too, agrees with it."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    loose = [str(r) for r in reqs if [s.operator for s in r.specifier] != ["=="]]
    assert not loose, f"pin these exactly in pyproject.toml: {loose}"
    constraints = {}
    for line in (ROOT / ".ci" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            c = Requirement(line)
            constraints[c.name.lower().replace("_", "-")] = str(c.specifier)
    differ = {r.name: (str(r.specifier), constraints[key]) for r in reqs
              if (key := r.name.lower().replace("_", "-")) in constraints and constraints[key] != str(r.specifier)}
    assert not differ, f"pyproject.toml and .ci/constraints.txt pin these apart: {differ}"
    assert constraints.get("ml-dtypes") and constraints.get("numpy")  # the file pins the project's deps
