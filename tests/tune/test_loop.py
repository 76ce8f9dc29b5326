"""The tuning loop's concurrency: tasks tuned at once overlap one task's builds with another's
measurements, a device never measures two candidates at once, and nothing is lost or reordered."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tefuse import GraphBuilder
from tefuse.driver import prepare_graph
from tefuse.tune.database import Database
from tefuse.tune.loop import tune
from tefuse.tune.measure import BuildResult, MeasureResult, RunSpec
from tefuse.tune.parallel import ParallelRunner, Slot
from tefuse.tune.task import as_tasks


def _three_kernels():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    y = b.relu(b.conv2d(x, b.const(np.ones((4, 4, 3, 3), "float32")), padding=1))
    y = b.relu(b.conv2d(y, b.const(np.ones((8, 4, 1, 1), "float32"))))
    y = b.sigmoid(b.conv2d(y, b.const(np.ones((8, 8, 3, 3), "float32")), padding=1))
    return b.build(y)


class Timeline:
    """(what, start, end) of every build batch and every measurement, from any thread."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()

    def span(self, what: str, seconds: float) -> None:
        t0 = time.perf_counter()
        time.sleep(seconds)
        with self.lock:
            self.spans.append((what, t0, time.perf_counter()))

    def overlaps(self, a: str, b: str) -> bool:
        xs = [s for s in self.spans if s[0] == a]
        ys = [s for s in self.spans if s[0] == b]
        return any(x0 < y1 and y0 < x1 for _, x0, x1 in xs for _, y0, y1 in ys)


class FakeBuilder:
    n_parallel = 4

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def build(self, task, template, configs):
        self.timeline.span("build", 0.05)
        return [BuildResult(c.index, c.to_json(), f"/x/{c.index}.so") for c in configs]

    def close(self) -> None:
        pass


class FakeRunner:
    """One device; measures a batch one candidate after another."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline, self.busy = timeline, False

    def run(self, spec, kind, builds, reference=None):
        assert not self.busy, "two batches measured on one device at once"
        self.busy = True
        try:
            out = []
            for b in builds:
                self.timeline.span("measure", 0.02)
                out.append(MeasureResult(b.index, b.config, costs=[1e-3 * (b.index + 1)]))
            return out
        finally:
            self.busy = False

    def close(self) -> None:
        pass


def _tune(tmp_path, at_once, target="llvm"):
    timeline = Timeline()
    tasks = as_tasks(_three_kernels(), target)
    assert len(tasks) == 3
    log = tmp_path / f"at{at_once}.jsonl"
    res = tune(tasks, trials=4, tuner="random", log=str(log), builder=FakeBuilder(timeline),
               runner=FakeRunner(timeline), batch_size=2, tasks_at_once=at_once)
    return tasks, res, Database(log).records(), timeline


def test_concurrent_tasks_overlap_builds_with_measurements_and_keep_everything(tmp_path):
    tasks, res, recs, timeline = _tune(tmp_path, 2)
    assert timeline.overlaps("build", "measure")
    # results in task order; every measurement in the log, once
    assert [r.task.workload for r in res] == [t.workload for t in tasks for _ in t.templates]
    per_task = {t.workload: sum(1 for r in recs if r.workload == t.workload) for t in tasks}
    assert per_task == {t.workload: max(4, len(t.templates)) for t in tasks}
    assert len({(r.workload, r.template, r.config_index) for r in recs}) == len(recs)


def test_one_task_at_a_time_takes_turns(tmp_path):
    _, _, recs, timeline = _tune(tmp_path, 1)
    assert not timeline.overlaps("build", "measure")
    assert len(recs) == 12


def test_by_default_gpu_kernels_overlap_and_cpu_kernels_take_turns(tmp_path):
    """On the CPU target the measurements would share the CPUs with builds: one at a time."""
    assert not _tune(tmp_path, None, "llvm")[3].overlaps("build", "measure")
    assert _tune(tmp_path / "gpu", None, "cuda")[3].overlaps("build", "measure")


def test_gpu_kernels_tuned_at_once_scale_with_the_devices():
    """Eight kernels a device at once on a GPU (each round waits seconds on its builds), capped
    at the kernels there are; one on the CPU target."""
    from tefuse.tune.loop import AT_ONCE_PER_DEVICE, default_at_once, workers_shape

    gpu, cpu = as_tasks(_three_kernels(), "cuda"), as_tasks(_three_kernels(), "llvm")
    assert [default_at_once(gpu, d) for d in (1, 2)] == [AT_ONCE_PER_DEVICE, 2 * AT_ONCE_PER_DEVICE]
    assert default_at_once(cpu, 2) == 1
    assert workers_shape(gpu, FakeBuilder(Timeline()), FakeRunner(Timeline()), 2, None)[2] == len(gpu)


class ExclusiveSlot(Slot):
    """Fails the test if it is asked to measure while it is measuring."""

    def __init__(self, name: str) -> None:
        self.name, self.active, self.clashes, self.n = name, 0, 0, 0
        self.lock = threading.Lock()

    def measure(self, spec, kind, build, reference):
        with self.lock:
            self.active += 1
            self.clashes += self.active > 1
            self.n += 1
        time.sleep(0.005)
        with self.lock:
            self.active -= 1
        return MeasureResult(build.index, build.config, costs=[1e-3])


def test_parallel_runner_shared_by_concurrent_runs_measures_one_candidate_per_device():
    slots = [ExclusiveSlot("a"), ExclusiveSlot("b")]
    runner = ParallelRunner(lambda: slots)
    outs: dict[int, list] = {}

    def one_run(k: int) -> None:
        builds = [BuildResult(i, {"i": i}, f"/x/{k}/{i}.so") for i in range(10)]
        outs[k] = runner.run(RunSpec("k", [], []), "llvm", builds)

    threads = [threading.Thread(target=one_run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s.clashes for s in slots] == [0, 0]
    assert all([m.index for m in outs[k]] == list(range(10)) for k in range(3))
    assert sum(runner.counts.values()) == 30 and all(s.n > 0 for s in slots)


def test_the_first_error_in_time_stops_the_rest_and_is_raised(caplog):
    from tefuse.tune.loop import in_threads

    started = []

    def job(k, delay, fail):
        started.append(k)
        time.sleep(delay)
        if fail:
            raise fail(f"job {k}")
        return k

    jobs = [(0, 0.6, RuntimeError), (1, 0.1, ValueError), (2, 0.1, None), (3, 0.1, None), (4, 0.1, None)]
    stop = threading.Event()
    with pytest.raises(ValueError, match="job 1"):
        in_threads(job, jobs, 2, stop)
    assert stop.is_set() and "job 0" in caplog.text  # the later error is logged, not lost
    assert 4 not in started  # jobs queued after the error never start


def test_an_interrupt_stops_queued_jobs_at_once(monkeypatch):
    """Ctrl-C arrives while the main thread waits (a KeyboardInterrupt out of wait(); signals
    themselves are the test runner's business): queued kernels never start."""
    import tefuse.tune.loop as loop

    def interrupted_wait(futures):
        time.sleep(0.1)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "wait", interrupted_wait)
    started = []

    def job(k):
        started.append(k)
        time.sleep(0.3)
        return k

    stop = threading.Event()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        loop.in_threads(job, [(k,) for k in range(8)], 2, stop)
    assert stop.is_set() and time.perf_counter() - t0 < 1.0 and len(started) <= 3


def test_concurrent_builds_share_one_worker_pool(monkeypatch):
    from tefuse.tune import builder as builder_mod

    made = []

    class Pool:
        def __init__(self, *a, **kw):
            time.sleep(0.05)  # a slow start widens any race
            made.append(self)

    monkeypatch.setattr(builder_mod, "LeanPopenPoolExecutor", Pool)
    b = builder_mod.LocalBuilder(n_parallel=1)
    threads = [threading.Thread(target=b._get_pool, args=("cuda",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    b._pool = None
    b.close()
    assert len(made) == 1


def test_the_fallback_config_is_measured_first_and_once(tmp_path):
    """A record then never loses to the untuned build: the untuned build's config is one of them."""
    timeline = Timeline()
    tasks = as_tasks(_three_kernels(), "llvm")
    log = tmp_path / "fb.jsonl"
    for trials in (3, 6):  # the second call resumes from the log
        tune(tasks, trials=trials, tuner="random", log=str(log), builder=FakeBuilder(timeline),
             runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1, seed=trials)
    recs = Database(log).records()
    for t in tasks:
        mine = [r for r in recs if r.workload == t.workload and r.template == t.templates[0].name]
        fb = t.fallback()
        assert mine[0].config_index == fb.index and mine[0].config == fb.to_json()
        assert [r.config_index for r in mine].count(fb.index) == 1
        assert len({r.config_index for r in mine}) == len(mine)
        assert {r.structure for r in mine} == {t.structure}  # build finds them for kernels alike


def test_a_resumed_search_knows_its_configs_by_their_values_not_their_logged_indices(tmp_path):
    """A log written under an older space (a knob value fewer: its configs numbered otherwise)
    still tells a resumed search what it measured: searching the whole space then measures every
    config exactly once, none twice and none left out as if done."""
    import json
    import re

    timeline = Timeline()
    task = as_tasks(_three_kernels(), "llvm")[0]
    log = tmp_path / "old.jsonl"
    tune([task], trials=4, tuner="random", log=str(log), builder=FakeBuilder(timeline),
         runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1, seed=1)
    n = len(task.templates[0].space(task.info, task.target))
    log = tmp_path / "shifted.jsonl"  # (a new path: open_database keeps each path's parse)
    log.write_text(re.sub(r'"config_index":(\d+)', lambda m: f'"config_index":{(int(m.group(1)) + 1) % n}',
                          (tmp_path / "old.jsonl").read_text()))
    tune([task], trials=n, tuner="grid", log=str(log), builder=FakeBuilder(timeline),
         runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1)
    mine = [json.dumps(r.config, sort_keys=True) for r in Database(log).records()
            if r.workload == task.workload and r.template == task.templates[0].name]
    assert len(mine) == n and len(set(mine)) == n


def test_the_rest_of_the_budget_goes_to_the_fastest_template(tmp_path):
    """Each template gets a probe; the rest of the trials go to the one that leads (FakeRunner's
    cost grows with the index, so the template whose probes found the lowest indices leads)."""
    tasks = [t for t in as_tasks(_three_kernels(), "cuda") if len(t.templates) > 1]
    assert tasks, "no kernel with several templates"
    log = tmp_path / "split.jsonl"
    timeline = Timeline()
    res = tune(tasks, trials=12, tuner="random", log=str(log), builder=FakeBuilder(timeline),
               runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1)
    recs = Database(log).records()
    for t in tasks:
        n = len(t.templates)
        mine = {tm.name: [r for r in recs if r.workload == t.workload and r.template == tm.name] for tm in t.templates}
        probe = 12 // (2 * n)
        assert sum(map(len, mine.values())) == 12
        leader = min(mine, key=lambda tm: min(r.median_cost for r in mine[tm][:probe]))
        assert len(mine[leader]) == 12 - probe * (n - 1)
        assert all(len(v) == probe for tm, v in mine.items() if tm != leader)
        r = next(r for r in res if r.task is t and r.template == leader)
        assert r.measured == len(mine[leader]) and len(r.history) == r.measured


def test_shipped_records_neither_use_the_budget_nor_replace_the_fallback(tmp_path):
    """Records from the shipped logs were measured elsewhere: tuning measures its whole budget,
    the fallback first, into the user's log."""
    from tefuse.tune.database import LayeredDatabase

    timeline = Timeline()
    tasks = as_tasks(_three_kernels(), "llvm")[:1]
    shipped = tmp_path / "shipped.jsonl"
    tune(tasks, trials=4, tuner="random", log=str(shipped), builder=FakeBuilder(timeline),
         runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1)
    user = tmp_path / "user.jsonl"
    db = LayeredDatabase([Database(user), Database(shipped)])
    tune(tasks, trials=4, tuner="random", log=db, builder=FakeBuilder(timeline),
         runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1, seed=1)
    mine = Database(user).records()
    assert len(mine) == max(4, len(tasks[0].templates))
    assert mine[0].config_index == tasks[0].fallback().index


def test_a_tensor_core_kernel_spends_every_trial_on_the_tensor_core_template(tmp_path):
    """An fp16 conv on sm_90 lists CUDA-core templates too (a record may name one), but none of
    them gets a trial: all 8 go to the tensor-core template."""
    b = GraphBuilder()
    x = b.input("x", (2, 14, 14, 64), "float16")
    w = b.const((np.random.default_rng(0).standard_normal((3, 3, 64, 64)) * 0.1).astype("float16"))
    (task,) = as_tasks(b.build(b.relu(b.conv2d(x, w, padding=1, layout="NHWC"))), "cuda:sm_90")
    assert len(task.templates) > 1
    log = tmp_path / "tc.jsonl"
    timeline = Timeline()
    tune([task], trials=8, tuner="random", log=str(log), builder=FakeBuilder(timeline),
         runner=FakeRunner(timeline), batch_size=2, tasks_at_once=1)
    assert [r.template for r in Database(log).records()] == ["tensorcore_gemm"] * 8


def test_only_narrows_the_search_to_one_knob_value_and_one_config_per_wgmma_tile(tmp_path):
    """`only={"intrin": "wgmma"}` with the grid tuner sweeps Hopper's wgmma configs of an fp16
    conv: after the fallback, every measured config is wgmma, and no two share a block tile,
    stage count and store width (wgmma has no warp tile: those would be one kernel twice)."""
    b = GraphBuilder()
    x = b.input("x", (16, 28, 28, 128), "float16")
    w = b.const((np.random.default_rng(0).standard_normal((1, 1, 128, 512)) * 0.1).astype("float16"))
    graph = prepare_graph(b.build(b.relu(b.conv2d(x, w, layout="NHWC"))), "cuda:sm_90")  # OHWI: wgmma's B
    (task,) = as_tasks(graph, "cuda:sm_90")
    log = tmp_path / "wgmma.jsonl"
    tune([task], trials=500, tuner="grid", log=str(log), builder=FakeBuilder(Timeline()),
         runner=FakeRunner(Timeline()), batch_size=8, tasks_at_once=1, only={"intrin": "wgmma"})
    recs = Database(log).records()
    assert recs[0].config_index == task.fallback().index
    kernels = [(tuple(r.config["tile"][:2]), r.config["stages"], r.config["vec_out"], r.config.get("slices", 1))
               for r in recs]
    assert all(r.config["intrin"] == "wgmma" and r.config["bk"] == 64 for r in recs)
    assert len(set(kernels)) == len(kernels)
    # (BM, BN) pairs (3 of them wgmma-only: 192 wide) x stages 1-4 x store widths, and 6 or 8 stages
    # where they fit Hopper's 227 KB: 128x128 at 6, 128x64, 64x128 and 64x64 at both (7 x 2 widths);
    # no cluster slices: a 128-deep reduction has no two k steps to give each
    assert len(kernels) == 9 * 4 * 2 + 7 * 2


def test_only_leaves_kernels_that_cannot_take_the_value_untuned_and_refuses_a_value_none_can(tmp_path):
    """intrin=wgmma over a conv and a softmax: the conv's wgmma configs are tuned, the softmax
    (no such knob) is not; over the softmax alone it is a KnobError naming the kernel."""
    from tefuse.schedules.space import KnobError

    b = GraphBuilder()
    x = b.input("x", (2, 14, 14, 64), "float16")
    w = b.const((np.random.default_rng(0).standard_normal((1, 1, 64, 128)) * 0.1).astype("float16"))
    graph = prepare_graph(b.build(b.softmax(b.conv2d(x, w, layout="NHWC"), axis=-1)), "cuda:sm_90")
    tasks = as_tasks(graph, "cuda:sm_90")
    assert len(tasks) == 2
    log = tmp_path / "two.jsonl"
    tune(tasks, trials=4, tuner="grid", log=str(log), builder=FakeBuilder(Timeline()),
         runner=FakeRunner(Timeline()), batch_size=2, tasks_at_once=1, only={"intrin": "wgmma"})
    recs = Database(log).records()
    assert {r.workload for r in recs} == {tasks[0].workload} and all(r.config["intrin"] == "wgmma" for r in recs)
    with pytest.raises(KnobError, match=tasks[1].name):
        tune(tasks[1:], trials=4, tuner="grid", log=str(tmp_path / "none.jsonl"), builder=FakeBuilder(Timeline()),
             runner=FakeRunner(Timeline()), batch_size=2, tasks_at_once=1, only={"intrin": "wgmma"})


def _scaled_conv(scale: float):
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 8))
    w = b.const(np.random.default_rng(0).standard_normal((8, 8, 3, 3)).astype("float32"))
    return b.build(b.relu(b.mul(b.conv2d(x, w, padding=1), b.const(np.array(scale, "float32")))))


def test_a_recalibrated_kernel_resumes_from_its_structures_records(tmp_path):
    """The same conv with another scale (a new calibration) does not measure again the configs
    its structure's records hold."""
    timeline = Timeline()
    log = tmp_path / "log.jsonl"
    first = as_tasks(_scaled_conv(0.5), "llvm")
    tune(first, trials=4, tuner="random", log=str(log), builder=FakeBuilder(timeline), runner=FakeRunner(timeline),
         batch_size=2, tasks_at_once=1, seed=0)
    (again,) = as_tasks(_scaled_conv(0.25), "llvm")
    assert again.workload != first[0].workload and again.structure == first[0].structure
    tune([again], trials=6, tuner="random", log=str(log), builder=FakeBuilder(timeline), runner=FakeRunner(timeline),
         batch_size=2, tasks_at_once=1, seed=1)
    recs = Database(log).records()
    before = {r.config_index for r in recs if r.workload == first[0].workload}
    after = [r.config_index for r in recs if r.workload == again.workload]
    assert len(before) == 4 and len(after) == 2 and not before & set(after)
    # the build takes the fastest of both workloads' records: the like's measurements count too
    from tefuse.codegen.schedule import choose_schedule

    fastest = min((r for r in recs if r.ok), key=lambda r: r.median_cost)
    assert choose_schedule(again.lowered, again.target, Database(log)).config.index == fastest.config_index
