"""The one way the viewer builds a URL: every path segment and query value percent-encoded.

Ids the viewer links to come from transcripts (a session id is whatever a transcript's `sessionId`
says), so they may hold `#`, `&`, `?`, `/` or a space. Pasted into an `href` as they are, the browser
cuts `/forget?session=<victim>#evil` at the `#` and the confirm page offers to forget the victim's
session; `&idea=1` in a value adds a parameter. So templates and redirects never paste a value into a
URL: they call `url(...)` (a template global), which encodes each part whole, and a test checks that
no template builds a link another way.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode


def url(path: str, /, *segments: object, **params: object) -> str:
    """`path` (a route, given as a constant), then each of `segments` as one encoded path segment, then
    `params` as an encoded query; a None parameter is left out.

    `url("/item", 12)` is `/item/12`; `url("/forget", session="a#b&c")` is `/forget?session=a%23b%26c`.
    """
    text = path.rstrip("/") + "".join("/" + quote(str(segment), safe="") for segment in segments)
    if not segments and not text:
        text = "/"
    return text + query([(key, value) for key, value in params.items() if value is not None])


def query(pairs: list[tuple[str, object]]) -> str:
    """`?` and `pairs` encoded as a query (every character but letters, digits and `_.-~` escaped), or
    "" when there are none."""
    return "?" + urlencode([(key, str(value)) for key, value in pairs], quote_via=quote) if pairs else ""


def path_url(path: str, pairs: list[tuple[str, object]] | None = None) -> str:
    """A request's decoded path encoded again (`/` kept) with one leading slash (`//evil.example/x` as a
    Location would be another site), and `pairs` as its query."""
    return "/" + quote(path.lstrip("/"), safe="/") + query(pairs or [])
