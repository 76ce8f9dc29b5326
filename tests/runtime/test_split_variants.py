"""Split-K variants on llvm: a dynamic conv whose small-batch bucket calls for split-K (a split
policy that splits grids of at most two images, the CPU template made to vary with size) gets
that bucket's variant as a split pair (partial sums, then their sum with the epilogue), runs
each size on its bucket's kernels and matches numpy; the pairs' partial sums share one buffer a
buffer set, sized for the largest; a saved build loads with the pair and runs it."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import driver
from tefuse.graph import GraphBuilder
from tefuse.graph.split_k import SplitPolicy
from tefuse.runtime.artifact import load, save
from tefuse.runtime.kernel import SplitKernel
from tefuse.schedules.cpu.generic import CpuGeneric

HW, C, K = 5, 16, 8
RANGE, ENDS = "1:4:8", [2, 8]  # buckets 1-2 (split) and 3-8 (opt 4, unsplit)


class SmallGridSplits(SplitPolicy):
    """Two slices for a product of at most two images' pixels, none above."""

    def splits(self, m, n, depth, channels, lanes):
        return 2 if m <= 2 * HW * HW else 1


def _graph(batch="N"):
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (batch, HW, HW, C), "float16")
    w = b.const((rng.standard_normal((K, 3, 3, C)) * 0.2).astype("float16"))
    bias = b.const(rng.standard_normal(K).astype("float16"))
    return b.build(b.relu(b.bias_add(b.conv2d(x, w, padding=1, layout="NHWC", weight_layout="OHWI"), bias, axis=3)))


def _reference(x):
    g = _graph(x.shape[0])
    w, bias = (n.value.astype("float32") for n in g.constants)
    xp = np.pad(x.astype("float32"), ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # n, y, x, c, ry, rx
    return np.maximum(np.einsum("nyxcij,kijc->nyxk", windows, w) + bias, 0)


PROGRESS: list[tuple[int, int]] = []  # the build's progress calls (done, total)


@pytest.fixture(scope="module")
def split_build():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CpuGeneric, "size_buckets", True)
        mp.setattr(driver, "split_policy", lambda target, split_k, symbolic: SmallGridSplits(sms=1, min_mn=1))
        return tefuse.build(_graph(), "llvm", dynamic={"N": RANGE}, buckets={"N": ENDS}, cache=None,
                            progress=lambda done, total: PROGRESS.append((done, total)))


def test_progress_counts_the_kernels_and_the_variants_as_one(split_build):
    """The kernel and the pair's two compile as one count: 1, 2 and 3 of 3."""
    assert sorted(PROGRESS) == [(1, 3), (2, 3), (3, 3)]


def test_the_small_bucket_runs_a_split_pair_and_the_opt_bucket_the_kernel(split_build):
    cg = split_build
    (k,) = cg.kernels
    assert k.group.anchor.attrs.get("split_k", 1) == 1
    small, large = cg.kernels_for({"N": 1})[0], cg.kernels_for({"N": 5})[0]
    assert isinstance(small, SplitKernel) and large is k
    assert small.partial.group.anchor.attrs["split_k"] == 2 and small.total.group.anchor.op == "split_sum"
    assert small.scratch_shape == (2, 2, HW, HW, K)  # the partials at the bucket's largest batch
    assert cg.num_variants == 2 and cg.memory()["buffers"] >= 4 * int(np.prod(small.scratch_shape))


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_each_size_matches_numpy(split_build, n, rng):
    x = rng.standard_normal((n, HW, HW, C)).astype("float16")
    (got,) = split_build.run(x)
    want = _reference(x)
    np.testing.assert_allclose(got.astype("float32"), want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


def test_a_split_pair_times_as_one_kernel(split_build, rng):
    x = rng.standard_normal((1, HW, HW, C)).astype("float16")
    (t,) = split_build.time_kernels(x, number=1, repeat=1, min_repeat_ms=0)
    assert t > 0


def test_a_saved_split_pair_loads_and_runs(split_build, tmp_path, rng):
    save(split_build, tmp_path / "art")
    cg = load(tmp_path / "art")
    assert isinstance(cg.kernels_for({"N": 2})[0], SplitKernel)
    for n in (2, 6):
        x = rng.standard_normal((n, HW, HW, C)).astype("float16")
        np.testing.assert_array_equal(cg.run(x)[0], split_build.run(x)[0])


def test_pairs_sharing_their_partials_module_save_and_run_apart(tmp_path, rng):
    """Buckets 1 and 2 both split: the two pairs' partial sums compile to one module, and each
    keeps its own scratch size, in the build and in the artefact it loads from."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CpuGeneric, "size_buckets", True)
        mp.setattr(driver, "split_policy", lambda target, split_k, symbolic: SmallGridSplits(sms=1, min_mn=1))
        cg = tefuse.build(_graph(), "llvm", dynamic={"N": RANGE}, buckets={"N": [1, 2, 8]}, cache=None)
    one, two = cg.kernels_for({"N": 1})[0], cg.kernels_for({"N": 2})[0]
    assert one.partial.module is two.partial.module and one.scratch_shape != two.scratch_shape
    save(cg, tmp_path / "art")
    loaded = load(tmp_path / "art")
    assert [loaded.kernels_for({"N": n})[0].scratch_shape for n in (1, 2)] == [one.scratch_shape, two.scratch_shape]
    for n in (1, 2):
        x = rng.standard_normal((n, HW, HW, C)).astype("float16")
        want = _reference(x)
        np.testing.assert_allclose(loaded.run(x)[0].astype("float32"), want, rtol=2e-2, atol=2e-2 * np.abs(want).max())
