"""TIR passes and rewrites the CUDA templates' kernels compile with: loop-invariant hoisting
(hoist.py), the shared-memory limit check (smem_limit.py), 16-bit staging (narrow_staging.py),
real rows past an operand's end (clamp_rows.py), zero-fill guards tested once a vector chunk
(chunk_guards.py), cluster split-K's sum (cluster_sum.py) and the
late lowering pipeline that runs it (late_pipeline.py), integer tile copies on cp.async
(int_tile_copies.py), and TVM's main lowering with places for these passes (s_tir_main.py)."""
