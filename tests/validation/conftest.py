"""Fixtures of the validation tests (helpers: validation_fixtures.py)."""

from validation_fixtures import scenario_file  # noqa: F401  (a fixture)
