"""Which kernels share a launch (fusion/horizontal.py): dependency levels, merge keys, the cost
rule's block and parameter limits."""
from __future__ import annotations

from tefuse.fusion.horizontal import HorizontalRule, LaunchInfo, dependency_levels, plan_launches

RULE = HorizontalRule(max_blocks=132, max_params=8)


def _kernel(reads, writes, key="k", blocks=10, params=2):
    return LaunchInfo(tuple(reads), tuple(writes), key, blocks, params)


def _inception():
    """x -> a, b1 -> b2, c1 -> c2 (three branches), then cat(a, b2, c2)."""
    x, a, b1, b2, c1, c2, cat = (object() for _ in range(7))
    return [_kernel([x], [a]), _kernel([x], [b1]), _kernel([b1], [b2]), _kernel([x], [c1]),
            _kernel([c1], [c2]), _kernel([a, b2, c2], [cat])]


def test_levels_count_the_longest_chain_of_producers():
    assert dependency_levels(_inception()) == [0, 0, 1, 0, 1, 2]


def test_the_branches_of_a_level_share_a_launch_and_run_before_the_next_level():
    assert plan_launches(_inception(), RULE) == [[0, 1, 3], [2, 4], [5]]


def test_kernels_of_other_keys_or_over_the_block_limit_keep_their_launch():
    ks = _inception()
    ks[1] = _kernel(ks[1].inputs, ks[1].outputs, key="other")
    ks[3] = _kernel(ks[3].inputs, ks[3].outputs, blocks=133)
    assert plan_launches(ks, RULE) == [[0], [1], [3], [2, 4], [5]]
    ks[4] = _kernel(ks[4].inputs, ks[4].outputs, key=None)
    assert plan_launches(ks, RULE) == [[i] for i in range(6)]


def test_a_launch_takes_at_most_max_params_buffers():
    x = object()
    ks = [_kernel([x], [object()], params=3) for _ in range(5)]
    assert plan_launches(ks, RULE) == [[0, 1], [2, 3], [4]]


def test_without_a_merge_the_order_is_left_as_it_was():
    ks = [_kernel([object()], [object()], key=str(i)) for i in range(3)]
    ks.reverse()
    assert plan_launches(ks, RULE) == [[0], [1], [2]]
    assert plan_launches(_inception(), HorizontalRule(max_blocks=5, max_params=8)) == [[i] for i in range(6)]
