"""ONNX op converters, one module per op family; importing this package fills the registry."""
from . import elementwise, indexing, nn, rearrange, resize, shape  # noqa: F401 - registration
