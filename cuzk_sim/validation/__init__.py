"""`cuzk-sim validate`: the model's predictions against real runs of the same scenarios.

spec (what to run) -> boundary (the model's smallest safe VRAM, by bisection) -> caps
around it -> predictions (written first) -> real runs (gpu-run's pipeline, resumable) ->
compare (per-run verdicts, errors, confusion matrix, summary). No GPU code here: the real
runs go through `cuzk_sim.gpu.pipeline`, which imports CuPy only on a real device.
"""
