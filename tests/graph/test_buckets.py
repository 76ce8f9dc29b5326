"""Size buckets of dim ranges (graph/buckets.py): the default ends, a bucket's representative size,
keys of a run's sizes, the CLI's --buckets, and bad ends refused in one line."""
import pytest

from tefuse.errors import DynamicShapeError
from tefuse.graph.buckets import bucket_plan, default_ends, parse_buckets
from tefuse.graph.dims import parse_range


def test_default_ends_are_opt_over_eight_and_max():
    assert default_ends(parse_range("1:32:64")) == (4, 64)  # 33-64 takes opt's tiles
    assert default_ends(parse_range("16:128:384")) == (16, 384)
    assert default_ends(parse_range("1:4:8")) == (8,)  # 4 // 8 is below min
    assert default_ends(parse_range("16:128:128")) == (16, 128)
    assert default_ends(parse_range("8")) == (8,)


def test_opt_ends_a_bucket_where_max_is_far_above_it():
    assert default_ends(parse_range("1:8:64")) == (1, 8, 64)
    assert default_ends(parse_range("1:1:64")) == (1, 64)  # batch 64 would not run on batch 1's tiles


def test_a_bucket_is_scheduled_for_opt_where_it_holds_it_below_for_its_smallest_above_for_its_largest():
    plan = bucket_plan({"N": parse_range("1:32:64")}, {"N": [1, 8]})
    assert [(b.lo, b.hi, b.size) for b in plan.buckets[0]] == [(1, 1, 1), (2, 8, 2), (9, 64, 32)]
    above = bucket_plan({"N": parse_range("1:8:64")}, {"N": [4, 8, 64]})
    assert [(b.lo, b.hi, b.size) for b in above.buckets[0]] == [(1, 4, 1), (5, 8, 8), (9, 64, 64)]
    assert plan.opt_key == (2,)
    assert [plan.key_of({"N": n}) for n in (1, 2, 8, 9, 64)] == [(0,), (1,), (1,), (2,), (2,)]
    assert plan.to_json() == {"N": [1, 8, 64]}


def test_two_dims_give_the_product_and_a_kernel_projects_onto_its_own():
    plan = bucket_plan({"N": parse_range("1:8:64"), "S": parse_range("16:128:384")})
    assert plan.size == 6 and plan.opt_key == (1, 1)
    assert plan.hints((2, 0)) == {"N": 64, "S": 16}
    assert plan.hints((0, 1)) == {"N": 1, "S": 128}  # 17-384 holds S's opt: scheduled at it
    assert plan.project((2, 0), {"N"}) == (2, 1)  # a kernel over N alone: S at its opt bucket


def test_no_buckets_is_one_bucket_a_dim_scheduled_for_opt():
    plan = bucket_plan({"N": parse_range("1:32:64")}, False)
    assert plan.size == 1 and plan.hints(plan.opt_key) == {"N": 32}


def test_cli_buckets_parse_and_bad_ones_are_one_line():
    assert parse_buckets(["N=1,8,64", "S=128"]) == {"N": (1, 8, 64), "S": (128,)}
    for bad, match in ((["N"], "expected NAME="), (["N=1,x"], "not a list of sizes"), (["N=1", "N=2"], "twice")):
        with pytest.raises(DynamicShapeError, match=match) as e:
            parse_buckets(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(DynamicShapeError, match="'M', which has no range"):
        bucket_plan({"N": parse_range("1:8:64")}, {"M": [4]})
    with pytest.raises(DynamicShapeError, match="end 0 lies outside its range 1:8:64"):
        bucket_plan({"N": parse_range("1:8:64")}, {"N": [0, 8]})
