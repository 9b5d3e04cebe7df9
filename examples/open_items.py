"""Print the open questions and todos cairn remembers for a repository (default: the one you are in).

    python examples/open_items.py [PATH]

Uses `cairn.Memory`, which asks the running daemon or opens the store itself, whichever applies; exit
status 2 with one line when the request cannot be done (a broken config.toml, say).
"""

from __future__ import annotations

import sys
from pathlib import Path

from cairn import Memory, Refusal


def main(argv: list[str]) -> int:
    repository = Path(argv[1] if len(argv) > 1 else ".").resolve()
    try:
        with Memory.open() as memory:
            items = memory.open_items(project=str(repository))
    except Refusal as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 2
    if items.notice:
        print(items.notice)
    for title, listed, count in (
        ("Open questions", items.questions, items.question_count),
        ("Open todos", items.todos, items.todo_count),
    ):
        print(f"{title} ({count}):")
        for item in listed:
            state = f" [{item.state}]" if item.state else ""
            print(f"  #{item.id}{state} {item.preview}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
