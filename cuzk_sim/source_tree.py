"""One tree per process: cuzk_sim, cuzk_sim.gpu and cuzk_sim.reference come from one place.

In a checkout, gpu/ and reference/ sit beside cuzk_sim/ and are mapped to cuzk_sim.gpu and
cuzk_sim.reference (pyproject.toml `package-dir`). An editable install records the mapping
of the checkout it was made from; run `python3 -m cuzk_sim` inside another checkout and
Python finds that checkout's cuzk_sim/ first (the current folder leads sys.path) but the
installed checkout's gpu/ and reference/ (only the editable finder knows those names). So
a checkout's cuzk_sim claims its own gpu/ and reference/ before anything else can
(`claim_checkout_trees`, called on import), and the CLI refuses a mix that still happens
(`mixed_trees`): a checkout that lacks one of the folders, or a subpackage imported first.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# import name -> folder beside cuzk_sim/ in a checkout (pyproject.toml `package-dir`)
SUBTREES = {"cuzk_sim.gpu": "gpu", "cuzk_sim.reference": "reference"}


def checkout_root() -> Path | None:
    """The checkout this cuzk_sim was loaded from; None for an installed wheel."""
    root = PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        head = pyproject.read_text(errors="replace")[:4000]
    except OSError:
        return None
    return root if 'name = "cuzk-sim"' in head else None


def expected_location(name: str) -> Path:
    """Where `name` (a key of SUBTREES) must come from, given where cuzk_sim came from."""
    root = checkout_root()
    if root is None:
        return PACKAGE_DIR / name.rsplit(".", 1)[1]
    return root / SUBTREES[name]


class _CheckoutFinder(importlib.abc.MetaPathFinder):
    """Finds cuzk_sim.gpu / cuzk_sim.reference in this checkout, ahead of any other finder."""

    def __init__(self, locations: dict[str, Path]) -> None:
        self.locations = locations

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, ANN201
        folder = self.locations.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def claim_checkout_trees() -> None:
    """Map this checkout's gpu/ and reference/ before an installed copy can be found."""
    root = checkout_root()
    if root is None:
        return
    locations = {
        name: root / folder
        for name, folder in SUBTREES.items()
        if (root / folder / "__init__.py").is_file()
    }
    if locations and not any(isinstance(f, _CheckoutFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _CheckoutFinder(locations))


def _location(name: str) -> Path | None:
    module = sys.modules.get(name)
    if module is not None:
        search = list(getattr(module, "__path__", []) or [])
    else:
        spec = importlib.util.find_spec(name)
        search = list(spec.submodule_search_locations or []) if spec else []
    return Path(search[0]).resolve() if search else None


def mixed_trees() -> str | None:
    """None when every subtree comes from cuzk_sim's tree, else a one-line refusal."""
    for name in SUBTREES:
        found = _location(name)
        expected = expected_location(name).resolve()
        if found is not None and found != expected:
            return (
                f"one tree per process: cuzk_sim is loaded from {PACKAGE_DIR} but {name} "
                f"from {found} (expected {expected}); run from the checkout that is "
                "installed, or `pip install -e .` in this one"
            )
        if found is None:
            return f"{name} is missing: expected it at {expected} (a partial checkout?)"
    return None
