"""The pre-processing bench's cases without a GPU: each graph is one fused group, its numpy
reference agrees with tefuse's llvm build and with the torchvision peer run on CPU tensors, and
the bytes a kernel must touch are counted as the filter windows read them."""
from __future__ import annotations

import numpy as np

import tefuse
from tefuse.bench import preprocess as P
from tefuse.fusion import fuse_graph

SMALL_RECTS = ((0, 0, 34, 25), (10, 10, 70, 15), (20, 20, 60, 59), (30, 30, 20, 23), (40, 40, 12, 11))


def test_rgb_case_is_one_group_and_its_reference_holds():
    case = P.rgb_case(image=(120, 160, 3), again=((5, 6, 40, 20), (0, 0, 160, 120), (150, 110, 30, 30),
                                                  (1, 1, 1, 1), (7, 7, 9, 50)))
    assert len(fuse_graph(case.graph)) == 1
    assert case.feeds["image"].dtype == np.uint8 and case.feeds["rects"].shape == (5, 4)
    assert case.expected.shape == (5, 60, 60, 3) and case.expected.dtype == np.float32
    cg = tefuse.build(case.graph, "llvm")
    # the bench's own check (float32 source coordinates against the float64 reference)
    np.testing.assert_allclose(cg.run(**case.feeds)[0], case.expected, atol=1e-4)
    again = {**case.feeds, "rects": np.asarray(((5, 6, 40, 20), (0, 0, 160, 120), (150, 110, 30, 30), (1, 1, 1, 1),
                                                (7, 7, 9, 50)), np.int32)}
    np.testing.assert_allclose(cg.run(**again)[0], case.expected_again, atol=1e-4)


def test_torchvision_peer_matches_the_reference_on_cpu():
    import torch

    case = P.rgb_case(image=(120, 160, 3), again=None)
    out, run = P.torchvision_rgb(torch, torch.from_numpy(case.feeds["image"]), SMALL_RECTS)
    run()
    np.testing.assert_allclose(out.numpy(), case.expected, atol=1e-4)


def test_nv12_case_is_one_group_and_its_reference_holds():
    case = P.nv12_case(frame=(64, 96), rects=((0, 0, 48, 32), (40, 20, 56, 44), (3, 5, 7, 9)), size=(16, 12))
    assert len(fuse_graph(case.graph)) == 1
    assert case.expected.shape == (3, 3, 16, 12)
    cg = tefuse.build(case.graph, "llvm")
    np.testing.assert_allclose(cg.run(**case.feeds)[0], case.expected, atol=1e-4)


def test_touched_bytes_follow_the_filter_windows():
    """16 -> 4 reads rows and columns 4i + 1 and 4i + 2: 8 x 8 Y bytes; their
    chroma rows and columns (halved) are 0..7, 8 x 8 UV pairs of 2 bytes."""
    case = P.nv12_case(frame=(32, 32), rects=((0, 0, 16, 16),), size=(4, 4))
    out = 3 * 4 * 4 * 4
    assert case.touched == 8 * 8 + 8 * 8 * 2 + out
    assert case.whole == 16 * 16 * 3 // 2 + out
    # in 32-byte sectors: the 8 Y rows' columns 1..14 sit in one sector each, the 8 UV rows' pairs too
    assert case.sectors == 32 * (8 + 8) + out


def test_sectors_count_what_a_sparse_window_drags_in():
    """1920 -> 224 columns: 2 bytes every 8.6, so each 32-byte sector holds about 7 touched bytes
    and the sectors move about 4x the touched Y bytes."""
    rows, cols = {0}, {int(i) for c in P._taps(224, 1920)[:2] for i in c}
    assert P.nv12_sectors(rows, cols) == 32 * (60 + 60)  # 1920 bytes of Y, 1920 of UV: every sector
    assert len(cols) < 1920 // 4
