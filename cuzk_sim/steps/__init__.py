"""The step kinds of the plan language, one module each; steps/registry.py lists them."""
