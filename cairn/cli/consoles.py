"""Where the command line writes: a safe console for stdout, one for stderr, and the `--json` printer.

Kept apart from the typer app (`cairn.cli.common`) so that output needs only rich: a plain search the
daemon has answered is printed before typer loads (`cairn.cli.early_search`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from cairn.cli.safe import SafeConsole

# Safe consoles: nothing a transcript says can reach the terminal as a control sequence (cli/safe.py).
console = SafeConsole()


err = SafeConsole(stderr=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
