"""Independent counts of a transcript made with nothing but ``json.loads``, to check the reader against."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any


def plain_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line number, decoded object) for every non-blank line."""
    rows = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if raw.strip():
            rows.append((number, json.loads(raw)))
    return rows


def physical_lines(path: Path) -> int:
    """Lines as an editor counts them: a last line without its newline is a line too."""
    data = path.read_bytes()
    return data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))


def plain_tool_use_counts(path: Path) -> Counter[str]:
    """tool_use blocks per tool name, counted over every line's ``message.content``."""
    counts: Counter[str] = Counter()
    for _, obj in plain_lines(path):
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    counts[block["name"]] += 1
    return counts


def plain_type_counts(path: Path) -> Counter[str]:
    return Counter(
        obj["type"] if isinstance(obj.get("type"), str) else "<none>" for _, obj in plain_lines(path)
    )
