"""CPU (llvm) templates: correctness-first, parallel over outer loops."""
from . import generic  # noqa: F401
