"""A scenario through the model: one run (runner), R jittered replicas
(replicas)."""
