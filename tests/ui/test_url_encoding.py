"""Every URL the viewer builds encodes what it carries.

A transcript whose `sessionId` is `<victim>#evil` gave the link `/forget?session=<victim>#evil`, which a
browser cuts at the `#`: the confirm page then offered to forget the victim's session (confirmed in
Chromium: its messages and ideas were deleted). Each link is read here as a browser reads it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urldefrag, urlsplit

import pytest
from starlette.testclient import TestClient

from cairn.config import Settings
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from cairn.ui.app import create_app
from cairn.ui.urls import url

TOKEN = "t" * 43
VICTIM = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001"
CRAFTED = f"{VICTIM}#evil&idea=1 x/y?z"


async def _sessions(settings: Settings, embedding_function: Any) -> int:
    """The victim's session and the crafted one, one idea each; the crafted session's idea's id."""
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        async with store.db.write() as conn:
            await conn.execute("INSERT INTO projects (id, path, name) VALUES (1, '/home/dev/app', 'app')")
            for n, session in enumerate((VICTIM, CRAFTED), start=1):
                await conn.execute("INSERT INTO sessions (id, project_id) VALUES (?, 1)", (session,))
                await conn.execute(
                    "INSERT INTO transcript_files (id, path, session_id) VALUES (?, ?, ?)",
                    (n, f"/t/{n}.jsonl", session),
                )
                cursor = await conn.execute(
                    """INSERT INTO ideas (session_id, source_file_id, source_line, intent, content,
                       content_hash) VALUES (?, ?, 1, 'decision', ?, ?)""",
                    (session, n, f"decision number {n}: keep the cache", f"h{n}"),
                )
                idea = int(cursor.lastrowid or 0)
        return idea
    finally:
        await store.close()


@pytest.fixture
def crafted(settings: Settings, embedding_function: Any) -> Iterator[tuple[TestClient, int]]:
    idea = asyncio.run(_sessions(settings, embedding_function))
    app = create_app(settings, token=TOKEN, port=8377)
    with TestClient(app, base_url="http://127.0.0.1:8377", headers={"x-cairn-token": TOKEN}) as client:
        yield client, idea


def _as_a_browser_follows(href: str) -> dict[str, list[str]]:
    """The query a browser sends for `href` (HTML-unescaped already): everything after `#` stays home."""
    return parse_qs(urlsplit(urldefrag(href).url).query, keep_blank_values=True)


def test_forget_its_session_names_the_whole_session_id(crafted: tuple[TestClient, int]) -> None:
    client, idea = crafted
    page = client.get(url("/item", idea))
    assert page.status_code == 200, page.text
    [href] = re.findall(r'<a class="button danger" href="([^"]+)">Forget its session', page.text)
    href = href.replace("&amp;", "&")
    assert _as_a_browser_follows(href) == {"session": [CRAFTED]}, href

    confirm = client.get(urldefrag(href).url)
    assert confirm.status_code == 200
    [hidden] = re.findall(r'<input type="hidden" name="session" value="([^"]*)">', confirm.text)
    assert hidden.replace("&amp;", "&") == CRAFTED, "the form posts the crafted session, not the victim's"
    assert 'name="idea"' not in confirm.text


def test_every_template_link_is_built_by_url() -> None:
    """No template pastes a value into an href, action, src or data-poll: each is a constant, or
    `{{ url(...) }}` (inside `{% if %}` at most)."""
    attribute = re.compile(r'\b(?:href|action|src|data-poll)="((?:[^"{]|\{\{.*?\}\}|\{%.*?%\})*)"')
    pasted = []
    templates = resources.files("cairn.ui").joinpath("templates")
    for template in sorted(templates.iterdir(), key=lambda t: t.name):
        text = template.read_text(encoding="utf-8")
        for value in attribute.findall(text):
            rest = re.sub(r"\{\{ url\((?:[^()]|\([^()]*\))*\) \}\}|\{%.*?%\}", "", value)
            if "{{" in rest:
                pasted.append(f"{template.name}: {value}")
    assert pasted == []


def test_url_encodes_each_part_whole() -> None:
    assert url("/item", 12) == "/item/12"
    assert url("/item", "a/b#c") == "/item/a%2Fb%23c"
    assert url("/forget", session="a#b&idea=1 c") == "/forget?session=a%23b%26idea%3D1%20c"
    assert url("/search", project=None) == "/search"


def test_the_token_redirect_keeps_the_path_and_query_encoded(crafted: tuple[TestClient, int]) -> None:
    client, _ = crafted
    first = client.get(f"/item/a%3Fb%23c?token={TOKEN}&q=x%26y", follow_redirects=False, headers={})
    assert first.status_code == 303
    assert first.headers["location"] == "/item/a%3Fb%23c?q=x%26y"
