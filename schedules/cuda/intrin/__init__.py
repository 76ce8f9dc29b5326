"""Tensor intrinsics TVM does not ship: bf16 and tf32 mma.sync, Hopper's wgmma, the flash
attention's fused steps."""
