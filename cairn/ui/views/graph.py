"""The graph of an idea's neighbourhood: the idea in the middle, what is one hop away on a ring around
it, two hops on an outer ring; relations and entity mentions as lines, drawn as server-side SVG."""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cairn.ui.viewer import viewer_of

SIZE = 760
RINGS = {0: 0.0, 1: 170.0, 2: 330.0}


def layout(graph: dict[str, Any]) -> dict[str, Any]:
    """`graph` (the `neighbourhood` op's answer) with x, y for every node and line ends for every edge.

    Rings by hop; on each ring the nodes are spread evenly, ideas before entities, so the drawing is
    the same for the same graph. A second ring's start is turned by half a step against the first's,
    so its labels fall between the inner ones.
    """
    centre = SIZE / 2
    by_hop: dict[int, list[dict[str, Any]]] = {}
    for node in graph["nodes"]:
        by_hop.setdefault(int(node["hop"]), []).append(node)
    placed: dict[str, dict[str, Any]] = {}
    for hop, nodes in by_hop.items():
        nodes.sort(key=lambda n: (n["kind"] != "idea", n["id"]))
        step = 2 * math.pi / max(1, len(nodes))
        turn = step / 2 if hop == 2 else 0.0
        for index, node in enumerate(nodes):
            angle = -math.pi / 2 + turn + index * step
            radius = RINGS.get(hop, RINGS[2])
            placed[node["id"]] = {
                **node,
                "x": round(centre + radius * math.cos(angle), 1),
                "y": round(centre + radius * math.sin(angle), 1),
            }
    lines = [
        {**edge, "x1": a["x"], "y1": a["y"], "x2": b["x"], "y2": b["y"]}
        for edge in graph["edges"]
        if (a := placed.get(edge["source"])) is not None and (b := placed.get(edge["target"])) is not None
    ]
    return {"size": SIZE, "nodes": list(placed.values()), "lines": lines}


async def graph_page(request: Request) -> Response:
    viewer = viewer_of(request)
    item_id = request.path_params["item_id"]
    graph = await viewer.ops.call("neighbourhood", {"id": item_id, "limit": 30})
    return viewer.page(request, "graph.html", graph=graph, drawing=layout(graph))


routes = [Route("/graph/{item_id}", graph_page)]
