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


# -- symbolic dims in a graph -------------------------------------------------------------------
def _named_graph():
    from tefuse.graph.ir import GraphBuilder

    b = GraphBuilder()
    x, y = b.input("x", ("N", "S", 8)), b.input("y", ("N", "S", 8))
    flat = b.reshape(b.add(x, y), shape=(-1, 8))
    return b, x, y, flat


def test_inputs_naming_a_dim_share_one_variable_and_expressions_follow():
    from tefuse.graph.dims import concrete_shape, declared_shape, dim_from_json, dim_to_json, dim_vars

    b, x, y, flat = _named_graph()
    assert x.shape[0].same_as(y.shape[0]) and x.type_str() == "float32[N,S,8]"
    assert declared_shape(x.shape) == ("N", "S", 8)
    assert concrete_shape(flat.shape, {"N": 3, "S": 5}) == (15, 8)
    assert sorted(dim_vars([flat.shape])) == ["N", "S"]
    variables = {}
    again = dim_from_json(dim_to_json(flat.shape[0]), variables)
    assert concrete_shape((again,), {"N": 2, "S": 7}) == (14,)


def test_reshape_infers_minus_one_by_cancelling_symbolic_factors():
    b, x, _, flat = _named_graph()
    back = b.reshape(flat, shape=(x.shape[0], -1, 8))
    assert back.type_str() == "float32[N,S,8]"
    heads = b.reshape(x, shape=(0, 0, 2, 4))
    assert heads.type_str() == "float32[N,S,2,4]"


def test_a_reshape_that_cannot_hold_the_elements_is_refused():
    from tefuse.errors import GraphError

    b, x, _, _ = _named_graph()
    with pytest.raises(GraphError, match="cannot"):
        b.reshape(x, shape=(-1, 3))


def test_a_symbolic_dim_broadcasts_with_one_or_itself_only():
    from tefuse.errors import GraphError
    from tefuse.graph.ir import GraphBuilder

    b = GraphBuilder()
    x, row, other = b.input("x", ("N", 8)), b.input("row", (1, 8)), b.input("z", ("M", 8))
    assert b.add(x, row).type_str() == "float32[N,8]"
    with pytest.raises(GraphError, match="symbolic dim broadcasts only with 1 or itself"):
        b.add(x, other)
