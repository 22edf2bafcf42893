"""Package discovery for the one import namespace (metadata lives in pyproject.toml).

The design card's top-level folders reference/ and gpu/ install as cuzk_sim.reference and
cuzk_sim.gpu (pyproject.toml, [tool.setuptools] `package-dir`). setuptools' own discovery
does not follow that mapping, so every package under each mapped folder is found here: a
new subpackage reaches the wheel with no list to update (tests/packaging/ compares the
built wheel's modules with the source tree).
"""

import shutil
import tomllib
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent


def packages() -> list[str]:
    """Each mapped import name, and every package found under its folder."""
    config = tomllib.loads((HERE / "pyproject.toml").read_text())
    trees = config["tool"]["setuptools"]["package-dir"]
    found = []
    for name, folder in trees.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(str(HERE / folder))]
    return sorted(found)


# setuptools copies modules into build/lib and never removes one that left the source tree:
# a wheel built in a working tree after a module was renamed would ship the old module too.
# build/lib is only a cache, so it goes before every build.
shutil.rmtree(HERE / "build" / "lib", ignore_errors=True)
setup(packages=packages())
