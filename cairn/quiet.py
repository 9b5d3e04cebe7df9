"""Third-party announcements off in every cairn process.

pydantic-ai prints a first-run banner ("observability: off — … set it up free with Pydantic Logfire")
to stderr when an agent first runs in a process whose stderr is a terminal or that a coding agent
runs (CLAUDECODE, AI_AGENT, ...). cairn's indexer is such an agent, so the banner landed in the middle
of `cairn backfill`'s progress display and in the daemon's log. Its library's own switch is the
`PYDANTIC_AI_NO_BANNER` variable (read when a run starts; any value turns it off). Setting it in the
environment, rather than flipping `pydantic_ai.BANNER_ENABLED`, also covers the processes cairn
starts (the daemon) and needs no import of pydantic-ai here.

Every cairn process that can run an agent starts through the `cairn` app (`cairn.cli.common`): the
commands, the daemon (`python -m cairn daemon run`, also when a hook starts it) and the MCP server
(`python -m cairn mcp`). The hook scripts themselves run no agent and stay stdlib-only.
"""

from __future__ import annotations

import os

#: Variables that silence a library's announcement, with the value cairn gives them.
QUIET_ENV = {"PYDANTIC_AI_NO_BANNER": "1"}


def quiet_third_party() -> None:
    """Turn the announcements off unless the user set the variable already (their value stands)."""
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
