"""Shared pytest configuration: hypothesis profiles and the `gpu` / `interop` markers.

Hypothesis profile: $CUZK_HYPOTHESIS_PROFILE if set, else `ci` when CI=true, else `dev`.
"""

from __future__ import annotations

import functools
import os
import shutil

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=25,
    deadline=None,  # pairing-heavy examples take seconds
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "dev", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_PROFILES = ("ci", "dev", "thorough")


def pytest_configure(config: pytest.Config) -> None:
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    profile = os.environ.get("CUZK_HYPOTHESIS_PROFILE", "ci" if ci else "dev")
    if profile not in _PROFILES:
        raise pytest.UsageError(
            f"CUZK_HYPOTHESIS_PROFILE={profile!r} is not a profile; use one of "
            + ", ".join(_PROFILES)
        )
    settings.load_profile(profile)


@functools.cache
def cuda_unavailable_reason() -> str | None:
    """None when a CUDA device is usable through CuPy, else why not."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install
        return f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return f"no CUDA device visible ({type(e).__name__}: {e})"
    return None if n > 0 else "no CUDA device visible (device count 0)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Markers, not keywords: a keyword match would also hit a folder named gpu/ or interop/.
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if gpu_items:
        reason = cuda_unavailable_reason()
        if reason:
            for it in gpu_items:
                it.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))
    interop_items = [it for it in items if it.get_closest_marker("interop")]
    if interop_items and shutil.which("node") is None:
        for it in interop_items:
            it.add_marker(pytest.mark.skip(reason="interop test: node is not on PATH"))
