"""Operators written in tvm.te, one module per family; importing registers them."""
from . import attention, color, conv2d, conv_transpose, creation, crop, dense, elemwise, indexing, lowbit, nn, normalize, pool, quantize, rearrange, reduce, resize, scan, split_k, transform  # noqa: F401  (registration)
from .elemwise import ACTIVATIONS
from .registry import OpDef, OpPattern, get_op, list_ops, register_op
from .value import Value

__all__ = ["ACTIVATIONS", "OpDef", "OpPattern", "Value", "get_op", "list_ops", "register_op"]
