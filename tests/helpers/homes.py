"""What the suite's shared, once-per-run homes hold (the fixtures that make them are in tests/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class IndexedViewer:
    """What `cairn index VIEWER_SESSIONS --model offline --json` made of a fresh home."""

    home: Path  #: shared by every test that asks: copy it (shutil.copytree) before writing to it
    report: dict[str, Any]  #: the command's JSON report
