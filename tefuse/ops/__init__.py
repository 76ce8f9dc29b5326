"""Operators written in tvm.te, one module per family; importing registers them."""
from . import attention, conv2d, dense, elemwise, lowbit, nn, pool, reduce, split_k, transform  # noqa: F401  (registration)
from . import conv_transpose  # noqa: F401  (registration)
from .elemwise import ACTIVATIONS
from .registry import OpDef, OpPattern, get_op, list_ops, register_op
from .value import Value

__all__ = ["ACTIVATIONS", "OpDef", "OpPattern", "Value", "get_op", "list_ops", "register_op"]
