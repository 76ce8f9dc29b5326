"""Errors tefuse raises: each names what went wrong and where (node, plan step, log line)."""


class TefuseError(Exception):
    """Base class for every error tefuse raises on purpose."""


class OpError(TefuseError, ValueError):
    """An operator got inputs or attributes it cannot handle (raised by compute functions)."""


class GraphError(TefuseError, ValueError):
    """The graph is malformed: names the offending node."""


class UnsupportedFusion(TefuseError):
    """A FusionPlan step cannot be fused; raised when the op is added, not at compile time."""


class PlanStateError(TefuseError, RuntimeError):
    """A FusionPlan is used in the wrong state (executed before compile, changed after it)."""


class BuildError(TefuseError, RuntimeError):
    """Lowering, scheduling or compiling a fused group failed: names the group."""


class UnschedulableGroup(BuildError):
    """No untuned config of a group's template applies (a tuned one that fails is a plain
    BuildError: its record says it applied); the driver may split the group and try again."""


class ModelImportError(TefuseError, ValueError):
    """A model could not be imported; `problems` lists every offending node, not just the first.
    `constant_inputs` names the graph inputs that some node needs as constants (a Reshape's
    shape, a reduction's axes): importing again with their values (`import_onnx(...,
    constant_inputs=...)`) specializes the model on them."""

    def __init__(self, message: str, problems: list | None = None, constant_inputs: list | None = None):
        super().__init__(message)
        self.problems = list(problems or [])
        self.constant_inputs = list(constant_inputs or [])




class DynamicShapeError(TefuseError, ValueError):
    """A symbolic dimension's range is malformed, or a run's input sizes fall outside it or
    contradict one another (two inputs disagreeing on one named dim)."""


class SymbolicExtentError(BuildError):
    """A build over dim ranges reached a kernel no template of the target can schedule with a
    symbolic extent (a tensor-core GEMM sized from its M)."""
