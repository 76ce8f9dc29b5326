"""What the bench command lines share (tefuse/bench/runs.py)."""
import shlex

from tefuse.bench.runs import command_line


def test_a_report_command_carries_the_tuning_databases_and_switches_it_ran_under(monkeypatch):
    from tefuse.bench.runs import BUILD_ENV

    for k in BUILD_ENV:
        monkeypatch.delenv(k, raising=False)
    assert command_line("tefuse.bench.zoo", ["--models", "a b"]) == "python -m tefuse.bench.zoo --models 'a b'"
    monkeypatch.setenv("TEFUSE_USER_DB", "/tmp/db x.jsonl")
    monkeypatch.setenv("TEFUSE_HORIZONTAL", "1")
    monkeypatch.setenv("TEFUSE_ONNX_UPGRADE_OPSET", "17")
    monkeypatch.setenv("TEFUSE_CACHE_DIR", "/tmp/cache")  # where kernels are kept: not what they are
    line = command_line("tefuse.bench.precision", ["zoo"])
    assert shlex.split(line) == ["TEFUSE_USER_DB=/tmp/db x.jsonl", "TEFUSE_HORIZONTAL=1", "TEFUSE_ONNX_UPGRADE_OPSET=17",
                                 "python", "-m", "tefuse.bench.precision", "zoo"]
