"""Issue 32: what the viewer's pages show and how they hold, in a real headless Chromium — Markdown that
tries to run script never does, long tool output folds, score parts wait behind a toggle, graph and
timeline labels stay inside their drawing and column, and every page fits a laptop and a phone.

The module backfills two small projects with the offline model: the shared fixture claude-code-viewer
(relations, entities, topics, tool output) and the made-up heron project (`tests/ui/heron.py`: the
hostile Markdown, a long branch and path, twelve sessions).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.ui import heron
from tests.ui.helpers import (
    Viewer,
    backfilled,
    require_chromium,
    running_viewer,
    wait_for,
)

#: The window sizes every page must fit: a laptop, and a phone (a 390 px wide iPhone).
SIZES = {"laptop": (1280, 800), "phone": (390, 844)}

#: Every page of the viewer, by name: a path with `{idea}`, `{message}`, `{graph}` and `{project}`
#: filled in from the store (`_ids`). A page the viewer answers 404 is skipped (`/feed` before the
#: feed moved there); add a page here and the layout test visits it at every size.
PAGES = {
    "home": "/",
    "feed": "/feed",
    "search": "/search?q=heron",
    "idea": "/item/{idea}",
    "message": "/item/{message}",
    "projects": "/projects",
    "timeline": "/timeline?project={project}",
    "board": "/board",
    "health": "/health",
    "graph": "/graph/{graph}",
    "forgets": "/forgets",
    "forget": "/forget?idea={idea}",
}

#: Every visible element right of the viewport's edge that no scrolling box holds (script run in the page).
OVERFLOWING = """
const limit = document.documentElement.clientWidth;
function scrolled(el) {
  for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
    const overflow = getComputedStyle(box).overflowX;
    if (overflow === "auto" || overflow === "scroll") return true;
  }
  return false;
}
const out = [];
for (const el of document.body.querySelectorAll("*")) {
  const r = el.getBoundingClientRect();
  if ((r.width || r.height) && r.right > limit + 0.5 && !scrolled(el)) {
    out.push(`${el.tagName.toLowerCase()}.${el.getAttribute("class") || ""} right=${Math.round(r.right)}`);
  }
}
return {scrollWidth: document.documentElement.scrollWidth, limit: limit, overflowing: out.slice(0, 10)};
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()  # before the backfill: a run without a browser skips at once
    root = tmp_path_factory.mktemp("ui-rendering")
    projects = root / "projects"
    shutil.copytree(REAL_TRANSCRIPTS / "claude-code-viewer", projects / "-home-dev-claude-code-viewer")
    heron.heron_project(projects)
    backfilled(root / "home", projects)
    return root / "home"


@pytest.fixture(scope="module")
def viewer(home: Path) -> Iterator[Viewer]:
    with running_viewer(home) as started:
        yield started


@pytest.fixture
def page(browser: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The browser at laptop size for one test; a screenshot of where it ended under the test's temp dir."""
    _window(browser, *SIZES["laptop"])
    yield browser
    browser.save_screenshot(str(tmp_path / f"{request.node.name}.png"))


def _query(home: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=30)) as conn:
        return list(conn.execute(sql, params))


def _one(home: Path, sql: str, params: tuple[object, ...] = ()) -> Any:
    rows = _query(home, sql, params)
    assert rows, sql
    return rows[0][0]


def _ids(home: Path) -> dict[str, str]:
    """What `PAGES` names: the idea drawn from the hostile message, that message, the idea with the
    most entities (the biggest graph) and the heron project's path."""
    message = _one(home, "SELECT id FROM messages WHERE text LIKE ? AND kind = 'text'", (f"%{heron.FLAG}%",))
    idea = _one(
        home,
        "SELECT i.id FROM ideas i JOIN messages m ON m.file_id = i.source_file_id "
        "AND i.source_line BETWEEN m.line AND m.end_line WHERE m.id = ?",
        (message,),
    )
    biggest = _one(home, "SELECT idea_id FROM idea_entities GROUP BY idea_id ORDER BY count(*) DESC, idea_id")
    return {"idea": str(idea), "message": f"m{message}", "graph": str(biggest), "project": quote(heron.CWD)}


def _window(driver: Any, width: int, height: int) -> None:
    """Make the page `width` px wide as a script sees it (`innerWidth`). Headless Chromium gives the
    page the window's size, but a platform may keep a window wider than a phone (500 px on some):
    then the page's viewport is set to the phone's directly, as DevTools' device mode does."""
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(width, height)
    if driver.execute_script("return window.innerWidth") != width:
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    assert driver.execute_script("return window.innerWidth") == width


def _flag(driver: Any) -> Any:
    return driver.execute_script(f"return window.{heron.FLAG}")


def _no_alert(driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018  (the property raises when no alert is open)


def _assert_inert(driver: Any) -> None:
    """Nothing of the payload ran, loaded or became markup; what the page links to is web, mail or itself."""
    from selenium.webdriver.common.by import By

    _no_alert(driver)
    assert _flag(driver) is None
    main = driver.find_element(By.TAG_NAME, "main")
    assert not main.find_elements(By.CSS_SELECTOR, "script, img, iframe, object, embed, svg, [style]")
    assert not driver.execute_script(
        "return [...document.querySelectorAll('main *')].filter("
        "e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
    )
    for link in main.find_elements(By.CSS_SELECTOR, ".md a"):
        href = link.get_attribute("href") or ""
        assert href.startswith(("https://", "http://127.0.0.1:", "mailto:")), href
        assert link.get_attribute("rel") == "noopener noreferrer"


def test_hostile_markdown_is_shown_as_text_and_never_runs(page: Any, viewer: Viewer, home: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    ids = _ids(home)
    page.get(f"{viewer.base}/item/{ids['message']}")
    content = page.find_element(By.ID, "item-content")
    text = content.text
    for shown in (
        f"<script>window.{heron.FLAG} = 1; alert(1)</script>",
        f'<img src=x onerror="window.{heron.FLAG}=2">',
        f'<svg onload="window.{heron.FLAG}=3">',
        f"[plain js](javascript:window.{heron.FLAG}=8)",
        f"[evil]: javascript:window.{heron.FLAG}=13",
    ):
        assert shown in text, shown
    assert content.find_element(By.CSS_SELECTOR, "code").text == "inline <b>code</b>"
    assert content.find_element(By.CSS_SELECTOR, "strong").text == "bold"
    images = [e.text for e in content.find_elements(By.CSS_SELECTOR, ".image-alt")]
    assert images == ["tracker"]  # its alt text, nothing fetched; a data: image is not even an image
    assert "![inline svg](data:image/svg+xml;base64," in text
    links = {link.text: link.get_attribute("href") for link in content.find_elements(By.CSS_SELECTOR, "a")}
    assert links == {
        "the heron docs": "https://example.com/heron?a=1&b=2",
        "a relative one": f"{viewer.base}/projects",
    }
    _assert_inert(page)
    # Pointing at and clicking what the payload hoped would be live does nothing either.
    for element in content.find_elements(By.CSS_SELECTOR, "p, li, pre"):
        if not element.find_elements(By.TAG_NAME, "a"):  # the two real links would leave the page
            ActionChains(page).scroll_to_element(element).move_to_element(element).click().perform()
    _assert_inert(page)
    assert page.current_url == f"{viewer.base}/item/{ids['message']}"
    # The idea drawn from it shows it among the messages it was said in, just as inert.
    page.get(f"{viewer.base}/item/{ids['idea']}")
    source = page.find_element(By.CSS_SELECTOR, "#source-context li.source .message-text")
    assert f"<script>window.{heron.FLAG} = 1; alert(1)</script>" in source.text
    assert "inline <b>code</b>" in page.find_element(By.ID, "item-content").text
    _assert_inert(page)


def test_a_code_block_scrolls_inside_its_box(page: Any, viewer: Viewer, home: Path) -> None:
    from selenium.webdriver.common.by import By

    _window(page, *SIZES["phone"])
    page.get(f"{viewer.base}/item/{_ids(home)['message']}")
    wide = [p for p in page.find_elements(By.CSS_SELECTOR, "#item-content pre") if "heron-xxx" in p.text]
    assert wide
    sizes = page.execute_script(
        "const e = arguments[0], s = getComputedStyle(e); return [e.scrollWidth, e.clientWidth, "
        "s.overflowX, s.fontFamily, document.documentElement.scrollWidth, window.innerWidth]",
        wide[0],
    )
    scroll_width, client_width, overflow, font, page_width, inner = sizes
    assert scroll_width > client_width and overflow == "auto"
    assert "mono" in font.lower()
    assert page_width <= inner


def test_long_tool_output_is_folded_short_messages_are_open(page: Any, viewer: Viewer, home: Path) -> None:
    from selenium.webdriver.common.by import By

    tool = _one(home, "SELECT id FROM messages WHERE kind = 'tool_result' AND text LIKE '%heron-notes/039%'")
    idea = _one(
        home,
        "SELECT i.id FROM ideas i JOIN messages m ON m.file_id = i.source_file_id "
        "WHERE m.id = ? AND i.source_line > m.line ORDER BY i.source_line LIMIT 1",
        (tool,),
    )
    page.get(f"{viewer.base}/item/{idea}")
    messages = {
        m.find_element(By.CSS_SELECTOR, ".message-head a").text: m
        for m in page.find_elements(By.CSS_SELECTOR, "#source-context li.message")
    }
    folded = messages[f"m{tool}"].find_element(By.CSS_SELECTOR, "details.fold")
    assert folded.get_attribute("open") is None
    summary = folded.find_element(By.TAG_NAME, "summary")
    assert summary.text == "[tool_result Bash] heron-notes/000.md 0 bytes ok · 39 more lines"
    body = folded.find_element(By.CSS_SELECTOR, "pre.tool-output")
    assert not body.is_displayed()
    summary.click()
    wait_for(body.is_displayed, 10, "the fold to open")
    assert "heron-notes/039.md" in body.text
    long_text = [m for m in messages.values() if "heron checklist" in m.text]
    assert long_text and long_text[0].find_element(By.CSS_SELECTOR, "details.fold summary").text.endswith(
        "· 31 more lines"
    )
    # Short messages are shown open, as Markdown.
    short = [m for m in messages.values() if "heron exporter" in m.text]
    assert len(short) == 2  # the question the idea is, and the answer after it
    assert not [m for m in short if m.find_elements(By.CSS_SELECTOR, "details.fold")]
    assert [c.text for m in short for c in m.find_elements(By.CSS_SELECTOR, ".md code")] == ["heron-notes/"]


def test_score_parts_wait_behind_why_this_rank(page: Any, viewer: Viewer) -> None:
    from selenium.webdriver.common.by import By

    page.get(f"{viewer.base}/search?q=heron")
    results = page.find_elements(By.CSS_SELECTOR, "li.result")
    assert results
    for result in results:
        toggle = result.find_element(By.CSS_SELECTOR, "details.why")
        assert toggle.get_attribute("open") is None
        assert not result.find_element(By.CSS_SELECTOR, "dl.parts").is_displayed()
    first = results[0]
    first.find_element(By.CSS_SELECTOR, "details.why summary").click()
    parts = first.find_element(By.CSS_SELECTOR, "dl.parts")
    wait_for(parts.is_displayed, 10, "the score parts")
    assert "fusion" in parts.text and "match" in parts.text


LABELS_OUTSIDE = """
const svg = document.getElementById(arguments[0]);
const v = svg.viewBox.baseVal;
return [...svg.querySelectorAll(arguments[1])].map(t => {
  const b = t.getBBox();
  return {text: t.textContent, x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height,
          anchor: t.getAttribute("text-anchor"), node: t.parentElement.getAttribute("data-node")};
}).filter(b => b.x < v.x || b.y < v.y || b.right > v.x + v.width || b.bottom > v.y + v.height);
"""


def test_graph_labels_lie_inside_the_drawing(page: Any, viewer: Viewer, home: Path) -> None:
    from selenium.webdriver.common.by import By

    relation = _query(home, "SELECT from_idea_id FROM relations ORDER BY id")
    centres = {_ids(home)["graph"], *(str(r[0]) for r in relation)}
    drawn = 0
    for centre in sorted(centres):
        page.get(f"{viewer.base}/graph/{centre}")
        labels = page.find_elements(By.CSS_SELECTOR, "#graph .node-label")
        drawn += len(labels)
        assert page.execute_script(LABELS_OUTSIDE, "graph", ".node-label") == [], centre
        # Labels left of the centre read leftwards, from their node.
        middle = page.execute_script(
            "const v = document.getElementById('graph').viewBox.baseVal; return v.x + v.width / 2"
        )
        for label in labels:
            x = float(label.get_attribute("x"))
            if label.get_attribute("text-anchor") != "middle" and x < middle - 60:
                assert label.get_attribute("text-anchor") == "end"
    assert drawn >= 10  # the biggest neighbourhood has labels on every side


def test_timeline_labels_keep_to_their_column(page: Any, viewer: Viewer) -> None:
    from selenium.webdriver.common.by import By

    page.get(f"{viewer.base}/timeline?project={quote(heron.CWD)}")
    lanes = page.find_elements(By.CSS_SELECTOR, "#timeline g.lane")
    assert len(lanes) == heron.SESSIONS
    boxes = page.execute_script(
        """
        const box = e => { const b = e.getBBox(); return {x: b.x, right: b.x + b.width}; };
        const all = s => [...document.querySelectorAll('#timeline ' + s)];
        return {labels: all('.lane-labels text').map(e => ({...box(e), text: e.textContent})),
                marks: all('circle.mark').map(box), spans: all('rect.span').map(box),
                spanLabels: all('text.span-label').map(e => ({...box(e), text: e.textContent,
                  bar: box(e.parentElement.querySelector('rect'))}))};
        """
    )
    column = 170 - 10  # the label column, less the gap kept before the first dot
    assert all(label["right"] <= column for label in boxes["labels"]), boxes["labels"]
    assert [label for label in boxes["labels"] if label["text"].endswith("…")]  # the long branch, cut
    assert all(mark["x"] >= 170 for mark in boxes["marks"]) and boxes["marks"]
    assert all(span["x"] >= 170 and span["right"] - span["x"] >= 6 for span in boxes["spans"])
    for label in boxes["spanLabels"]:
        assert label["right"] <= label["bar"]["right"], label
    # Lanes never overlap.
    backgrounds = [lane.find_element(By.CSS_SELECTOR, "rect.lane-bg") for lane in lanes]
    spans = [(float(b.get_attribute("y")), float(b.get_attribute("height"))) for b in backgrounds]
    assert all(top + height <= spans[n + 1][0] for n, (top, height) in enumerate(spans[:-1]))


@pytest.mark.parametrize("size", list(SIZES))
def test_every_page_fits_the_window(
    browser: Any, viewer: Viewer, home: Path, size: str, tmp_path: Path
) -> None:
    """No page is wider than a laptop's or a phone's window: what cannot wrap scrolls in its own box."""
    width, height = SIZES[size]
    ids = _ids(home)
    _window(browser, width, height)
    visited = []
    for name, path in PAGES.items():
        url = path.format(**ids)
        if viewer.get(url).status_code == 404:
            continue
        browser.get(viewer.base + url)
        wait_for(lambda: browser.execute_script("return document.readyState") == "complete", 30, url)
        found = browser.execute_script(OVERFLOWING)
        browser.save_screenshot(str(tmp_path / f"{size}-{name}.png"))
        assert found["scrollWidth"] <= found["limit"], (name, found)
        assert found["overflowing"] == [], (name, found)
        visited.append(name)
    assert len(visited) >= len(PAGES) - 1, visited


# ---- a phone's width (390 px): the four ways the viewer failed there, each measured ----

PROJECT_ROWS = """
return [...document.querySelectorAll(arguments[0] + ' tr.project-row')].map(row => {
  const r = row.getBoundingClientRect();
  return {display: getComputedStyle(row).display, width: r.width, height: r.height,
    cells: [...row.cells].map(c => {
      const b = c.getBoundingClientRect();
      return {text: c.innerText.trim(), label: c.dataset.label || null, width: b.width, top: b.top,
              shown: getComputedStyle(c, '::before').content,
              links: [...c.querySelectorAll('a')].map(a => a.getBoundingClientRect().top)};
    })};
});
"""


def test_projects_are_stacked_cards_on_a_phone_and_a_table_on_a_laptop(page: Any, viewer: Viewer) -> None:
    from selenium.webdriver.common.by import By

    _window(page, *SIZES["phone"])
    page.get(f"{viewer.base}/projects")
    rows = page.execute_script(PROJECT_ROWS, "#projects")
    assert len(rows) >= 2
    main = page.find_element(By.TAG_NAME, "main").rect["width"]
    assert not page.find_element(By.CSS_SELECTOR, "#projects thead").is_displayed()
    for row in rows:
        assert row["display"] == "grid", row
        assert row["width"] >= main - 2 * 12 - 1  # a card spans the page, less main's padding
        # Squeezed into columns the rows were 374 px tall; a card holds its name, path, four figures
        # and three links in far less, however long the path (heron's has nothing to break at).
        assert row["height"] <= 260, row
        for cell in row["cells"]:
            assert cell["width"] >= 80, cell  # no column of one letter per line
            if cell["label"]:
                assert cell["shown"] == f'"{cell["label"]}"', cell  # each figure says what it is
        links = row["cells"][-1]["links"]
        assert len(links) == 3 and max(links) - min(links) < 1  # board · search · forget… on one line
    assert page.execute_script("return document.documentElement.scrollWidth") <= SIZES["phone"][0]

    _window(page, *SIZES["laptop"])
    page.get(f"{viewer.base}/projects")
    assert page.find_element(By.CSS_SELECTOR, "#projects thead").is_displayed()
    for row in page.execute_script(PROJECT_ROWS, "#projects"):
        assert row["display"] == "table-row", row
        tops = {round(cell["top"]) for cell in row["cells"]}
        assert len(tops) == 1, row  # one line of columns, as a table
        assert row["height"] <= 120, row  # a few lines at most: heron's path wraps in its column


def test_the_home_pages_projects_are_cards_on_a_phone(page: Any, viewer: Viewer) -> None:
    """The home page's project figures (eight columns, two small charts) are one card per project on a
    phone, each figure labelled, as on the projects page; on a laptop one row of columns."""
    _window(page, *SIZES["phone"])
    page.get(f"{viewer.base}/")
    rows = page.execute_script(PROJECT_ROWS, "#project-figures")
    assert rows, "the home page lists the store's projects"
    for row in rows:
        assert row["display"] == "grid", row
        # The name on its line, then seven labelled figures two by two: four short lines.
        assert row["height"] <= 340, row
        for cell in row["cells"]:
            if cell["text"] or cell["label"]:
                assert cell["width"] >= 80, cell
            if cell["label"]:
                assert cell["shown"] == f'"{cell["label"]}"', cell
    assert page.execute_script("return document.documentElement.scrollWidth") <= SIZES["phone"][0]

    _window(page, *SIZES["laptop"])
    page.get(f"{viewer.base}/")
    for row in page.execute_script(PROJECT_ROWS, "#project-figures"):
        assert row["display"] == "table-row", row


GRAPH_SCALE = """
const svg = document.getElementById('graph'), box = document.getElementById('graph-box');
const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
const labels = [...svg.querySelectorAll('.node-label')];
const centre = svg.querySelector('circle.centre').getBoundingClientRect();
const frame = box.getBoundingClientRect();
return {scale: scale, count: labels.length,
        fonts: labels.map(t => parseFloat(getComputedStyle(t).fontSize) * scale),
        heights: labels.map(t => t.getBoundingClientRect().height),
        scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, scrollLeft: box.scrollLeft,
        centre: centre.left + centre.width / 2, left: frame.left, right: frame.left + box.clientWidth,
        edges: svg.querySelectorAll('line.edge').length, nodes: svg.querySelectorAll('.node').length};
"""


@pytest.mark.parametrize("size", list(SIZES))
def test_the_graph_is_readable_on_a_phone(page: Any, viewer: Viewer, home: Path, size: str) -> None:
    from selenium.webdriver.common.by import By

    _window(page, *SIZES[size])
    page.get(f"{viewer.base}/graph/{_ids(home)['graph']}")

    def centred() -> Any:
        found = page.execute_script(GRAPH_SCALE)
        return found if found["left"] + 20 <= found["centre"] <= found["right"] - 20 else None

    drawn = wait_for(centred, 10, "the graph's box to open on its centre idea")
    assert isinstance(drawn, dict) and drawn["count"] >= 5
    # Drawn at its own size, never shrunk to the page: shrunk to a phone its labels were 4 px high.
    assert drawn["scale"] == pytest.approx(1, abs=0.001)
    assert min(drawn["fonts"]) >= 11 and min(drawn["heights"]) >= 11, drawn
    if size == "phone":
        # Wider than a phone, it scrolls in its box, which opened part way along, on the centre.
        assert drawn["scrollWidth"] > drawn["clientWidth"] and drawn["scrollLeft"] > 0
    # The same neighbourhood in words: a line per node, each edge read from both its ends.
    items = page.find_elements(By.CSS_SELECTOR, "#graph-list > li")
    assert len(items) == drawn["nodes"]
    assert len(page.find_elements(By.CSS_SELECTOR, "#graph-list .graph-links > li")) == 2 * drawn["edges"]
    for item in items:
        font = float(item.value_of_css_property("font-size").removesuffix("px"))
        assert font >= 13 and item.rect["width"] >= min(300, SIZES[size][0] - 60)
    assert page.execute_script("return document.documentElement.scrollWidth") <= SIZES[size][0]


CHART_BOX = """
const box = document.getElementById('remembered-box'), frame = box.getBoundingClientRect();
const buckets = [...box.querySelectorAll('g.bucket')].filter(g => g.querySelector('rect.segment'));
const newest = buckets[buckets.length - 1].querySelector('rect.segment').getBoundingClientRect();
return {scrollLeft: box.scrollLeft, clientWidth: box.clientWidth, scrollWidth: box.scrollWidth,
        left: frame.left, right: frame.left + box.clientWidth,
        newestLeft: newest.left, newestRight: newest.right};
"""


@pytest.mark.parametrize("size", list(SIZES))
def test_the_home_chart_opens_on_its_newest_bars(page: Any, viewer: Viewer, size: str) -> None:
    _window(page, *SIZES[size])
    page.get(f"{viewer.base}/")
    if size == "phone":

        def at_end() -> Any:
            box = page.execute_script(CHART_BOX)
            return box if box["scrollLeft"] + box["clientWidth"] >= box["scrollWidth"] - 1 else None

        box = wait_for(at_end, 10, "the chart's box to scroll to its right end")
        assert isinstance(box, dict)
        assert box["scrollWidth"] > box["clientWidth"]  # the chart is wider than a phone: it scrolls
    else:
        box = page.execute_script(CHART_BOX)
        assert box["scrollWidth"] <= box["clientWidth"] and box["scrollLeft"] == 0  # it fits: no scrolling
    # The newest bar is in view.
    assert box["left"] <= box["newestLeft"] and box["newestRight"] <= box["right"], box


SPAN_BARS = """
return [...document.querySelectorAll('#timeline g.lane')].map(lane => ({
  session: lane.dataset.session,
  spans: [...lane.querySelectorAll('rect.span')].map(r => {
    const b = r.getBBox();
    return {open: r.hasAttribute('data-open'), start: Number(r.dataset.start), end: Number(r.dataset.end),
            depth: Number(r.getAttribute('class').match(/depth-(\\d)/)[1]), x: b.x, right: b.x + b.width};
  }),
  marks: [...lane.querySelectorAll('circle.mark')].map(c => ({line: Number(c.dataset.line),
                                                              x: c.cx.baseVal.value})),
}));
"""


def test_an_open_topic_runs_to_its_real_end(page: Any, viewer: Viewer, home: Path) -> None:
    page.get(f"{viewer.base}/timeline?project={quote(heron.CWD)}")
    lanes = page.execute_script(SPAN_BARS)
    stored_open = _one(
        home,
        "SELECT count(*) FROM topic_spans t JOIN sessions s ON s.id = t.session_id "
        "JOIN projects p ON p.id = s.project_id WHERE p.path = ? AND t.end_line IS NULL",
        (heron.CWD,),
    )
    assert stored_open > 0  # the offline model leaves each session's last topic open
    assert sum(span["open"] for lane in lanes for span in lane["spans"]) == stored_open
    widest, under = 0.0, 0
    for lane in lanes:
        last_line = _one(home, "SELECT max(end_line) FROM messages WHERE session_id = ?", (lane["session"],))
        for span in (s for s in lane["spans"] if s["open"]):
            later = [
                s["start"]
                for s in lane["spans"]
                if s["start"] > span["start"] and s["depth"] <= span["depth"]
            ]
            # To the line before the next topic at its depth or above, or to the session's end.
            assert span["end"] == (min(later) - 1 if later else max(last_line, span["start"])), span
            covered = [m for m in lane["marks"] if span["start"] <= m["line"] <= span["end"]]
            for mark in covered:  # every idea said during the topic lies under its bar
                assert span["x"] - 0.5 <= mark["x"] <= span["right"] + 0.5, (span, mark)
            under += len(covered)
            widest = max(widest, span["right"] - span["x"])
    assert under > 0  # ideas lie under open topics: the check above was about something
    assert widest >= 300  # a session-long topic, not a 6 px sliver at its first line
