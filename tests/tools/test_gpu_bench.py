"""tools/gpu_bench.sh's zoo modes without a GPU: nvidia-smi and python3 stand-ins on PATH record
what they run, so each model is measured once, on its GPU of the round-robin, and a tuned shard
runs the models asked for."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)


def _two_gpus(tmp_path: Path) -> tuple[Path, Path]:
    """Stand-ins for two GPUs and for python3, which appends each command it is given (and the
    tuning log it reads) to `calls`."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    _stub(bin_dir / "nvidia-smi", 'case "$1" in -L) printf "GPU 0\\nGPU 1\\n";; *) echo H200;; esac\n')
    _stub(bin_dir / "python3", '[ "$1" = -c ] && exit 0\n'
                               f'echo "$CUDA_VISIBLE_DEVICES $* db=$TEFUSE_USER_DB" >> {calls}\n'
                               'echo "zoo stand-in"\n')
    return bin_dir, calls


def _on_two_gpus(tmp_path: Path, mode: str, ok: bool = True, **env) -> tuple[subprocess.CompletedProcess, list[str]]:
    """gpu_bench.sh `mode` with two stand-in GPUs and `env`: its result (a success unless `ok` is
    False) and the commands it ran."""
    bin_dir, calls = _two_gpus(tmp_path)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OUT": str(tmp_path / "out"), **env}
    r = subprocess.run(["bash", str(ROOT / "tools" / "gpu_bench.sh"), mode], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 or not ok, r.stderr
    return r, calls.read_text().splitlines() if calls.exists() else []


def test_untuned_zoo_measures_each_model_once_spread_over_the_gpus(tmp_path):
    r, runs = _on_two_gpus(tmp_path, "untuned-zoo", MODELS="swin_t bert gpt2")
    runs = sorted(runs)
    assert [(line.split()[0], line.split()[line.split().index("--models") + 1]) for line in runs] == \
        [("0", "gpt2"), ("0", "swin_t"), ("1", "bert")]
    assert all("--no-db" in line and "--batch 1 32" in line for line in runs)
    assert r.stdout.count("zoo stand-in") == 3


def test_untuned_zoo_without_models_names_what_is_missing(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir / "nvidia-smi", 'echo "GPU 0"\n')
    _stub(bin_dir / "python3", "exit 0\n")
    env = {k: v for k, v in os.environ.items() if k != "MODELS"}
    env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", OUT=str(tmp_path / "out"))
    r = subprocess.run(["bash", str(ROOT / "tools" / "gpu_bench.sh"), "untuned-zoo"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "MODELS names the zoo models to measure" in r.stderr


def test_tuned_zoo_runs_a_shard_a_gpu_over_the_models_asked_for(tmp_path):
    _, runs = _on_two_gpus(tmp_path, "tuned-zoo", MODELS="bert gpt2", TUNE_SECONDS="60")
    runs = sorted(runs)
    assert [(line.split()[0], line.split()[line.split().index("--shard") + 1]) for line in runs] == \
        [("0", "1/2"), ("1", "2/2")]
    assert all("--models bert gpt2 " in line and "--tune-minutes 10" in line and "--resume" in line
               for line in runs)


def test_tuned_zoo_side_by_side_measures_each_shard_again_alone(tmp_path):
    """SIDE=2 on two GPUs: four shards tuning at once, two a GPU, then each shard's rows measured
    again from its own log (no tuning) on the GPU it was tuned on, into tuned_alone_K.json, timed
    in turn with the other shard of its GPU."""
    _, runs = _on_two_gpus(tmp_path, "tuned-zoo", MODELS="bert gpt2 swin_t", TUNE_SECONDS="60", SIDE="2")

    def shard(line):  # (GPU, shard, tuning log)
        words = line.split()
        return words[0], words[words.index("--shard") + 1], words[-1]

    tuning = [line for line in runs if "--tune-minutes" in line]
    alone = [line for line in runs if "--tune-minutes" not in line]
    assert [s[:2] for s in sorted(map(shard, tuning))] == [("0", "1/4"), ("0", "3/4"), ("1", "2/4"), ("1", "4/4")]
    assert sorted(map(shard, alone)) == sorted(map(shard, tuning))
    assert all("--resume" not in line and "tuned_alone_" in line for line in alone)
    assert all("--no-compile" in line for line in tuning) and not any("--no-compile" in line for line in alone)
    turns = {shard(line)[0]: line.split()[line.split().index("--gpu-turn") + 1] for line in alone}
    assert len(set(turns.values())) == 2  # one timing turn a GPU
    cores = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    parallel = {line.split()[line.split().index("--parallel") + 1] for line in tuning}
    assert parallel == {str(max(1, cores // 4))}  # the four shards share the host's cores


def test_tuned_zoo_rows_are_a_shard_each_tuned_at_once_then_timed_in_turn(tmp_path):
    """ROWS: each (model, batch) a process of its own with its own tuning log, spread over the two
    GPUs, then measured again from that log, timed in turn a GPU."""
    _, runs = _on_two_gpus(tmp_path, "tuned-zoo", ROWS="swin_t:1 swin_t:32 bert:32", TUNE_SECONDS="60")

    def row(line):  # (GPU, model, batch, tuning log)
        w = line.split()
        return w[0], w[w.index("--models") + 1], w[w.index("--batch") + 1], w[-1]

    tuning = sorted(row(line) for line in runs if "--tune-minutes" in line)
    alone = sorted(row(line) for line in runs if "--tune-minutes" not in line)
    assert [t[1:3] for t in tuning] == [("bert", "32"), ("swin_t", "1"), ("swin_t", "32")]
    assert len({t[3] for t in tuning}) == 3 and alone == tuning  # a log each, measured from it
    assert {t[3] for t in tuning} == {f"db={tmp_path}/out/zoo_tuning_{m}_b{b}.jsonl" for _, m, b, _ in tuning}
    assert all("--shard" not in line for line in runs)
    assert all("--gpu-turn" in line for line in runs if "--tune-minutes" not in line)


def test_tuned_zoo_refuses_a_row_without_its_batch(tmp_path):
    r, runs = _on_two_gpus(tmp_path, "tuned-zoo", ok=False, ROWS="bert")
    assert r.returncode == 2 and "ROWS takes model:batch, not 'bert'" in r.stderr and runs == []
