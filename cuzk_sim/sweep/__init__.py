"""`cuzk-sim sweep`: capacity planning over any scenario keys.

spec (the TOML, validated) -> configs (grid or sample, keyed by hash) -> evaluate (one
row per configuration) on executors (process pool or Dask) -> store (atomic files,
resume) -> search (boundaries) -> summary (max workers, min VRAM, frontiers) -> table and
plots. `cuzk_sim.api.sweep` is the entry point for programs; the CLI wraps it.
"""
