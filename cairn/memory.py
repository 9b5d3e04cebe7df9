"""`Memory`, cairn's memory as a library: what the command line, the MCP server and the viewer ask of it.

    from cairn import Memory

    with Memory.open() as memory:                     # $CAIRN_HOME, else ~/.cairn
        page = memory.search("why did we pick SQLite", limit=5)
        for result in page.results:
            print(result.id, result.snippet)

Each call goes to the daemon of that home when one runs — it owns the store and its vectors, and no
other process may open them meanwhile (invariant 2) — else it opens the store for that call alone and
closes it after, so a daemon the hook starts meanwhile can take the store over. The route is chosen
per call, never once: a program (the MCP server, the viewer) lives for hours while the daemon comes
and goes. Both routes run the same op (`cairn.daemon.server.run_op`) and its answer comes back as the
pydantic model the op builds, so a result does not depend on who answered.

What can go wrong is cairn's error tree (`cairn.errors`): a `Refusal` for a request that cannot be
done (an unknown id, a damaged page token), worded alike by either route; a `Failure` for the
environment (a store another process holds past `BUSY_WAIT_SECONDS`, a daemon lost mid-answer).

`AsyncMemory` is the same for asyncio programs; `Memory` runs it on an event loop of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack

from cairn.errors import Refusal

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from chromadb.api.types import Documents, EmbeddingFunction

    from cairn.config import Settings
    from cairn.search.content_models import ContentResponse
    from cairn.search.item_models import ItemDetail, OpenItems, Timeline
    from cairn.search.models import SearchPage
    from cairn.store.cpus import EmbeddingMode
    from cairn.store.lock import StoreLockedError
    from cairn.store.store import Store

__all__ = ["AsyncMemory", "ContentFilters", "Memory", "SearchFilters"]

#: How long a call waits for a store held by a process that does not answer on the socket: a daemon
#: takes the lock a moment before it listens, and a short `cairn` command finishes within this.
BUSY_WAIT_SECONDS = 3.0
BUSY_POLL_SECONDS = 0.1
#: A daemon takes the store's lock a moment before its socket accepts (about 0.2 s on a quiet machine,
#: seconds on a loaded one) and names itself in its pidfile only once it does: a call that meets the
#: lock of a daemon in that state waits this long at most for it to listen, and asks it.
DAEMON_STARTING_WAIT_S = 15.0
#: What a person does in a row — search, open a result, look at what was said around it — and so the
#: ops after which a lingering memory (`linger`) keeps its direct store open.
WARM_OPS = frozenset({"search", "show", "source_context", "timeline"})

T = TypeVar("T")


class SearchFilters(TypedDict, total=False):
    """What narrows a search (`cairn.search.models.SearchRequest` has each in full)."""

    mode: Literal["hybrid", "semantic", "keyword"]
    kind: Literal["ideas", "spans", "messages", "all"]
    project: str
    session: str
    intents: list[str]
    origins: list[str]
    since: str
    until: str
    include_superseded: bool
    min_score: float
    limit: int
    continuation: str
    record_usage: bool


class ContentFilters(TypedDict, total=False):
    """What narrows a passage search (`cairn.search.content_models.ContentRequest` has each in full)."""

    exact_terms: list[str]
    project: str
    session: str
    min_score: float
    limit: int
    continuation_token: str
    max_chars: int


class AsyncMemory:
    """The memory of one cairn home, for asyncio programs; every call is routed anew (module docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedding_function: EmbeddingFunction[Documents] | None = None,
        linger: float = 0.0,
        share_model: bool = True,
        embedding_mode: EmbeddingMode = "steady",
    ) -> None:
        """`embedding_function`: the one direct calls embed queries with (default: cairn's own, made at
        the first direct call that needs it and kept, `share_model`; without it each store makes its own
        when it first embeds, run for `embedding_mode`, as a one-call command wants). `linger`: seconds
        a direct store stays open after a `WARM_OPS` call, for a person clicking on (the viewer); other
        calls use it meanwhile without keeping it open, so the lock is held at most that long after."""
        self.settings = settings
        self.linger = linger
        self.share_model = share_model or embedding_function is not None
        self.embedding_mode: EmbeddingMode = embedding_mode
        self._embedding_function = embedding_function
        #: One process holds one store lock at a time: direct calls take turns.
        self._direct = asyncio.Lock()
        self._warm: Store | None = None
        self._closer: asyncio.Task[None] | None = None

    @classmethod
    def open(cls, home: str | Path | None = None) -> AsyncMemory:
        """The memory at `home` (default `$CAIRN_HOME`, else `~/.cairn`), with its `config.toml`; a
        broken one is a `ConfigError` (a `Refusal`) saying what to fix."""
        from cairn.config import Settings

        return cls(Settings.load(home))

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store a lingering memory keeps open, if it does."""
        if self._closer is not None:
            self._closer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._closer
        async with self._direct:
            await self._close_warm()

    def embedding_function(self) -> EmbeddingFunction[Documents]:
        """The embedding function direct calls use: made at the first one and kept, so its model loads
        once per process, not per call."""
        if self._embedding_function is None:
            from cairn.store.embeddings import make_embedding_function

            self._embedding_function = make_embedding_function(self.settings)
        return self._embedding_function

    async def call(
        self,
        op: str,
        args: dict[str, Any] | None = None,
        *,
        wait: bool = False,
        on_direct: Callable[[Store], Any] | None = None,
    ) -> Any:
        """The JSON answer of `op` (`cairn.daemon.server.OPS`) with `args`, from the daemon or directly.

        `wait` gives the daemon all the time the op takes (a big import); else it answers within
        `cairn.daemon.client.DEFAULT_TIMEOUT`. `on_direct` is called with the store when the op runs here,
        before it runs (a command that searches it without its vectors, say). A daemon that exits while
        it answers (idle, stopped) is asked again by the other route; a store another process holds is
        waited for — `DAEMON_STARTING_WAIT_S` when that is a daemon starting up, which is then asked,
        else `BUSY_WAIT_SECONDS` — then `StoreLockedError`.
        """
        from cairn.daemon.client import DEFAULT_TIMEOUT, daemon_request

        args = args or {}
        timeout = None if wait else DEFAULT_TIMEOUT
        return await self._route(
            lambda: daemon_request(self.settings, op, args, timeout=timeout),
            lambda: self._direct_call(op, args, on_direct),
        )

    async def run_job(
        self,
        job: str,
        args: dict[str, Any],
        on_progress: Callable[[dict[str, Any]], None],
        *,
        should_stop: Callable[[], bool] | None = None,
        on_direct: Callable[[], Any] | None = None,
    ) -> Any:
        """A long job (`cairn.daemon.server.LONG_OPS`: backfill, index, reindex, …) and its JSON result:
        run by the daemon when it runs, else here on a store held for the job; either way its progress
        events go to `on_progress` as they happen. `should_stop` is asked at the direct run's batch
        boundaries; `on_direct` is called before the direct run starts (a command taking over Ctrl-C)."""
        from cairn.daemon.client import daemon_request
        from cairn.daemon.server import long_op_function, to_json

        async def here() -> Any:
            fn = long_op_function(job)
            async with self._direct:
                await self._close_warm()
                store = await self._open_store(writing=True)
                try:
                    if on_direct is not None:
                        on_direct()
                    stop = should_stop or (lambda: False)
                    return to_json(await fn(store, self.settings, **args, emit=on_progress, should_stop=stop))
                finally:
                    await store.close()

        # A daemon lost mid-job is said, not taken over here: stopping it is how a person ends a job.
        return await self._route(
            lambda: daemon_request(self.settings, job, args, timeout=None, on_progress=on_progress),
            here,
            retry_lost=False,
        )

    async def _route(
        self,
        by_daemon: Callable[[], Awaitable[Any]],
        here: Callable[[], Awaitable[Any]],
        *,
        retry_lost: bool = True,
    ) -> Any:
        """`by_daemon()` when a daemon listens, else `here()`, with the waits `call` describes; a daemon
        lost while it answered is asked again by the other route when `retry_lost`."""
        from cairn.daemon.client import DaemonRefusal, DaemonRequestError, NoDaemon
        from cairn.daemon.process import running_pid
        from cairn.store.lock import StoreLockedError

        started = time.monotonic()
        retried = False
        while True:
            try:
                return await by_daemon()
            except NoDaemon:
                pass
            except DaemonRefusal as exc:  # worded as the same op run here words it
                raise Refusal(exc.reason) from exc
            except DaemonRequestError:
                if not retry_lost or retried or running_pid(self.settings) is not None:
                    raise
                retried = True  # the daemon exited while answering: ask again
                continue
            try:
                return await here()
            except StoreLockedError as exc:
                patience = DAEMON_STARTING_WAIT_S if self._daemon_starting(exc) else BUSY_WAIT_SECONDS
                if time.monotonic() - started >= patience:
                    raise
            await asyncio.sleep(BUSY_POLL_SECONDS)

    def _daemon_starting(self, exc: StoreLockedError) -> bool:
        """Whether the lock's holder is a daemon that has not yet said it listens (no pidfile names it)."""
        from cairn.daemon.process import pid_alive, read_pidfile

        if exc.pid is None or " daemon " not in f" {exc.description or ''} " or not pid_alive(exc.pid):
            return False
        named = read_pidfile(self.settings)
        return named is None or named.pid != exc.pid

    async def _direct_call(
        self, op: str, args: dict[str, Any], on_direct: Callable[[Store], Any] | None = None
    ) -> Any:
        """Run `op` on a store opened here: for this call alone, or on the lingering one (`linger`)."""
        from cairn.daemon.server import WRITING_OPS, run_op

        async with self._direct:
            if op in WRITING_OPS or (self._warm is None and not self._keeps_warm(op)):
                await self._close_warm()  # a write must not meet a store kept open for reading
                store = await self._open_store(writing=op in WRITING_OPS)
                try:
                    if on_direct is not None:
                        on_direct(store)
                    return await run_op(store, op, args)
                finally:
                    await store.close()
            if self._warm is None:
                self._warm = await self._open_store(writing=False)
            try:
                if on_direct is not None:
                    on_direct(self._warm)
                return await run_op(self._warm, op, args)
            except Refusal:
                raise
            except Exception:
                await self._close_warm()  # whatever failed may have left it unusable
                raise
            finally:
                if self._keeps_warm(op) and self._warm is not None:
                    self._close_later()

    def _keeps_warm(self, op: str) -> bool:
        return self.linger > 0 and op in WARM_OPS

    async def _open_store(self, *, writing: bool) -> Store:
        """The store for a direct call. One that only reads also reads a read-only home, and a store a
        backfill is writing (by keyword, at once); one that writes says why it cannot (`Store.open`)."""
        from cairn.store.store import Store

        vectors = None
        if self.share_model:
            from cairn.store.vectors import VectorIndex

            vectors = VectorIndex(self.settings, self.embedding_function())
        return await Store.open(
            self.settings,
            vectors=vectors,
            read_only_ok=not writing,
            busy_ok=not writing,
            embedding_mode=self.embedding_mode,
        )

    def _close_later(self) -> None:
        """(Re)start the countdown after which the lingering store closes."""
        if self._closer is not None:
            self._closer.cancel()
        self._closer = asyncio.create_task(self._close_after_linger())

    async def _close_after_linger(self) -> None:
        await asyncio.sleep(self.linger)
        async with self._direct:
            self._closer = None
            await self._close_warm()

    async def _close_warm(self) -> None:
        store, self._warm = self._warm, None
        if store is not None:
            await store.close()

    async def search(self, query: str, **filters: Unpack[SearchFilters]) -> SearchPage:
        """Ideas, topic spans and messages for `query`, best first (`cairn search`). A search counts its
        results as used, which ranks them a little higher next time; `record_usage=False` does not."""
        from cairn.search.models import SearchPage

        return SearchPage.model_validate(await self.call("search", {"query": query, **filters}))

    async def content(self, concepts: list[str], **filters: Unpack[ContentFilters]) -> ContentResponse:
        """Passages of indexed project files and documents by meaning and exact terms (`cairn content`)."""
        from cairn.search.content_models import ContentResponse

        answer = await self.call("search_content", {"semantic_concepts": concepts, **filters})
        return ContentResponse.model_validate(answer)

    async def show(self, item: str | int) -> ItemDetail:
        """One idea (`123`), topic span (`s12`), message (`m456`) or file chunk (`c78`) in full."""
        from cairn.search.item_models import ItemDetail

        return ItemDetail.model_validate(await self.call("show", {"id": item}))

    async def timeline(self, item: str | int, *, before: int = 5, after: int = 5) -> Timeline:
        """The ideas said just before and after `item`."""
        from cairn.search.item_models import Timeline

        answer = await self.call("timeline", {"id": item, "before": before, "after": after})
        return Timeline.model_validate(answer)

    async def open_items(
        self,
        *,
        project: str | None = None,
        session: str | None = None,
        include_todos: bool = True,
        limit: int | None = None,
    ) -> OpenItems:
        """Open questions and problems, and open todos unless `include_todos` is False, newest first:
        the one definition of "open" that `cairn questions --open`, MCP and recall share."""
        from cairn.search.item_models import OpenItems

        args = {"project": project, "session": session, "include_todos": include_todos, "limit": limit}
        return OpenItems.model_validate(await self.call("open_questions", args))

    async def projects(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """The projects sessions were recorded in, with their counts (`cairn projects --json`)."""
        return list(await self.call("projects", {"limit": limit}))

    async def stats(self) -> dict[str, Any]:
        """What the store holds and how it has been used (`cairn stats --json`)."""
        return dict(await self.call("stats"))


class Memory:
    """The memory of one cairn home, for programs without an event loop: `AsyncMemory` run on a loop of
    its own. Use it as a context manager, or `close()` it."""

    def __init__(self, settings: Settings) -> None:
        self._memory = AsyncMemory(settings)
        self._loop = asyncio.new_event_loop()

    @classmethod
    def open(cls, home: str | Path | None = None) -> Memory:
        """The memory at `home` (default `$CAIRN_HOME`, else `~/.cairn`); see `AsyncMemory.open`."""
        from cairn.config import Settings

        return cls(Settings.load(home))

    @property
    def settings(self) -> Settings:
        return self._memory.settings

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._memory.aclose())
            self._loop.close()

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(call)

    def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """`AsyncMemory.call`: the JSON answer of any op."""
        return self._run(self._memory.call(op, args))

    def search(self, query: str, **filters: Unpack[SearchFilters]) -> SearchPage:
        """`AsyncMemory.search`."""
        return self._run(self._memory.search(query, **filters))

    def content(self, concepts: list[str], **filters: Unpack[ContentFilters]) -> ContentResponse:
        """`AsyncMemory.content`."""
        return self._run(self._memory.content(concepts, **filters))

    def show(self, item: str | int) -> ItemDetail:
        """`AsyncMemory.show`."""
        return self._run(self._memory.show(item))

    def timeline(self, item: str | int, *, before: int = 5, after: int = 5) -> Timeline:
        """`AsyncMemory.timeline`."""
        return self._run(self._memory.timeline(item, before=before, after=after))

    def open_items(
        self,
        *,
        project: str | None = None,
        session: str | None = None,
        include_todos: bool = True,
        limit: int | None = None,
    ) -> OpenItems:
        """`AsyncMemory.open_items`."""
        open_items = self._memory.open_items(
            project=project, session=session, include_todos=include_todos, limit=limit
        )
        return self._run(open_items)

    def projects(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """`AsyncMemory.projects`."""
        return self._run(self._memory.projects(limit=limit))

    def stats(self) -> dict[str, Any]:
        """`AsyncMemory.stats`."""
        return self._run(self._memory.stats())
