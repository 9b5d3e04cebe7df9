"""Issue 18: who may talk to the viewer — a real `cairn ui` process asked with httpx, as another local
program or a rebinding web page would."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.ui.helpers import Viewer, running_viewer


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    home = tmp_path_factory.mktemp("ui-security") / "home"
    with running_viewer(home) as started:
        yield started


def test_a_request_without_the_token_is_refused(viewer: Viewer) -> None:
    for path in ("/", "/search?q=anything", "/static/app.js", "/feed/items"):
        response = httpx.get(viewer.base + path, timeout=30)
        assert response.status_code == 403, path
        assert "cairn ui" in response.text
    wrong = httpx.get(viewer.base + "/", headers={"x-cairn-token": "not-" + viewer.token}, timeout=30)
    assert wrong.status_code == 403


def test_another_host_name_is_refused_even_with_the_token(viewer: Viewer) -> None:
    for host in (f"evil.example:{viewer.port}", "127.0.0.1", f"127.0.0.1:{viewer.port + 1}"):
        response = viewer.get("/", headers={"host": host})
        assert response.status_code == 403, host
        assert "127.0.0.1 or localhost" in response.text
    assert viewer.get("/", headers={"host": f"localhost:{viewer.port}"}).status_code == 200


def test_the_first_load_moves_the_token_into_a_strict_cookie(viewer: Viewer) -> None:
    first = httpx.get(viewer.url, timeout=30)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"].lower()
    assert viewer.token.lower() in cookie and "httponly" in cookie and "samesite=strict" in cookie
    with httpx.Client(base_url=viewer.base, timeout=30) as client:
        client.cookies.set(f"cairn_ui_{viewer.port}", viewer.token)
        assert client.get("/projects").status_code == 200


def test_answers_carry_a_csp_without_inline_script_and_no_cors(viewer: Viewer) -> None:
    for response in (
        viewer.get("/", headers={"origin": "https://evil.example"}),
        httpx.get(viewer.base + "/", timeout=30),  # refusals too
    ):
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert not [h for h in response.headers if h.startswith("access-control-")]
        assert response.headers["referrer-policy"] == "same-origin"


def test_a_forget_needs_the_token_in_the_post_itself(viewer: Viewer) -> None:
    """The cookie alone (what a forged cross-site form would carry) does not forget anything."""
    with httpx.Client(base_url=viewer.base, timeout=30) as client:
        client.cookies.set(f"cairn_ui_{viewer.port}", viewer.token)
        refused = client.post("/forget", data={"idea": "1"})
        assert refused.status_code == 403
        assert client.get("/forget?idea=1").status_code in (200, 400)  # a GET only asks to confirm
        assert "Forgetting" not in client.get("/forgets").text
        assert client.delete("/forget").status_code == 405


@pytest.mark.parametrize("path", ["/correct", "/forget", "/forget/undo", "/supersede"])
def test_a_post_from_another_origin_is_refused_before_any_handler(viewer: Viewer, path: str) -> None:
    """Issue 32: a browser names the page a form was posted from; only the viewer's own pages may change
    the memory, whatever else the post carries (the token included)."""
    form = {"token": viewer.token, "idea": "1", "state": "declined"}
    for origin in ("https://evil.example", "null", f"http://127.0.0.1:{viewer.port + 1}", "http://127.0.0.1"):
        response = httpx.post(
            viewer.base + path,
            data=form,
            headers={"x-cairn-token": viewer.token, "origin": origin},
            timeout=30,
        )
        assert response.status_code == 403, (path, origin)
        assert "viewer's own page" in response.text
    # From the viewer's own origin the handler runs: it refuses this post (it names nothing), with a 400.
    for own in (f"http://127.0.0.1:{viewer.port}", f"http://localhost:{viewer.port}"):
        allowed = httpx.post(
            viewer.base + path,
            data={"token": viewer.token},
            headers={"x-cairn-token": viewer.token, "origin": own},
            timeout=30,
        )
        assert allowed.status_code == 400, (path, own, allowed.text[:200])


def test_a_correction_needs_the_token_in_the_post_itself(viewer: Viewer) -> None:
    with httpx.Client(base_url=viewer.base, timeout=30) as client:
        client.cookies.set(f"cairn_ui_{viewer.port}", viewer.token)
        origin = {"origin": f"http://127.0.0.1:{viewer.port}"}
        refused = client.post("/correct", data={"idea": "1", "state": "declined"}, headers=origin)
        assert refused.status_code == 403
        wrong = client.post(
            "/correct",
            data={"idea": "1", "state": "declined", "token": "not-" + viewer.token},
            headers=origin,
        )
        assert wrong.status_code == 403
        assert client.get("/correct").status_code == 405, "a GET changes nothing"


def test_the_token_file_is_the_users_alone(viewer: Viewer, tmp_path_factory: pytest.TempPathFactory) -> None:
    token_files = list(Path(tmp_path_factory.getbasetemp()).glob("ui-security*/home/ui-token"))
    assert token_files
    assert stat.S_IMODE(token_files[0].stat().st_mode) == 0o600
    assert token_files[0].read_text().strip() == viewer.token


def test_the_token_redirect_never_leaves_the_viewer(viewer: Viewer) -> None:
    """Issue 30: `//evil.example/x?token=…` was answered 303 to `//evil.example/x`, another site."""
    response = httpx.get(f"{viewer.base}//evil.example/x", params={"token": viewer.token}, timeout=30)
    assert response.status_code == 303
    assert response.headers["location"] == "/evil.example/x"


@pytest.mark.parametrize("idea", ["²", "1" * 5000, "١٢"], ids=["superscript", "5000 digits", "arabic-indic"])
def test_an_idea_number_that_is_no_number_is_refused_not_a_500(viewer: Viewer, idea: str) -> None:
    """Issue 30: `str.isdigit` passed these and `int()` then failed: HTTP 500."""
    for path in (f"/forget?idea={idea}", f"/supersede?idea={idea}&by=1", f"/supersede?idea=1&by={idea}"):
        response = viewer.get(path)
        assert response.status_code == 400, (path[:40], response.status_code)
