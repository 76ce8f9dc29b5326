"""Dump what tefuse builds for ResNet-50's first fused group in fp16 (names, TIR, the compile error),
to find why nvcc reports an undefined `in_onnx__conv2d_reindex..._ptr` on the H100 machine only."""
import os
import sys
import traceback
from pathlib import Path

import onnx

from tefuse.bench.models import export_torchvision
from tefuse.codegen.lower import lower_group
from tefuse.codegen.schedule import apply_schedule, choose_schedule
from tefuse.frontend.onnx import import_onnx
from tefuse.fusion import fuse_graph
from tefuse.graph.precision import convert_precision
from tefuse.target import make_target

out = Path(os.environ.get("OUT", "/tmp"))
path = export_torchvision("resnet50", 1, Path("/tmp/r50.onnx"))
g = convert_precision(import_onnx(onnx.load(str(path))), "fp16")
group = fuse_graph(g)[0]
low = lower_group(group)
print("params", [p.name for p in low.params], "group", group.name)
t = make_target("cuda")
print("target", t)
ch = choose_schedule(low, t)
mod = apply_schedule(low, t, ch)
(out / "conv1_tir.py").write_text(mod.script())
try:
    from tefuse.codegen.compile import compile_module
    compile_module(mod, t, group.name, ch.template.pass_config(low.info, ch.config, t))
    print("compiled fine")
except Exception as e:  # noqa: BLE001
    (out / "conv1_error.txt").write_text("".join(traceback.format_exception(e)))
    print("failed; see conv1_error.txt")
sys.exit(0)
