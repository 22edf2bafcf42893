"""The CI gate: baselines and verdicts (verdicts), the CI forms of them
(ci_output). The `cuzk-sim gate` command is cli/gate.py."""
