"""The size rules of issue 29: no module of cuzk_sim/ or gpu/ over 600 lines
(the CUDA sources of gpu/kernels aside), no Python function over 100 lines anywhere but
benchmarks/ (counted from its `def` line to its last line, decorators aside). No
exceptions: an offender is split by meaning before it lands."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
MODULE_TREES = ("cuzk_sim", "gpu")  # gpu/kernels holds .cu/.cuh only: no .py is skipped
FUNCTION_TREES = ("cuzk_sim", "gpu", "reference", "tests")  # all but benchmarks/


def _modules(root: Path, trees: tuple[str, ...]) -> list[Path]:
    return sorted(p for tree in trees for p in (root / tree).rglob("*.py"))


def module_offenders(root: Path = ROOT, trees: tuple[str, ...] = MODULE_TREES) -> dict[str, int]:
    """Module path -> lines, for each module over MAX_MODULE_LINES."""
    out = {}
    for p in _modules(root, trees):
        n = len(p.read_text().splitlines())
        if n > MAX_MODULE_LINES:
            out[p.relative_to(root).as_posix()] = n
    return out


def function_offenders(
    root: Path = ROOT, trees: tuple[str, ...] = FUNCTION_TREES
) -> dict[str, int]:
    """ "path:function" -> lines, for each function (or method) over MAX_FUNCTION_LINES."""
    out = {}
    for p in _modules(root, trees):
        tree = ast.parse(p.read_text(), filename=str(p))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out[f"{p.relative_to(root).as_posix()}:{node.name}"] = n
    return out


def test_no_module_over_600_lines() -> None:
    found = module_offenders()
    assert found == {}, f"modules over {MAX_MODULE_LINES} lines (split them by meaning): {found}"


def test_no_function_over_100_lines() -> None:
    found = function_offenders()
    assert found == {}, (
        f"functions over {MAX_FUNCTION_LINES} lines (named phases or helpers): {found}"
    )


def test_the_counters_on_a_tree_of_known_sizes(tmp_path: Path) -> None:
    """Hand-counted: a function of 1 def line + 101 statements = 102 lines offends, one
    of 100 (and a method of 101) is measured the same way; a module of 601 lines offends,
    one of 600 does not; benchmarks/ is not searched."""
    (tmp_path / "cuzk_sim").mkdir()
    (tmp_path / "benchmarks").mkdir()
    body = lambda k: "\n".join(f"    x{i} = {i}" for i in range(k))  # noqa: E731
    method = "\n".join(f"        y{i} = {i}" for i in range(100))
    src = f"def too_long():\n{body(101)}\n\n\ndef just_fits():\n{body(99)}\n"
    src += f"\n\nclass C:\n    def m(self):\n{method}\n"
    (tmp_path / "cuzk_sim" / "f.py").write_text(src)
    (tmp_path / "cuzk_sim" / "big.py").write_text("x = 1\n" * 601)
    (tmp_path / "cuzk_sim" / "fits.py").write_text("x = 1\n" * 600)
    (tmp_path / "benchmarks" / "b.py").write_text(f"def bench():\n{body(200)}\n")
    found = function_offenders(tmp_path, FUNCTION_TREES)  # benchmarks/ is not one of them
    assert found == {"cuzk_sim/f.py:too_long": 102, "cuzk_sim/f.py:m": 101}
    assert module_offenders(tmp_path, MODULE_TREES) == {"cuzk_sim/big.py": 601}
