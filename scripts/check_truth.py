#!/usr/bin/env python3
"""Print every line a session-truth file cites beside its label, so each citation is checked by eye.

Usage: scripts/check_truth.py TRUTH.json TRANSCRIPTS_DIR [SESSION_KEY ...]
       scripts/check_truth.py --read TRANSCRIPT.jsonl [CHARS]   (every record, one line each, for labelling)

For every label of every session (or of the sessions named) it prints the label's field, its text and
the start of the cited JSONL record: its type, role and the text, tool call or tool result it holds.
A line past the end of the file, or a record that is neither a user nor an assistant entry (nor a
`queue-operation` carrying a mid-turn message), is flagged with `!!` and makes the exit status 1.
Standard library only, so it runs before cairn is installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SHOWN = 220


def _record_text(record: dict) -> str:
    """What a record says, one line: text blocks, tool calls (name and input) and tool results."""
    message = record.get("message") or {}
    content = message.get("content", record.get("content", ""))
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "thinking":
            parts.append("[thinking] " + block.get("thinking", ""))
        elif kind == "tool_use":
            parts.append(f"[{block.get('name')}] {json.dumps(block.get('input'))}")
        elif kind == "tool_result":
            result = block.get("content")
            if isinstance(result, list):
                result = " ".join(b.get("text", "") for b in result if isinstance(b, dict))
            parts.append(f"[result{' ERROR' if block.get('is_error') else ''}] {result}")
    return " | ".join(parts)


def _describe(lines: list[str], number: int) -> tuple[str, bool]:
    if not 1 <= number <= len(lines):
        return f"!! line {number} is past the end ({len(lines)} lines)", False
    try:
        record = json.loads(lines[number - 1])
    except json.JSONDecodeError:
        return f"!! line {number} is not JSON", False
    kind = record.get("type", "?")
    role = (record.get("message") or {}).get("role", "")
    ok = kind in ("user", "assistant", "queue-operation")
    side = " sidechain" if record.get("isSidechain") else ""
    text = " ".join(_record_text(record).split())[:SHOWN]
    return f"{'' if ok else '!! '}{number} {kind}/{role}{side}: {text}", ok


def _cited(label: dict) -> list[tuple[str, int]]:
    return [(k, v) for k, v in label.items() if k == "line" or k.endswith("_line")]


def read(path: Path, chars: int) -> int:
    """Every record of a transcript as one numbered line: how a labeller reads a session start to end."""
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            print(f"{number} !! not JSON")
            continue
        role = (record.get("message") or {}).get("role", "")
        side = " sidechain" if record.get("isSidechain") else ""
        text = " ".join(_record_text(record).split())[:chars]
        print(f"{number} {record.get('type', '?')}/{role}{side}: {text}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--read"] and len(argv) >= 2:
        return read(Path(argv[1]), int(argv[2]) if len(argv) > 2 else 300)
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    truth = json.loads(Path(argv[0]).read_text())
    transcripts = Path(argv[1])
    wanted = set(argv[2:])
    ok = True
    for key, session in truth.items():
        if wanted and key not in wanted:
            continue
        lines = (transcripts / key).read_text().splitlines()
        print(f"=== {key} ({len(lines)} lines)")
        for field in ("open_items", "closed_items", "decisions", "fixes", "declined"):
            for label in session.get(field, []):
                text = label.get("text") or f"{label.get('problem')} -> {label.get('fix')}"
                print(f"- {field}: {text}")
                for name, number in _cited(label):
                    described, good = _describe(lines, number)
                    ok &= good
                    print(f"    {name} {described}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
