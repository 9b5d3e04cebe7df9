"""Claude Code transcripts built line by line, for tests of what cairn reads from tool calls.

Lines carry what Claude Code writes (`sessionId`, `cwd`, `timestamp`, `uuid`, `message`), and time
advances by `step` seconds per line unless a line says when it happened, so windows measured in
transcript time can be tested without sleeping.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2025, 9, 3, 10, 0, 0, tzinfo=UTC)


class Transcript:
    """A transcript under construction. `write(path)` (or `append(path)`) puts it on disk as JSONL."""

    def __init__(self, cwd: str | Path, *, session_id: str | None = None, start: datetime = START) -> None:
        self.cwd = str(cwd)
        self.session_id = session_id or str(uuid.uuid4())
        self.now = start
        self.lines: list[dict[str, Any]] = []
        self._tools = 0

    def wait(self, seconds: float) -> Transcript:
        self.now += timedelta(seconds=seconds)
        return self

    def _line(self, kind: str, message: dict[str, Any], step: float = 1.0, **extra: Any) -> dict[str, Any]:
        self.now += timedelta(seconds=step)
        line = {
            "parentUuid": self.lines[-1]["uuid"] if self.lines else None,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "1.0.98",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": str(uuid.uuid4()),
            "timestamp": self.now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            **extra,
        }
        self.lines.append(line)
        return line

    def user(self, text: str, *, step: float = 1.0, sidechain: bool = False) -> Transcript:
        """A prompt the person typed: a turn boundary; with `sidechain`, the task a subagent was given
        (older Claude Code kept a subagent's lines in the session's own file, marked `isSidechain`)."""
        self._line("user", {"role": "user", "content": text}, step, isSidechain=sidechain)
        return self

    def say(self, text: str, *, step: float = 1.0, sidechain: bool = False) -> Transcript:
        self._line(
            "assistant",
            {
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
            },
            step,
            isSidechain=sidechain,
        )
        return self

    def tool(
        self,
        name: str,
        tool_input: dict[str, Any],
        result: str | list[dict[str, Any]] | None,
        *,
        is_error: bool = False,
        structured: Any = None,
        step: float = 1.0,
        tool_id: str | None = None,
    ) -> str:
        """An assistant tool call and (unless `result` is None) its result on the next line; the call's id."""
        self._tools += 1
        tool_id = tool_id or f"toolu_{self.session_id[:8]}_{self._tools:04d}"
        self._line(
            "assistant",
            {
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
            },
            step,
        )
        if result is not None:
            self.result(tool_id, result, is_error=is_error, structured=structured, step=step)
        return tool_id

    def result(
        self,
        tool_id: str,
        result: str | list[dict[str, Any]],
        *,
        is_error: bool = False,
        structured: Any = None,
        step: float = 1.0,
    ) -> Transcript:
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": result}
        if is_error:
            block["is_error"] = True
        extra = {"toolUseResult": structured} if structured is not None else {}
        self._line("user", {"role": "user", "content": [block]}, step, **extra)
        return self

    def search(
        self,
        query: str,
        scores: list[float],
        *,
        tool: str = "mcp__cairn__search",
        step: float = 1.0,
    ) -> str:
        """A cairn search answered the way the MCP server answers: JSON text with results best first."""
        if tool.endswith("search_content"):
            body: dict[str, Any] = {
                "results": [
                    {"chunk_id": f"m{i}", "document_id": "/x.jsonl", "content": "...", "relevance_score": s}
                    for i, s in enumerate(scores)
                ]
            }
            tool_input: dict[str, Any] = {"semantic_concepts": [query]}
        else:
            body = {
                "results": [
                    {"id": str(i), "kind": "idea", "score": s, "preview": "..."} for i, s in enumerate(scores)
                ],
                "total": len(scores),
            }
            tool_input = {"query": query}
        return self.tool(tool, tool_input, json.dumps(body, indent=2), step=step)

    def text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text(), encoding="utf-8")
        return path

    def append(self, path: Path, lines: int | None = None) -> Path:
        """Append the lines not written yet (all, or the next `lines`), as a live session would."""
        written = getattr(self, "_written", 0)
        end = len(self.lines) if lines is None else written + lines
        with path.open("a", encoding="utf-8") as handle:
            for line in self.lines[written:end]:
                handle.write(json.dumps(line) + "\n")
        self._written = end
        return path


def prompts_after(path: Path, first_line: str, *prompts: str) -> Transcript:
    """A transcript of the person's `prompts` written to `path` after a raw `first_line` (a malformed line,
    or "" for none): what tests of a bad line before good ones read."""
    built = Transcript(path.parent)
    for prompt in prompts:
        built.user(prompt)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(first_line + "\n" + built.text())
    return built
