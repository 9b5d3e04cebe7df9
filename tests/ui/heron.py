"""A made-up project, "heron", written as Claude Code transcripts: what the viewer's rendering and layout
tests need and the shared fixtures lack — Markdown that tries to run script in every way it can, tool
output long enough to fold, a branch name too long for a timeline label, a path with nothing to break
at, and many sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The project's directory: long, and without a space or dash to break a line at.
CWD = "/work/heron/" + "averyveryverylongdirectorynamewithnothingtobreakat" * 2
BRANCH = "feature/heron-markdown-rendering-with-a-branch-name-far-too-long-for-any-label-column"
SESSIONS = 12
#: The flag the payload below sets if any of it runs; the browser test asserts it never does.
FLAG = "__heronPwned"

#: Markdown a session could carry (pasted from a web page, a file, a tool's output), trying every
#: way into the page: raw HTML, event handlers, SVG, script and data links, link tricks, fences. Its
#: first sentence is labelled ("Decision:") so the offline indexer draws an idea from the message,
#: whose page shows the message too.
HOSTILE_MARKDOWN = f"""Decision: render the heron notes as Markdown, with `inline <b>code</b>` and
**bold** words.

<script>window.{FLAG} = 1; alert(1)</script>
<img src=x onerror="window.{FLAG}=2">
<svg onload="window.{FLAG}=3"><script>window.{FLAG}=4</script></svg>
<a href="javascript:window.{FLAG}=5">raw anchor</a>
<div onmouseover="window.{FLAG}=6" style="position:fixed;inset:0">raw div</div>
<iframe src="javascript:window.top.{FLAG}=7"></iframe>

- [plain js](javascript:window.{FLAG}=8)
- [upper js](JaVaScRiPt:window.{FLAG}=9)
- [entity js](&#106;avascript&#58;window.{FLAG}=10)
- [spaced js](<java script:window.{FLAG}=11>)
- [data html](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
- [vb](vbscript:msgbox(1))
- <javascript:window.{FLAG}=12>
- [reference js][evil]
- ![tracker](http://127.0.0.1:9/heron.png "a remote image")
- ![inline svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)
- [the heron docs](https://example.com/heron?a=1&b=2 "docs") and [a relative one](/projects)

[evil]: javascript:window.{FLAG}=13

```html"><script>window.{FLAG}=14</script>
<script>window.{FLAG}=15</script>
<img src=x onerror="window.{FLAG}=16">
```

    indented <script>window.{FLAG}=17</script>

A fenced block whose line is far wider than any phone, so it must scroll inside its own box:

```
heron-{"x" * 300}
```
"""

TOOL_ID = "toolu_heron1"
LONG_TOOL_OUTPUT = "\n".join(f"heron-notes/{n:03d}.md  {n * 17} bytes  ok" for n in range(40))
LONG_TEXT = "The heron checklist, point by point:\n\n" + "\n".join(
    f"{n}. heron check number {n} passes" for n in range(1, 31)
)


def _session_id(n: int) -> str:
    return f"4e40{n:04d}-0000-4000-8000-00000000{n:04d}"


def _entry(session: str, n: int, role: str, content: Any, branch: str, day: int) -> dict[str, Any]:
    return {
        "type": role,
        "uuid": f"{session[:8]}-{n}",
        "parentUuid": None if n == 1 else f"{session[:8]}-{n - 1}",
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": session,
        "gitBranch": branch,
        "timestamp": f"2025-10-{day:02d}T10:{n:02d}:00.000Z",
        "message": {"role": role, "content": content},
    }


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _first_session(session: str) -> list[dict[str, Any]]:
    """The session with the payload, the long tool output and the long message."""
    said: list[tuple[str, Any]] = [
        ("user", "Should the heron viewer render `code` and **Markdown** in its board cards?"),
        ("assistant", _text(HOSTILE_MARKDOWN)),
        ("assistant", [{"type": "tool_use", "id": TOOL_ID, "name": "Bash", "input": {"command": "ls -l"}}]),
        ("user", [{"type": "tool_result", "tool_use_id": TOOL_ID, "content": LONG_TOOL_OUTPUT}]),
        ("assistant", _text(LONG_TEXT)),
        ("user", "Where should the heron exporter write its files?"),
        ("assistant", _text("The heron exporter writes a file per note in `heron-notes/`: it is settled.")),
    ]
    return [_entry(session, n, role, content, BRANCH, 1) for n, (role, content) in enumerate(said, 1)]


def _other_session(session: str, index: int) -> list[dict[str, Any]]:
    topic = ("ingest", "search", "board", "timeline", "graph", "export")[index % 6]
    said: list[tuple[str, Any]] = [
        ("user", f"How should the heron {topic} handle notes whose names are very long indeed?"),
        ("assistant", _text(f"We decided the heron {topic} cuts long note names with an ellipsis.")),
        ("user", f"Is the heron {topic} fast enough on ten thousand notes?"),
        ("assistant", _text(f"The heron {topic} took 40 ms on ten thousand notes, so it is fast enough.")),
    ]
    branch = BRANCH if index % 2 else "main"
    return [_entry(session, n, role, content, branch, 1 + index) for n, (role, content) in enumerate(said, 1)]


def heron_project(projects: Path) -> Path:
    """Write the heron sessions under `projects` (a Claude Code projects directory); their directory."""
    directory = projects / ("-" + CWD.strip("/").replace("/", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(SESSIONS):
        session = _session_id(index + 1)
        entries = _first_session(session) if index == 0 else _other_session(session, index)
        (directory / f"{session}.jsonl").write_text(
            "".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8"
        )
    return directory
