"""Build options: the choices a build makes that no graph or target says, typed, with defaults.

One `BuildOptions` goes through `build()`, `tune()` and `FusionPlan.compile`; the kernel cache
keys a kernel by it and a tuning record stores it, so a record replays only under the options it
was measured with (a record without options was measured under the defaults). An option that only
chooses among configs and never changes the kernel a config makes (`transfer`) is marked
`keys=False`: it is left out of `changed()`, so it neither splits the kernel cache nor hides
records. The environment is read here alone (`from_env`), once, by the CLI and the `build`
facade: no template, pass or runtime reads it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Mapping, Optional

# environment variable -> BuildOptions field, each a switch: set and not "0" turns it on
ENV = {"TEFUSE_ROCM_MFMA": "prefer_mfma", "TEFUSE_TRANSFER": "transfer", "TEFUSE_HORIZONTAL": "horizontal"}


@dataclass(frozen=True)
class BuildOptions:
    """prefer_mfma: untuned builds for a ROCm arch with matrix cores take the MFMA templates,
    which are unmeasured on hardware and otherwise rank below the CUDA-family ones (tuning on an
    AMD GPU measures both either way).
    transfer: a kernel no tuning record covers takes the config the transfer cost model
    (tune/transfer.py, trained on the tuning logs) predicts fastest; off, its template's
    rule-based fallback. Only builds with a tuning database use it. Off by default until the
    model zoo has been checked on the GPU with predicted configs: the fallbacks are the configs
    that check has covered.
    horizontal: independent kernels of one dependency level that are launch-bound (at most
    `horizontal_waves` waves of thread blocks each) run as one launch (fusion/horizontal.py says
    which, codegen/horizontal.py merges them). Off by default until checked on the GPU.
    horizontal_waves: that bound; None merges kernels of any size (a multi-tensor optimizer
    step, one launch over all its tensors)."""

    prefer_mfma: bool = False
    transfer: bool = field(default=False, metadata={"keys": False})
    horizontal: bool = field(default=False, metadata={"keys": False})  # merged kernels have keys of their own
    horizontal_waves: Optional[float] = field(default=1.0, metadata={"keys": False})

    def changed(self) -> dict:
        """The fields that differ from the defaults, less those marked keys=False: what keys a
        kernel and marks a record."""
        default = BuildOptions()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.metadata.get("keys", True) and getattr(self, f.name) != getattr(default, f.name)}

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "BuildOptions":
        """The options the environment's switches (ENV) set, the defaults elsewhere."""
        environ = os.environ if environ is None else environ
        return cls(**{field: environ.get(var, "").strip() not in ("", "0")
                      for var, field in ENV.items() if var in environ})


DEFAULT = BuildOptions()
