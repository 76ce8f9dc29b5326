"""Autotuning: knob spaces, tuners, measurement, tuning logs (the performance database)."""
