"""Which way imports run in cairn, checked on every run rather than by a reviewer's eye.

`lint-imports` (import-linter) checks the contracts in pyproject.toml's `[tool.importlinter]`: no
circles between sibling modules or packages at any depth, the agent knowing nothing of what drives it
(daemon, doctor, faces), storage importing nothing above it, nothing below a face importing one, and
every module in its layer. One circle those contracts cannot see — a package's `__init__` and a module
inside it importing each other — is looked for here with grimp, the graph library import-linter runs on.
TYPE_CHECKING imports count in both, as they do in the contracts.

The tests keep a rule of their own: what they share lives in helper modules (`tests/helpers/`, or a
subpackage's own, e.g. `tests/daemon/helpers.py`), never in a test module or a conftest, so no test
module or conftest is imported by anything.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
# The most circles one failure lists: the first ones say what to break.
SHOWN = 10


def _this_tree() -> dict[str, str]:
    """The environment with this checkout's `cairn` first on the path, whichever cairn is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


@pytest.mark.process
def test_the_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    assert lint.exists(), f"{lint} is missing: install the dev extras (`pip install -e '.[dev]'`)"
    run = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, env=_this_tree(), capture_output=True, text=True, timeout=300
    )
    start = run.stdout.find("Contracts")  # past the banner
    report = run.stdout[start:] if start >= 0 else run.stdout
    assert run.returncode == 0, f"lint-imports failed (exit {run.returncode}):\n{report}\n{run.stderr}"
    assert "0 broken" in report, report


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph("cairn", cache_dir=None)
    circles: dict[frozenset[str], str] = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                circles.setdefault(frozenset(back), " -> ".join((module, *back)))
    shown = "\n".join(list(circles.values())[:SHOWN])
    assert not circles, f"{len(circles)} import circle(s) in cairn, e.g.:\n{shown}"


def _imported_modules(tree: ast.Module, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import names, relative ones resolved against `package`;
    `from a import b` names both `a` and `a.b` (b may be a module)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _is_test_module_or_conftest(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name.split(".")[0] == "tests" and (last.startswith("test_") or last == "conftest")


def test_no_test_module_or_conftest_is_imported() -> None:
    offences = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        package = ".".join(path.relative_to(ROOT).parent.parts)
        for line, name in _imported_modules(ast.parse(path.read_text(), str(path)), package):
            if _is_test_module_or_conftest(name):
                offences.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert not offences, (
        "shared test helpers belong in tests/helpers/ (or a subpackage's helper module), not in a test "
        "module or a conftest:\n" + "\n".join(offences)
    )
