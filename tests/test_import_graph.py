"""No import circle among the modules of cuzk_sim/: a static check of every import
statement (at module level, under `if TYPE_CHECKING:`, and inside functions alike), so a
circle cannot be hidden by importing late. Importing `a.b.c` counts as importing the
packages `a` and `a.b` too (their `__init__` runs first), except a module's own parent
packages (already being imported when it runs)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / "cuzk_sim").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(path: Path, name: str, mods: dict[str, Path]) -> set[str]:
    """The cuzk_sim modules named by every import statement of one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                keep = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(keep + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in mods:
                target = target.rpartition(".")[0]
            parts = target.split(".") if target else []
            found.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return found


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    return {
        name: {
            d
            for d in _imported(path, name, mods)
            if d in mods and d != name and not name.startswith(d + ".")
        }
        for name, path in mods.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_circle_built_by_hand():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_late_imports_and_parent_packages():
    graph = import_graph()
    # cli/simulate.py imports the runner inside a function; the runner's engine imports
    # the model package's modules
    assert "cuzk_sim.simulate.runner" in graph["cuzk_sim.cli.simulate"]
    assert {"cuzk_sim.model", "cuzk_sim.model.engine"} <= graph["cuzk_sim.simulate.runner"]


def test_no_import_circle_in_cuzk_sim():
    assert circles(import_graph()) == []
