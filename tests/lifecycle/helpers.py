"""Shared by the lifecycle tests: what the indexed home's two projects say, and where a phrase is found on
disk."""

from __future__ import annotations

from pathlib import Path

#: Phrases only the demo session (project acme-api) says.
ACME_PHRASES = (b"Black Friday", b"busy_timeout", b"sqlite3.OperationalError", b"/home/dev/acme-api")
#: The other project's path, in its rows and in every one of its vectors' metadata.
DEMO_PATH = b"/path/to/Demo"


def found_in_files(root: Path, phrase: bytes) -> list[str]:
    """Every file under `root` whose bytes contain `phrase` (databases, WALs, Chroma's segments)."""
    return [
        str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file() and phrase in p.read_bytes()
    ]


DEMO_SESSION = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001"
