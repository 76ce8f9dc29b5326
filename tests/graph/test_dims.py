import pytest

from tefuse.errors import DynamicShapeError
from tefuse.graph.dims import DimRange, bind_dims, max_shape, parse_dynamic, parse_range

RANGES = {"N": DimRange(1, 8, 64), "S": DimRange(1, 16, 128)}
SPECS = {"q": ("N", "S", 32), "k": ("N", "S", 32)}


def test_parse_dynamic_forms():
    r = parse_dynamic(["N=1:8:64", "S=2:128", "B=4"])
    assert r == {"N": DimRange(1, 8, 64), "S": DimRange(2, 128, 128), "B": DimRange(4, 4, 4)}


@pytest.mark.parametrize("spec", ["N", "=1:2:3", "N=a:b", "N=1:2:3:4", "N=8:4:16", "N=0:1:2"])
def test_parse_dynamic_refuses_malformed(spec):
    with pytest.raises(DynamicShapeError):
        parse_dynamic([spec])


def test_parse_dynamic_refuses_name_twice():
    with pytest.raises(DynamicShapeError, match="twice"):
        parse_dynamic(["N=1:2:3", "N=1:2:4"])


def test_bind_dims_binds_each_name_once():
    assert bind_dims(SPECS, {"q": (3, 7, 32), "k": (3, 7, 32)}, RANGES) == {"N": 3, "S": 7}


def test_bind_dims_refuses_disagreeing_inputs_in_one_line():
    with pytest.raises(DynamicShapeError) as e:
        bind_dims(SPECS, {"q": (3, 7, 32), "k": (3, 9, 32)}, RANGES)
    msg = str(e.value)
    assert "\n" not in msg and "'S'" in msg and "'k'" in msg and "'q'" in msg


def test_bind_dims_refuses_out_of_range():
    with pytest.raises(DynamicShapeError, match="outside its range 1:8:64"):
        bind_dims(SPECS, {"q": (65, 7, 32), "k": (65, 7, 32)}, RANGES)


def test_bind_dims_refuses_fixed_size_and_rank():
    with pytest.raises(DynamicShapeError, match="axis 2 is 16"):
        bind_dims(SPECS, {"q": (3, 7, 16), "k": (3, 7, 16)}, RANGES)
    with pytest.raises(DynamicShapeError, match="rank 2"):
        bind_dims(SPECS, {"q": (3, 7), "k": (3, 7, 32)}, RANGES)


def test_max_shape():
    assert max_shape(("N", "S", 32), RANGES) == (64, 128, 32)
    with pytest.raises(DynamicShapeError, match="no range"):
        max_shape(("T", 4), RANGES)
