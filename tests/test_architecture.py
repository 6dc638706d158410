"""The layout rules of docs/architecture.rst, measured on the source tree.

Module and function sizes are counted in physical lines (docstrings included) with :mod:`ast`;
imports are the module-level ``import``/``from`` statements inside the package (imports placed in
functions are where an engine or a plotting library is used, and are not part of the import
graph by design).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pufferfish.calibration import MECHANISMS, REGISTRY, mechanism_table

SRC = Path(__file__).resolve().parents[1] / "src" / "pufferfish"
ROOT = SRC.parents[1]

#: Modules still above 800 lines and functions still above 120 lines (issue 13 lists them as
#: left to split). Anything new above the limits fails; these may only shrink.
KNOWN_LONG_MODULES = {"divergence.py": 1241, "reproduce.py": 1053, "data.py": 822}
KNOWN_LONG_FUNCTIONS = {
    ("pipeline.py", "release"): 229,
    ("report.py", "build_report"): 174,
    ("data.py", "estimate_priors"): 130,
    ("calibration/discrete.py", "_screen_groups"): 122,
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def test_module_sizes() -> None:
    for path in SRC.rglob("*.py"):
        rel = str(path.relative_to(SRC))
        lines = len(path.read_text().splitlines())
        assert lines <= max(800, KNOWN_LONG_MODULES.get(rel, 0)), (rel, lines)


def test_function_sizes() -> None:
    for path in SRC.rglob("*.py"):
        rel = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length <= max(120, KNOWN_LONG_FUNCTIONS.get((rel, node.name), 0)), (rel, node.name)


def _imports(name: str, path: Path) -> set[str]:
    """Package modules imported at module level by ``name``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            candidates = [f"{target}.{a.name}" for a in node.names] + [target]
            found.update(candidates)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pufferfish"):
            found.add(str(node.module))
    return found


def test_no_import_cycle() -> None:
    mods = _modules()
    graph = {
        name: {m for m in _imports(name, path) if m in mods and m != name} for name, path in mods.items()
    }
    for name in graph:  # a package's __init__ importing its own children is not a cycle
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*trail, node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [])


def test_mathematics_imports_without_the_table_engines() -> None:
    code = (
        "import sys\n"
        "for m in ('duckdb', 'pyarrow', 'pyspark', 'matplotlib', 'typer'):\n"
        "    sys.modules[m] = None\n"
        "from pufferfish import DiscretePrior, Scenario, compare\n"
        "p, q = DiscretePrior([0, 1, 2], [0.2, 0.3, 0.5]), DiscretePrior([0, 1, 2], [0.5, 0.3, 0.2])\n"
        "sc = Scenario.single(p, q)\n"
        "print(','.join(c.mechanism for c in compare(sc, 0.5)))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "l1,kantorovich,relaxed,optimal"


def test_every_registered_mechanism_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    table = mechanism_table()
    for name, m in REGISTRY.items():
        assert f"`{name}`" in readme, name
        assert f"``{name}``" in table and m.source in table
    pages = " ".join(p.read_text() for p in (ROOT / "docs" / "mechanisms").glob("*.rst"))
    for name in MECHANISMS:
        assert re.search(rf"``{re.escape(name)}``|\b{re.escape(name)}\b", pages), name


@pytest.mark.parametrize("name", MECHANISMS)
def test_registry_entry_is_complete(name: str) -> None:
    m = REGISTRY[name]
    assert m.name == name and m.criterion in ("(eps, delta)-PP", "eps-MI PP")
    assert m.noise in (None, "laplace", "gaussian") and m.source and m.priors
    assert (m.scale is None) == (name == "optimal")
