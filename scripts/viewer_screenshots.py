"""Screenshots of every viewer page at a desktop (1280x800) and a phone (390x844) size, for docs/viewer.md.

    .venv/bin/python scripts/viewer_screenshots.py [--out docs/viewer] [--home HOME]

Without `--home` it backfills the test fixtures' transcripts (all but the largest project) with the offline
model into a temporary home, so the pictures show real sessions nobody here wrote. It starts `cairn ui` as a
real process and drives Debian's headless Chromium (the browser tests' driver, `tests/ui/helpers.py`), the
page emulating each size as a device would (a phone honours the viewport meta tag). Each page is captured
from its top, down to at most `MAX_HEIGHT` CSS pixels, as `<page>-<width>.png`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.ui.helpers import backfilled, running_viewer, signed_in, wait_for  # noqa: E402

SIZES = {"desktop": (1280, 800, False), "phone": (390, 844, True)}
MAX_HEIGHT = 2400
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
SKIPPED = {"entireio-cli"}
#: A word the fixture sessions use often enough that search shows a full page of results.
QUERY = "hook"


def backfilled_home(root: Path) -> Path:
    """A home holding the fixture projects, indexed by the offline model."""
    projects = root / "projects"
    for project in sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name not in SKIPPED):
        shutil.copytree(project, projects / f"-home-dev-{project.name}")
    return backfilled(root / "home", projects, timeout=1800)


def pages(home: Path) -> dict[str, str]:
    """Page name -> path, with real ids: the idea with most relations, another idea, a message it came from,
    the project with most ideas. Read from the database read-only: on a real home only the search page's
    own search counts as a use of its results, as any search in the viewer does."""
    with contextlib.closing(sqlite3.connect(f"file:{home / 'cairn.db'}?mode=ro", uri=True)) as db:
        idea, other = (
            row[0]
            for row in db.execute(
                "SELECT i.id FROM ideas i LEFT JOIN relations r ON i.id IN (r.from_idea_id, r.to_idea_id) "
                "GROUP BY i.id ORDER BY count(r.id) DESC, i.id LIMIT 2"
            )
        )
        message = db.execute(
            "SELECT m.id FROM messages m JOIN ideas i ON m.file_id = i.source_file_id "
            "AND i.source_line BETWEEN m.line AND m.end_line WHERE i.id = ?",
            (idea,),
        ).fetchone()[0]
        project = db.execute(
            "SELECT p.path FROM projects p JOIN sessions s ON s.project_id = p.id "
            "JOIN ideas i ON i.session_id = s.id GROUP BY p.id ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()[0]
    return {
        "home": "/",
        "feed": "/feed",
        "search": f"/search?q={quote(QUERY)}",
        "idea": f"/item/{idea}",
        "message": f"/item/m{message}",
        "projects": "/projects",
        "timeline": f"/timeline?project={quote(project)}",
        "board": f"/board?project={quote(project)}",
        "health": "/health",
        "graph": f"/graph/{idea}",
        "forget": f"/forget?idea={idea}",
        "forgets": "/forgets",
        "supersede": f"/supersede?idea={other}&by={idea}",
    }


def capture(driver: Any, url: str, width: int, height: int, mobile: bool, out: Path) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )
    driver.get(url)
    wait_for(lambda: driver.execute_script("return document.readyState") == "complete", 60, url)
    full = driver.execute_script("return document.documentElement.scrollHeight")
    clip = {"x": 0, "y": 0, "width": width, "height": min(int(full), MAX_HEIGHT), "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"captureBeyondViewport": True, "clip": clip})
    out.write_bytes(base64.b64decode(shot["data"]))
    _palette(out)


def _palette(path: Path) -> None:
    """Rewrite a screenshot with a 256-colour palette (a third of the bytes; the pages use few colours)."""
    from PIL import Image  # Pillow comes with matplotlib, in the dev extra

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "viewer")
    parser.add_argument(
        "--home", type=Path, help="an existing CAIRN_HOME to show (default: backfill the fixtures)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cairn-shots-") as tmp:
        home = args.home or backfilled_home(Path(tmp))
        found = pages(home)
        with running_viewer(home) as viewer, signed_in(viewer, Path(tmp) / "chromium") as driver:
            for name, path in found.items():
                for width, height, mobile in SIZES.values():
                    target = args.out / f"{name}-{width}.png"
                    capture(driver, viewer.base + path, width, height, mobile, target)
                    shown = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
                    print(f"{shown}  {path}")


if __name__ == "__main__":
    main()
