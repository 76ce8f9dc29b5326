"""The fingerprint comparison that proves a refactor changed no kernel."""
from tefuse.bench.sources import compare


def test_a_changed_kernel_is_a_difference_and_a_renamed_one_is_listed():
    before = {"case": [["g0", "tensorcore_gemm", 65, "aa"], ["g1", "injective", 2, "bb"]],
              "gone": [["g0", "t", 0, "cc"]]}
    after = {"case": [["g0", "wgmma_gemm", 7, "aa"], ["g1", "injective", 2, "dd"]]}
    diffs, renames = compare(before, after)
    assert diffs == ["case: kernel g1 (injective #2) differs from g1 (injective #2)", "gone: only before"]
    assert renames == ["case: kernel g0: tensorcore_gemm #65 -> wgmma_gemm #7, same code"]


def test_identical_fingerprints_compare_clean():
    same = {"case": [["g0", "t", 1, "aa"]]}
    assert compare(same, same) == ([], [])
