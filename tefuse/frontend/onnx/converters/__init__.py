"""ONNX op converters, one module per op family; importing this package fills the registry."""
from . import elementwise, nn, shape  # noqa: F401 - registration
from . import conv_transpose, einsum, math, norm, reduce  # noqa: F401 - registration
