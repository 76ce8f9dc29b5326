"""ONNX import as a package: context and registry below the converters, the importer on top,
so nothing imports in a cycle."""
from .importer import ImportProblem, import_onnx, load_model
from .registry import supported_ops

__all__ = ["ImportProblem", "import_onnx", "load_model", "supported_ops"]
