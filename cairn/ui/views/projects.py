"""Projects, each project's timeline (sessions as lanes, topic spans as bars, ideas as marks by intent)
and the board of open and resolved questions and todos."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cairn.ui.text import fit_text
from cairn.ui.viewer import short_time, viewer_of

LANE_WIDTH = 900
LABEL_WIDTH = 170
#: Where a lane's labels start, and the room kept between them and the first dot or bar.
LABEL_X, LABEL_GAP = 6, 10
SPAN_HEIGHT = 14
#: The narrowest a span is drawn, in px: a one-line topic is still something to hover and click.
SPAN_MIN_WIDTH = 6
SPAN_LABEL_SIZE = 10
MARK_RADIUS = 5
MARK_ROW = 12
BOARD_LIMIT = 200


async def projects_page(request: Request) -> Response:
    viewer = viewer_of(request)
    projects = await viewer.ops.call("projects", {"limit": 200})
    return viewer.page(request, "projects.html", projects=projects)


async def timeline_page(request: Request) -> Response:
    viewer = viewer_of(request)
    project = request.query_params.get("project", "").strip()
    if not project:
        return viewer.refusal(
            request, "name a project: /timeline?project=NAME (the Projects page links them)"
        )
    data = await viewer.ops.call("project_timeline", {"project": project, "limit": 20})
    return viewer.page(request, "timeline.html", project=project, data=data, lanes=lanes(data["sessions"]))


def drawn_end(span: dict[str, Any], spans: list[dict[str, Any]], last_line: int) -> int:
    """The line a span is drawn to: its end line, or for a span still open (no end line: the topic the
    session was on when it was last indexed, or a parent around its sub-topics) the line before the next
    span at its depth or above, else the session's last line. Drawn to its start instead, an open topic
    that ran for hundreds of lines would be a sliver at its first one."""
    start = span["start_line"] or 0
    if span["end_line"] is not None:
        return max(start, span["end_line"])
    after = [
        other["start_line"]
        for other in spans
        if other["start_line"] is not None and other["start_line"] > start and other["depth"] <= span["depth"]
    ]
    return max(start, min(after) - 1 if after else last_line)


def lanes(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """SVG geometry of a project's sessions: one lane each, x proportional to the transcript line.

    A lane's labels (its id, start, messages and branch) are cut with "…" to the label column, and
    every dot and bar starts right of it, so no label runs under a dot; a span runs to its
    `drawn_end`, at least `SPAN_MIN_WIDTH` wide, and its name is cut to the bar with "…" (whole words
    when they fit).
    """
    room = LABEL_WIDTH - LABEL_X - LABEL_GAP
    left = LABEL_WIDTH + MARK_RADIUS  # a dot at line 0 touches the column, never enters it
    right = LANE_WIDTH - MARK_RADIUS - 4
    out = []
    y = 0
    for session in sessions:
        scale = (right - left) / max(1, session["last_line"])

        def x(line: int | None, scale: float = scale) -> float:
            return round(left + (line or 0) * scale, 1)

        depth = max([s["depth"] for s in session["spans"]] or [0])
        spans_top = y + 22
        marks_y = spans_top + (depth + 1) * (SPAN_HEIGHT + 2) + MARK_ROW // 2 + 2
        spans = []
        for span in session["spans"]:
            start = x(span["start_line"])
            end = drawn_end(span, session["spans"], session["last_line"])
            width = max(SPAN_MIN_WIDTH, x(end) - start)
            width = min(width, LANE_WIDTH - 2 - start)
            label = fit_text(span["name"] or "", width - 6, SPAN_LABEL_SIZE) if width > 24 else ""
            top = spans_top + span["depth"] * (SPAN_HEIGHT + 2)
            bar = {"x": start, "y": top, "w": width, "label": label, "drawn_end": end}
            spans.append({**span, **bar, "open": span["end_line"] is None})
        marks = [{**idea, "x": x(idea["line"]), "y": marks_y} for idea in session["ideas"]]
        height = marks_y + MARK_ROW - y
        branch = f" · {session['git_branch']}" if session.get("git_branch") else ""
        labels = {
            "id_label": fit_text(str(session["id"])[:8], room, 12, monospace=True, bold=True),
            "when_label": fit_text(short_time(session.get("started_at")), room, 10),
            "sub_label": fit_text(f"{session['message_count']} msgs{branch}", room, 10),
        }
        out.append({**session, **labels, "y": y, "height": height, "span_bars": spans, "marks": marks})
        y += height + 10
    return {
        "sessions": out,
        "width": LANE_WIDTH,
        "height": max(y, 40),
        "label_x": LABEL_X,
    }


async def board_page(request: Request) -> Response:
    """Per project: open questions/problems and todos (`cairn.store.open_ideas`, as every face counts
    them), the resolved ones with what resolved them, and those the person declined (no longer open,
    kept as history)."""
    viewer = viewer_of(request)
    project = request.query_params.get("project", "").strip() or None
    projects = await viewer.ops.call("projects", {"limit": 200})
    # By path: two checkouts may share a name (`cli`), and a path names one project.
    chosen = [p for p in projects if project in (None, p["path"], p["name"])]
    boards = []
    for chosen_project in chosen:
        args = {"project": chosen_project["path"], "limit": BOARD_LIMIT}
        questions = await viewer.ops.call("ideas", {**args, "intents": ["question", "problem"]})
        todos = await viewer.ops.call("ideas", {**args, "intents": ["todo"]})
        if not questions and not todos:
            continue
        open_args = {**args, "open_only": True}
        open_questions = await viewer.ops.call("ideas", {**open_args, "intents": ["question", "problem"]})
        open_todos = await viewer.ops.call("ideas", {**open_args, "intents": ["todo"]})
        boards.append(
            {
                "project": chosen_project["name"],
                "path": chosen_project["path"],
                "open_questions": open_questions,
                "answered": [q for q in questions if q["answered_at"]],
                "open_todos": open_todos,
                "done": [t for t in todos if t["completed_at"]],
                "declined": [
                    i
                    for i in (*questions, *todos)
                    if i["declined_at"] and not (i["answered_at"] or i["completed_at"])
                ],
            }
        )
    return viewer.page(request, "board.html", boards=boards, project=project, projects=projects)


routes = [
    Route("/projects", projects_page),
    Route("/timeline", timeline_page),
    Route("/board", board_page),
]
