"""The Fused Kernel Library's own build of its README example, as the pre-processing bench's peer.

FKL (https://github.com/Libraries-Openly-Fused/FusedKernelLibrary, header-only C++20/CUDA) is
not a Python package: `build` compiles `fkl_example.cu` (tefuse's harness around FKL's public
API, the pipeline of FKL's README) with nvcc against a checkout's `include/` into a shared
library, and `FklExample` launches it through ctypes on the caller's CUDA stream, so that it is
captured and timed exactly as tefuse's kernel is, in the same process.
"""
from __future__ import annotations

import ctypes
import logging
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import TefuseError

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("fkl_example.cu")


class FklError(TefuseError):
    """FKL's example could not be built or run."""


@dataclass(frozen=True)
class FklBuild:
    library: Path
    command: list[str]  # the nvcc command that built it (recorded with the bench's results)


def build(checkout: Path, arch: str, workdir: Path, nvcc: str = "nvcc") -> FklBuild:
    """Compile the harness against `checkout`/include for `arch` (e.g. 'sm_90') into workdir."""
    include = Path(checkout) / "include"
    if not (include / "fused_kernel" / "fused_kernel.h").is_file():
        raise FklError(f"{checkout}: not a Fused Kernel Library checkout (no include/fused_kernel/fused_kernel.h)")
    if shutil.which(nvcc) is None:
        raise FklError(f"{nvcc} not found: FKL's example is compiled with nvcc")
    workdir.mkdir(parents=True, exist_ok=True)
    lib = workdir / "libfkl_example.so"
    cmd = [nvcc, "-std=c++20", "-O3", "--expt-relaxed-constexpr", "-w", "-shared", "-Xcompiler", "-fPIC",
           f"-arch={arch}", "-I", str(include), str(SOURCE), "-o", str(lib)]
    log.info("building FKL's example: %s", shlex.join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise FklError(f"nvcc failed on FKL's example ({done.returncode}): "
                       f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return FklBuild(lib, cmd)


class FklExample:
    """The built example: `rects()` its five rectangles (x, y, w, h), `run(...)` one launch."""

    def __init__(self, library: Path):
        self._lib = ctypes.CDLL(str(library))
        self._lib.fkl_example_rects.argtypes = [ctypes.POINTER(ctypes.c_int)]
        self._lib.fkl_example_run.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                              ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_void_p]

    def rects(self) -> list[tuple[int, int, int, int]]:
        buf = (ctypes.c_int * 20)()
        n = self._lib.fkl_example_rects(buf)
        return [tuple(buf[4 * i:4 * i + 4]) for i in range(n)]

    def run(self, image_ptr: int, width: int, height: int, pitch: int, out_ptr: int, background, stream: int) -> None:
        """One launch on `stream` (a cudaStream_t as an int): image a device [height, width, 3]
        uint8 array, out a device float32 [5, 60, 60, 3] array."""
        err = self._lib.fkl_example_run(image_ptr, width, height, pitch, out_ptr, *map(float, background), stream)
        if err:
            raise FklError(f"FKL's example failed to launch: cudaError {err}")
