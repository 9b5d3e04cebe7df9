"""The graph of an idea's neighbourhood: the idea in the middle, what is one hop away on a ring around
it, two hops on an outer ring; relations and entity mentions as lines, drawn as server-side SVG; and
the same neighbourhood in words (`listing`), which a phone reads where a figure shrunk to its width
could not be read."""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cairn.ui.text import text_width
from cairn.ui.viewer import viewer_of

SIZE = 760
RINGS = {0: 0.0, 1: 170.0, 2: 330.0}
#: Label lengths in characters (the whole text is in the node's hover title).
IDEA_LABEL, ENTITY_LABEL, CENTRE_LABEL = 28, 24, 48
#: Font sizes in px, as style.css sets them: the figure is never drawn smaller than its own size, so
#: these are the sizes a reader sees (on a phone the figure scrolls in its box instead of shrinking).
LABEL_SIZE, CENTRE_SIZE = 11, 12
#: Room kept around the drawing, in px.
MARGIN = 8
#: How an edge reads from the node at its far end: "#12 supersedes #9" is "#9 superseded by #12".
INVERSE = {
    "supersedes": "superseded by",
    "builds_on": "built on by",
    "contradicts": "contradicted by",
    "answers": "answered by",
    "relates_to": "related to",
    "mentions": "mentioned by",
}
#: Below this |cos| of its angle a node is near the top or bottom: its label goes above or below it.
SIDEWAYS = 0.35


def _cut(text: str, chars: int) -> str:
    text = " ".join(text.split())  # as the SVG shows it: runs of whitespace are one space
    return text if len(text) <= chars else text[:chars] + "…"


def _label(node: dict[str, Any], angle: float) -> dict[str, Any]:
    """Where a node's label goes and the box it is estimated to take: to the right of a node on the
    right, to the left (anchored at its end) of one on the left, centred above or below one near the
    top or bottom, above the centre; so no label runs across the middle or off its side."""
    x, y = node["x"], node["y"]
    if node["hop"] == 0:
        text, size = f"#{node['id']} {_cut(node['label'], CENTRE_LABEL)}", CENTRE_SIZE
        anchor, lx, ly = "middle", x, y - 18
    else:
        if node["kind"] == "idea":
            text = f"#{node['id']} {_cut(node['label'], IDEA_LABEL)}"
        else:
            text = _cut(node["label"], ENTITY_LABEL)
        size = LABEL_SIZE
        cos = math.cos(angle)
        gap = 11 if node["kind"] == "idea" else 9
        if cos > SIDEWAYS:
            anchor, lx, ly = "start", x + gap, y + 4
        elif cos < -SIDEWAYS:
            anchor, lx, ly = "end", x - gap, y + 4
        else:
            anchor, lx = "middle", x
            ly = y - 13 if math.sin(angle) < 0 else y + 20
    width = text_width(text, size, bold=node["hop"] == 0)
    left = {"start": lx, "end": lx - width, "middle": lx - width / 2}[anchor]
    # A text's box runs from about a font size above its baseline to a third of one below it.
    box = (left, ly - size, left + width, ly + size / 3)
    return {"text": text, "anchor": anchor, "lx": round(lx, 1), "ly": round(ly, 1), "box": box}


def layout(graph: dict[str, Any]) -> dict[str, Any]:
    """`graph` (the `neighbourhood` op's answer) with x, y and a label for every node, line ends for
    every edge, and the viewBox that holds every node and every label's estimated box (and no more: a
    small neighbourhood is a small drawing).

    Rings by hop; on each ring the nodes are spread evenly, ideas before entities, so the drawing is
    the same for the same graph. A second ring's start is turned by half a step against the first's,
    so its labels fall between the inner ones.
    """
    centre = SIZE / 2
    by_hop: dict[int, list[dict[str, Any]]] = {}
    for node in graph["nodes"]:
        by_hop.setdefault(int(node["hop"]), []).append(node)
    placed: dict[str, dict[str, Any]] = {}
    boxes: list[tuple[float, float, float, float]] = []
    for hop, nodes in by_hop.items():
        nodes.sort(key=lambda n: (n["kind"] != "idea", n["id"]))
        step = 2 * math.pi / max(1, len(nodes))
        turn = step / 2 if hop == 2 else 0.0
        for index, node in enumerate(nodes):
            angle = -math.pi / 2 + turn + index * step
            radius = RINGS.get(hop, RINGS[2])
            at = {
                **node,
                "x": round(centre + radius * math.cos(angle), 1),
                "y": round(centre + radius * math.sin(angle), 1),
            }
            label = _label(at, angle)
            boxes += [label.pop("box"), (at["x"] - 12, at["y"] - 12, at["x"] + 12, at["y"] + 12)]
            placed[node["id"]] = {**at, **label}
    lines = [
        {**edge, "x1": a["x"], "y1": a["y"], "x2": b["x"], "y2": b["y"]}
        for edge in graph["edges"]
        if (a := placed.get(edge["source"])) is not None and (b := placed.get(edge["target"])) is not None
    ]
    boxes = boxes or [(0.0, 0.0, float(SIZE), float(SIZE))]
    left = math.floor(min(b[0] for b in boxes)) - MARGIN
    top = math.floor(min(b[1] for b in boxes)) - MARGIN
    right = math.ceil(max(b[2] for b in boxes)) + MARGIN
    bottom = math.ceil(max(b[3] for b in boxes)) + MARGIN
    view = {"x": left, "y": top, "w": right - left, "h": bottom - top}
    return {"view": view, "nodes": list(placed.values()), "lines": lines}


def listing(graph: dict[str, Any]) -> list[dict[str, Any]]:
    """The neighbourhood in words, nearest first (ideas before entities, as on the rings): each node
    with every edge at it, read from that node ("supersedes #9", "mentioned by #12") and pointing at
    the node at the other end. An edge whose far end is not among the nodes is left out, as in the
    figure."""
    nodes = {node["id"]: node for node in graph["nodes"]}
    out = []
    for node in sorted(graph["nodes"], key=lambda n: (int(n["hop"]), n["kind"] != "idea", n["id"])):
        links = []
        for edge in graph["edges"]:
            if edge["source"] == node["id"] and edge["target"] in nodes:
                links.append({"words": edge["type"].replace("_", " "), "other": nodes[edge["target"]]})
            elif edge["target"] == node["id"] and edge["source"] in nodes:
                words = INVERSE.get(edge["type"], f"{edge['type'].replace('_', ' ')} from")
                links.append({"words": words, "other": nodes[edge["source"]]})
        out.append({**node, "links": links})
    return out


async def graph_page(request: Request) -> Response:
    viewer = viewer_of(request)
    item_id = request.path_params["item_id"]
    graph = await viewer.ops.call("neighbourhood", {"id": item_id, "limit": 30})
    return viewer.page(request, "graph.html", graph=graph, drawing=layout(graph), listing=listing(graph))


routes = [Route("/graph/{item_id}", graph_page)]
