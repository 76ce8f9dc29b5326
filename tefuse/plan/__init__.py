"""FusionPlan (MIOpen's Fusion API) and chain specs, its text form."""
from .fusion_plan import FusionPlan, OperatorArgs, TensorDesc
from .spec import build_plan, parse_chain, parse_shape

__all__ = ["FusionPlan", "OperatorArgs", "TensorDesc", "build_plan", "parse_chain", "parse_shape"]
