"""ONNX op converters, one module per op family; importing this package fills the registry."""
from . import conv_transpose, einsum, elementwise, indexing, math, nn, norm, quantize, rearrange, reduce, resize, shape  # noqa: F401 - registration
