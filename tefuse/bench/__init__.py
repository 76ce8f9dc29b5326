"""Benchmarks run on the GPU machine (never as timed unit tests)."""
