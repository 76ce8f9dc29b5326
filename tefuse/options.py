"""Build options: the choices a build makes that no graph or target says, typed, with defaults.

One `BuildOptions` goes through `build()`, `tune()` and `FusionPlan.compile`; the kernel cache
keys a kernel by it and a tuning record stores it, so a record replays only under the options it
was measured with (a record without options was measured under the defaults). The environment is
read here alone (`from_env`), once, by the CLI and the `build` facade: no template, pass or
runtime reads it.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Mapping, Optional

# environment variable -> BuildOptions field, each a switch: set and not "0" turns it on
ENV = {"TEFUSE_ROCM_MFMA": "prefer_mfma"}


@dataclass(frozen=True)
class BuildOptions:
    """prefer_mfma: untuned builds for a ROCm arch with matrix cores take the MFMA templates,
    which are unmeasured on hardware and otherwise rank below the CUDA-family ones (tuning on an
    AMD GPU measures both either way)."""

    prefer_mfma: bool = False

    def changed(self) -> dict:
        """The fields that differ from the defaults: what keys a kernel and marks a record."""
        default = BuildOptions()
        return {k: v for k, v in asdict(self).items() if v != getattr(default, k)}

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "BuildOptions":
        """The options the environment's switches (ENV) set, the defaults elsewhere."""
        environ = os.environ if environ is None else environ
        return cls(**{field: environ.get(var, "").strip() not in ("", "0")
                      for var, field in ENV.items() if var in environ})


DEFAULT = BuildOptions()
