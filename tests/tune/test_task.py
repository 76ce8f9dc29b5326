"""Tuning tasks: which templates a task tunes."""
from __future__ import annotations

import numpy as np

from tefuse.graph import GraphBuilder
from tefuse.tune.task import extract_tasks


def _conv(dtype: str):
    b = GraphBuilder()
    x = b.input("x", (2, 14, 14, 64), dtype)
    w = b.const((np.random.default_rng(0).standard_normal((3, 3, 64, 64)) * 0.1).astype(dtype), name="w")
    return b.build(b.relu(b.conv2d(x, w, padding=1, layout="NHWC")))


def test_a_tensor_core_task_tunes_only_the_tensor_core_template():
    """fp16 on sm_90: CUDA-core conv templates cannot win (5-100x slower on the H100), so tuning
    gives them no trials (the task still lists them: a record may name one); float32 tunes every
    template that accepts the conv."""
    (fp16,) = extract_tasks(_conv("float16"), "cuda:sm_90")
    assert [t.name for t in fp16.tunable()] == ["tensorcore_gemm"]
    assert len(fp16.templates) >= 3 and fp16.templates[0].name == "tensorcore_gemm"
    (fp32,) = extract_tasks(_conv("float32"), "cuda:sm_90")
    names = [t.name for t in fp32.tunable()]
    assert "tensorcore_gemm" not in names and len(names) >= 2 and names == [t.name for t in fp32.templates]
    (old,) = extract_tasks(_conv("float16"), "cuda:sm_70")  # wmma only, below the mma preference
    assert len(old.tunable()) >= 2


def test_a_template_that_does_not_support_the_target_gets_no_trials():
    """An fp16 attention op on sm_75: flash attention (mma.sync m16n8k16: sm_80 and later) says it
    does not build there, so tuning gives its configs no trials; on sm_90 it is the one tuned."""
    b = GraphBuilder()
    q, k, v = (b.input(n, (2, 64, 64), "float16") for n in "qkv")
    g = b.build(b.attention(q, k, v))
    (old,) = extract_tasks(g, "cuda:sm_75")
    assert "flash_attention" in [t.name for t in old.templates]
    assert "flash_attention" not in [t.name for t in old.tunable()] and old.tunable()
    (new,) = extract_tasks(g, "cuda:sm_90")
    assert [t.name for t in new.tunable()] == ["flash_attention"]


def _two_scaled_convs(second_scale: float):
    """Two conv+multiply+relu groups alike but for the scalar each multiplies by."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 8))
    rng = np.random.default_rng(0)
    y = x
    for k, s in enumerate((0.5, second_scale)):
        w = b.const(rng.standard_normal((8, 8, 3, 3)).astype("float32"), name=f"w{k}")
        y = b.relu(b.mul(b.conv2d(y, w, padding=1), b.const(np.array(s, "float32"))))
    return b.build(y)


def test_groups_differing_only_in_folded_constants_are_one_task_with_both_weights():
    """A quantized model's layers differ in their scales: one task tunes them all."""
    from tefuse.fusion import fuse_graph
    from tefuse.fusion.workload import structure_key, workload_key

    groups = fuse_graph(_two_scaled_convs(0.25))
    assert len(groups) == 2 and workload_key(groups[0]) != workload_key(groups[1])
    assert structure_key(groups[0]) == structure_key(groups[1])
    (task,) = extract_tasks(_two_scaled_convs(0.25), "cuda:sm_90")
    assert task.weight == 2 and task.structure == structure_key(groups[0])
    assert len(extract_tasks(_two_scaled_convs(0.5), "cuda:sm_90")) == 1  # the same group twice: one task too


def test_a_task_is_covered_only_where_every_kernel_of_its_structure_takes_a_record(tmp_path):
    """An older record (no structure) serves its own workload alone: the task it stands for is
    not covered while the other kernel of the structure would build with its fallback."""
    from tefuse.tune.database import Database, LayeredDatabase
    from tefuse.tune.loop import has_record
    from tefuse.tune.record import TuningRecord

    (task,) = extract_tasks(_two_scaled_convs(0.25), "cuda:sm_90")
    assert len(task.members) == 1
    cfg = task.fallback()
    t = task.templates[0].name

    def record(structure):
        return TuningRecord(task.workload, task.target_key, "gpu", t, cfg.to_json(), cfg.index, [1e-3],
                            structure=structure)

    old = Database(tmp_path / "old.jsonl")
    old.append(record(None))
    assert not has_record(task, old)
    new = Database(tmp_path / "new.jsonl")
    new.append(record(task.structure))
    assert has_record(task, new) and has_record(task, LayeredDatabase([old, new]))
    assert len(LayeredDatabase([old, new]).structure_records(task.structure, task.target_key)) == 1
