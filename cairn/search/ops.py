"""Search as socket ops — `search`, `search_content`, `show`, `timeline`, `open_questions` — and the ops
on what search learns from and draws on: `learner_stats`, `learn_associations`, `learn_forget`, `files`.

They are registered in `cairn.daemon.server.OPS`, so `run_op` answers them the same in the daemon and
in a process that opened the store itself, and every face (CLI, MCP server) gets identical JSON
whichever path answered. Their arguments arrive as JSON from another process, so they are validated by
the same pydantic models the library uses; a bad one becomes a `SearchError` whose message fits on one
line (`limit: input should be less than or equal to 100 (got 500)`) — the socket sends it back as a
refusal, the MCP server as a tool error the model can read and act on — instead of pydantic's
multi-line dump.

The modules that do the work are imported inside each op: the daemon's socket module imports this one,
and `cairn --help` must not pay for loading search.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from cairn.search.errors import SearchError
from cairn.search.open_items import MAX_OPEN
from cairn.search.timeline import MAX_TIMELINE_SIDE

if TYPE_CHECKING:
    from cairn.store.store import Store

M = TypeVar("M", bound=BaseModel)

log = logging.getLogger(__name__)

# A validation message names at most this many problems: the first ones are what the caller must fix.
MAX_PROBLEMS = 5
# Bad values are echoed back when their repr is this short; longer ones are the caller's data, not news.
MAX_ECHO_CHARS = 40
# The most rows `learn_associations` and `files` list, and the most associations one `learn_forget` deletes.
MAX_LISTED = 10_000
MAX_FORGET = 1_000

RequestStatus = Literal["pending", "indexed", "unchanged", "skipped", "failed"]


def _id_text(value: Any) -> Any:
    """Ids are text (`123`, `s12`), but a JSON number names an idea as well as its text does."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# Not `str | int`: a union reports every bad value twice, once per member.
ItemIdArg = Annotated[str, BeforeValidator(_id_text)]


class _ShowArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: ItemIdArg


class _TimelineArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: ItemIdArg
    before: int = Field(default=5, ge=0, le=MAX_TIMELINE_SIDE)
    after: int = Field(default=5, ge=0, le=MAX_TIMELINE_SIDE)


class _OpenArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    session: str | None = None
    include_todos: bool = True
    limit: int = Field(default=50, ge=1, le=MAX_OPEN)


class _AssociationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    source: Literal["learned", "agent"] | None = None
    limit: int = Field(default=50, ge=1, le=MAX_LISTED)


class _ForgetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[int] = Field(min_length=1, max_length=MAX_FORGET)


class _FilesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    status: RequestStatus | None = None
    limit: int = Field(default=50, ge=1, le=MAX_LISTED)


def validation_message(what: str, exc: ValidationError) -> str:
    """One line naming each bad field and what is wrong with it, e.g. `bad search request: mode: ...`."""
    problems: list[str] = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"])
        own = error["type"] == "value_error"  # a validator's own words: they say what was wrong already
        if own:
            message = str((error.get("ctx") or {}).get("error", message))
        problem = f"{message[:1].lower()}{message[1:]}"
        if field and not problem.startswith(field):
            problem = f"{field}: {problem}"
        value = error.get("input")
        if not own and error["type"] != "missing" and isinstance(value, str | int | float | bool):
            shown = repr(value)
            if len(shown) <= MAX_ECHO_CHARS:
                problem += f" (got {shown})"
        if problem not in problems:
            problems.append(problem)
    more = len(problems) - MAX_PROBLEMS
    text = "; ".join(problems[:MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return f"bad {what}: {text}"


def parse_args(model: type[M], args: dict[str, Any], what: str) -> M:
    """`args` as a `model`, or a `SearchError` saying which arguments are unknown or wrong and why.

    Unknown names are refused rather than ignored: a misspelt filter (`projcet`) silently dropped
    would answer a different question than the one asked.
    """
    unknown = sorted(set(args) - set(model.model_fields))
    if unknown:
        raise SearchError(
            f"bad {what}: unknown argument(s) {', '.join(unknown)}; it takes {', '.join(model.model_fields)}"
        )
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        raise SearchError(validation_message(what, exc)) from exc


def _given(**args: Any) -> dict[str, Any]:
    """The arguments the caller set: JSON `null` means "the default", as leaving it out does."""
    return {key: value for key, value in args.items() if value is not None}


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SearchError(f"bad arguments: {name} must be true or false, not {str(value)[:MAX_ECHO_CHARS]!r}")
    return value


async def search(store: Store, *, record_usage: bool = True, **fields: Any) -> Any:
    """Hybrid search over ideas, topic spans and messages; the fields are `SearchRequest`'s.

    `record_usage` counts the results as used (a later search ranks them a little higher); the MCP
    server and the CLI leave it on, benchmarks and tests turn it off.
    """
    from cairn.search.hybrid import search as hybrid_search
    from cairn.search.models import SearchRequest

    request = parse_args(SearchRequest, _given(**fields), "search request")
    page = await hybrid_search(
        store.db,
        store.vectors_or_none,
        store.settings,
        request,
        record_usage=_flag("record_usage", record_usage) and store.read_only is None,
        without_vectors=store.vectors_deferred,
    )
    why: str | None = None
    if store.writer is not None and request.mode != "keyword":
        why = (
            f"{store.writer} is writing the store (a backfill, say): results are by keyword only until "
            "it ends, and the vectors it is still building join the ranking then (a backfill run with "
            "the daemon up, `cairn daemon start` first, answers semantically as its vectors are built)"
        )
    elif store.read_only is not None and request.mode != "keyword":
        why = f"the store was opened read-only ({store.read_only}), so its vectors were not searched"
    if why is not None:
        page.notices.append(why)
        page.vectors_unavailable = why  # the reason this store gives, more telling than the search's
    return page.model_dump(mode="json")


async def search_content(store: Store, *, record_usage: bool = True, **fields: Any) -> Any:
    """Passage retrieval by `semantic_concepts` and `exact_terms`; the fields are `ContentRequest`'s.

    `record_usage` counts a hit for each learned search association that lifted a returned passage
    (it stays strong while it keeps helping); as for `search`, benchmarks and tests turn it off.
    """
    from cairn.search.content import search_content as content_search
    from cairn.search.content_models import ContentRequest

    request = parse_args(ContentRequest, _given(**fields), "search_content request")
    response = await content_search(
        store.db,
        store.vectors_or_none,
        store.settings,
        request,
        record_usage=_flag("record_usage", record_usage) and store.read_only is None,
    )
    return response.model_dump(mode="json")


async def show(store: Store, *, id: str | int, record_hit: bool = False) -> Any:
    """One idea (`123`), topic span (`s12`), message (`m456`) or file chunk (`c78`) in full.

    `record_hit`: the coding agent is expanding an id, so if recall injected that idea, the injection
    counts as a hit (`cairn stats`). The MCP server sets it; a person's `cairn show` does not, since
    only the agent's follow-ups say whether injecting the idea was worth it.
    """
    from cairn.search.items import show as show_item

    hit = _flag("record_hit", record_hit)
    args = parse_args(_ShowArgs, {"id": id}, "show request")
    detail = await show_item(store.db, args.id)
    if hit and detail.kind == "idea" and store.read_only is None:
        await _record_hit(store, int(detail.id))
    return detail.model_dump(mode="json")


async def _record_hit(store: Store, idea: int) -> None:
    """A store that cannot be written (a read-only fallback) still shows the item."""
    from cairn.store.injections import record_hit

    try:
        await record_hit(store.db, idea)
    except sqlite3.Error:
        log.warning("could not record the recall hit of idea #%d", idea, exc_info=True)


async def timeline(
    store: Store, *, id: str | int, before: int | None = None, after: int | None = None
) -> Any:
    """The ideas said just before and after the item `id` names."""
    from cairn.search.timeline import timeline as item_timeline

    args = parse_args(_TimelineArgs, _given(id=id, before=before, after=after), "timeline request")
    result = await item_timeline(store.db, args.id, before=args.before, after=args.after)
    return result.model_dump(mode="json")


async def open_questions(
    store: Store,
    *,
    project: str | None = None,
    session: str | None = None,
    include_todos: bool | None = None,
    limit: int | None = None,
) -> Any:
    """Open questions and problems, and (unless turned off) open todos, newest first
    (`cairn.store.open_ideas`)."""
    from cairn.search.open_items import open_items

    args = parse_args(
        _OpenArgs,
        _given(project=project, session=session, include_todos=include_todos, limit=limit),
        "open_questions request",
    )
    result = await open_items(
        store.db,
        project=args.project,
        session=args.session,
        include_todos=args.include_todos,
        limit=args.limit,
    )
    return result.model_dump(mode="json")


async def learner_stats(store: Store) -> Any:
    """What the search feedback loop has done: `LearnerStats`, counted from the store.

    Learning switched off (`learn_from_search`) still answers, with `enabled: false` and what was
    learned before it was switched off: those associations keep taking part in ranking.
    """
    from cairn.learning.stats import learner_stats as count

    return (await count(store.db, store.settings)).model_dump(mode="json")


async def learn_associations(
    store: Store, *, project: str | None = None, source: str | None = None, limit: int | None = None
) -> Any:
    """What the loop and the indexing agent learned: one row per (query, file) association."""
    from cairn.learning.listing import list_associations
    from cairn.search.projects import project_ids

    args = parse_args(
        _AssociationArgs, _given(project=project, source=source, limit=limit), "learn_associations request"
    )
    ids = await project_ids(store.db, args.project)
    return await list_associations(store.db, project_ids=ids, source=args.source, limit=args.limit)


async def learn_forget(store: Store, *, ids: list[int]) -> Any:
    """Delete associations by id; their vectors go at the next vector sync (through the outbox)."""
    from cairn.learning.listing import forget_associations

    args = parse_args(_ForgetArgs, {"ids": ids}, "learn_forget request")
    return await forget_associations(store.db, args.ids)


async def files(
    store: Store, *, project: str | None = None, status: str | None = None, limit: int | None = None
) -> Any:
    """The file index: documents with chunk counts and keywords, and the file requests by status."""
    from cairn.files.listing import file_index
    from cairn.search.projects import project_ids

    args = parse_args(_FilesArgs, _given(project=project, status=status, limit=limit), "files request")
    ids = await project_ids(store.db, args.project)
    return await file_index(store.db, project_ids=ids, status=args.status, limit=args.limit)
