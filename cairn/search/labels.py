"""What every face calls a result: an idea by its intent, a message by its origin, a span `span`.

A message used to be labelled by its role, `msg:user`, and Claude Code keeps a tool's output in a
`user` record: a traceback read as something the person said. The origin (`cairn.transcripts.origin`)
says what the message is; the CLI table and the viewer's search page both label results here, so the
two never disagree, and MCP hands the agent the origin itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `cairn search` imports this before anything else: the transcripts package is heavy
    from cairn.transcripts.origin import Origin

ORIGIN_LABELS: dict[Origin, str] = {
    "prompt": "prompt",
    "reply": "reply",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "subagent": "subagent",
    "summary": "summary",
    "system": "system",
}
#: After a tool result's label when its call failed.
FAILED_MARK = " ✗"


def kind_label(result: Mapping[str, Any]) -> str:
    """`decision`, `prompt`, `tool result ✗` (a failed call), `span`; a message stored before origins
    were known keeps its role (`msg:user`)."""
    kind = str(result.get("kind") or "")
    intent = result.get("intent")
    if kind == "idea" and intent:
        return str(intent)
    if kind == "message":
        origin = result.get("origin")
        if origin in ORIGIN_LABELS:
            failed = result.get("failed") and origin in ("tool_result", "subagent")
            return ORIGIN_LABELS[origin] + (FAILED_MARK if failed else "")
        return f"msg:{intent}" if intent else "msg"
    return f"{kind}:{intent}" if intent else kind
