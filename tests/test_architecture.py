"""Which way imports run in cairn, checked on every run rather than by a reviewer's eye.

`lint-imports` (import-linter) checks the contracts in pyproject.toml's `[tool.importlinter]`: no
circles between sibling modules or packages at any depth, the agent knowing nothing of what drives it
(daemon, doctor, faces), storage importing nothing above it, nothing below a face importing one, and
every module in its layer. One circle those contracts cannot see — a package's `__init__` and a module
inside it importing each other — is looked for here with grimp, the graph library import-linter runs on.
TYPE_CHECKING imports count in both, as they do in the contracts.
"""

from __future__ import annotations

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
