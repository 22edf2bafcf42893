"""The plan language: the contract provers and the model share (contract),
plan files (schema), static analysis (analysis), buffer diffs (diff), and the builders
of the documented cuzk plan and our prover's (builders/). The step kinds live in
cuzk_sim/steps/."""
