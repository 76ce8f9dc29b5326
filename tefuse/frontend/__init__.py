"""Model frontends: other formats turned into tefuse's graph IR."""
from .onnx import ImportProblem, import_onnx

__all__ = ["ImportProblem", "import_onnx"]
