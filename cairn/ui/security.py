"""Who may talk to the viewer: a per-start token, a Host check, and headers that keep pages inert.

The viewer shows everything the user's sessions said, on a TCP port any local process (and any web
page the user's browser opens) can reach, so every request must prove it came from someone who saw the
URL `cairn ui` printed:

- **token**: random per start, saved as `$CAIRN_HOME/ui-token` (0600). The first page load carries it
  as `?token=`; the answer sets it as an HttpOnly, SameSite=Strict cookie and redirects to the same URL
  without it (so it leaves the address bar and history). Requests with neither are refused (403).
- **Host**: must be `127.0.0.1:PORT` or `localhost:PORT`. A DNS-rebinding page reaches the port under
  a name of its own; this refuses it before any handler reads the store.
- **POST only to change** (forget, undo, supersede, correct), with the token again in the form
  (`token`) or the `X-Cairn-Token` header: SameSite already stops cross-site posts, and this makes a
  forged one need the secret as well.
- **Origin** of a POST: a browser names the page a form was posted from; one that is not
  `http://127.0.0.1:PORT` or `http://localhost:PORT` (another site, another local port, `null` from a
  sandboxed frame or a file) is refused before any handler runs. A request without the header (not
  a browser: a local program) still needs the token.
- **Headers**: a Content-Security-Policy without inline script (transcript text is hostile: a
  `<script>` that slipped past escaping still would not run), no framing, no referrer beyond the
  viewer itself, no caching, and no CORS headers at all, so no other origin may read an answer.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cairn.ui.urls import path_url

TOKEN_FILE = "ui-token"
TOKEN_HEADER = "x-cairn-token"
CSP = (
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # Not `no-referrer`: under it a browser posts a form with `Origin: null`, which the Origin check
    # must refuse (a sandboxed frame sends the same). `same-origin` sends the viewer's origin to the
    # viewer and nothing, neither origin nor page, to anyone else.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def save_token(home: Path, token: str) -> Path:
    """Write the token where only this user can read it (0600), replacing the last start's."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = home / TOKEN_FILE
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return path


def cookie_name(port: int) -> str:
    """Cookies are per host, not per port: two viewers on one machine must not overwrite each other's."""
    return f"cairn_ui_{port}"


def token_matches(supplied: str | None, token: str) -> bool:
    return supplied is not None and secrets.compare_digest(supplied.encode(), token.encode())


class Guard:
    """ASGI middleware: Host check, Origin check of a POST, token check, first-load cookie, and the
    security headers on every answer (refusals included)."""

    def __init__(self, app: ASGIApp, *, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets: nothing here needs one
            return
        send = _with_headers(send)
        headers = Headers(scope=scope)
        if headers.get("host", "").lower() not in self.hosts:
            await _refuse("refused: this viewer answers only at 127.0.0.1 or localhost", 403)(
                scope, receive, send
            )
            return
        if scope["method"] not in ("GET", "HEAD", "POST"):
            await _refuse("method not allowed", 405)(scope, receive, send)
            return
        origin = headers.get("origin")
        if scope["method"] == "POST" and origin is not None and origin.lower() not in self.origins:
            await _refuse("refused: a change must be posted from the viewer's own page", 403)(
                scope, receive, send
            )
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookie = _cookie(headers.get("cookie", ""), self.cookie)
        if token_matches(query.get("token"), self.token) and scope["method"] in ("GET", "HEAD"):
            # The first load: keep the token in a cookie and take it out of the address bar.
            rest: list[tuple[str, object]] = [(k, v) for k, v in query.items() if k != "token"]
            response = RedirectResponse(path_url(scope["path"], rest), status_code=303)
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            await response(scope, receive, send)
            return
        if not (token_matches(cookie, self.token) or token_matches(headers.get(TOKEN_HEADER), self.token)):
            await _refuse(
                "refused: open the URL `cairn ui` printed (it carries this start's token; "
                f"it is also in $CAIRN_HOME/{TOKEN_FILE})",
                403,
            )(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _refuse(text: str, status: int) -> Response:
    return PlainTextResponse(text, status_code=status)


def _with_headers(send: Send) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            raw = [
                (k, v) for k, v in message.get("headers", []) if k.decode().lower() not in SECURITY_HEADERS
            ]
            raw.extend((k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items())
            message = {**message, "headers": raw}
        await send(message)

    return sender
