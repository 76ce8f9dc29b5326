"""Seeded random weights for models whose weights are constant fills.

Why: the ONNX package's light model-zoo networks store each weight as a ConstantOfShape fill,
so every output is (nearly) constant and a comparison with onnxruntime proves little. With
random weights the same model exercises every kernel's arithmetic.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper


GAIN = 0.5  # variance fan_in * w**2; He's 2 saturates ResNet-50's softmax to one-hot (a trivial check)


def randomize_constant_weights(model: onnx.ModelProto, seed: int = 0,
                               gain: float = GAIN) -> tuple[onnx.ModelProto, int]:
    """A copy with every ConstantOfShape weight replaced by a seeded random initializer, and how
    many were replaced.

    Normal weights of variance gain / fan_in keep activations in range (with GAIN, ResNet-50's
    softmax stays spread over its classes); 1-D tensors (biases, batch-norm scale/shift/mean/var)
    are uniform in [0.5, 1.5], so variances stay positive.
    """
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto.FromString(model.SerializeToString())
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    keep, new_inits = [], []
    for node in m.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = tuple(int(s) for s in inits[node.input[0]])
            if len(shape) >= 2:
                fan_in = int(np.prod(shape[1:]))
                w = rng.standard_normal(shape) * np.sqrt(gain / fan_in)
            else:
                w = rng.uniform(0.5, 1.5, shape)
            new_inits.append(numpy_helper.from_array(w.astype(np.float32), node.output[0]))
        else:
            keep.append(node)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    m.graph.initializer.extend(new_inits)
    # IR < 4 requires every initializer to be a graph input too; IR 4 (the opset-9 era) does not
    m.ir_version = max(m.ir_version, 4)
    return m, len(new_inits)
