"""ONNX import as a package: context and registry below the converters, the importer on top,
so nothing imports in a cycle."""
from .importer import ImportProblem, import_onnx, load_model
from .batch import batch_input_shapes, dynamic_batch_inputs, import_onnx_profiles
from .registry import supported_ops

__all__ = ["ImportProblem", "batch_input_shapes", "dynamic_batch_inputs", "import_onnx", "import_onnx_profiles",
           "load_model", "supported_ops"]
