"""The tensor-core GEMM template: tiles.py holds the machinery its instruction families share,
mma.py and wgmma.py their schedules, sliced_k.py and cluster.py the cluster split-K, template.py
the registered template and its knob space."""
from . import template  # noqa: F401  (registration)
