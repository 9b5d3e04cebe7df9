"""`cairn ui`: serve the local web viewer (`cairn.ui`) on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import sys
from typing import Annotated

import typer

from cairn.cli.common import JsonOpt, app, fail, load_settings

DEFAULT_PORT = 8377


@app.command()
def ui(
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one)."),
    ] = DEFAULT_PORT,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the viewer in the default browser.")
    ] = False,
    undo_seconds: Annotated[
        float,
        typer.Option("--undo-seconds", min=0.0, max=3600.0, help="How long a forget waits for an undo."),
    ] = 10.0,
    as_json: JsonOpt = False,
) -> None:
    """Browse, search and correct the memory in a local web page: figures, live feed, timeline, board, health.

    Listens on 127.0.0.1 only. Each start makes a new token: the printed URL carries it (it is also in
    $CAIRN_HOME/ui-token); requests without it, or for another host name, are refused. Ctrl-C stops it.
    """
    import uvicorn

    from cairn.ui.app import create_app
    from cairn.ui.security import new_token, save_token

    settings = load_settings()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise fail(
                f"port {port} is in use; pass --port with another one (or 0 for any free port)", 2
            ) from None
        raise fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", 2) from None
    listener.listen(128)
    bound = listener.getsockname()[1]
    token = new_token()
    token_file = save_token(settings.home, token)
    url = f"http://127.0.0.1:{bound}/?token={token}"
    if as_json:
        sys.stdout.write(json.dumps({"url": url, "port": bound, "token_file": str(token_file)}) + "\n")
    else:
        sys.stdout.write(f"cairn viewer: {url}\n(listening on 127.0.0.1:{bound} only; Ctrl-C stops it)\n")
    sys.stdout.flush()
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    viewer = create_app(settings, token=token, port=bound, undo_seconds=undo_seconds)
    config = uvicorn.Config(viewer, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    try:
        asyncio.run(server.serve(sockets=[listener]))
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()
