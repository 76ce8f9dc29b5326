"""A build worker's entry point: TVM's popen worker (`tvm.exec.popen_worker`, same arguments: its
read and write fds), started with PyTorch marked absent before TVM loads (procs.without_torch)."""
import runpy

from .procs import without_torch

if __name__ == "__main__":
    without_torch()
    runpy.run_module("tvm.exec.popen_worker", run_name="__main__")
