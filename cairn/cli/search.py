"""Commands that find things in the memory: search, content, show and timeline.

Each asks the store through `request` (the daemon when it runs, else directly) and either prints the
op's JSON unchanged (`--json`, for scripts and agents) or renders it for a person. Rendering builds rich
`Text` objects instead of markup strings, so nothing a transcript says — brackets, backslashes, stray
`**` — can be read as styling or break the output, and it renders `terminal_data` of the answer, so no
control character a transcript holds (`ESC[2J`, an OSC title, a bidi override) reaches the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from cairn.cli.common import (
    JsonOpt,
    ProjectOpt,
    SessionOpt,
    app,
    ask,
    console,
    err,
    fail,
    print_json,
)
from cairn.cli.early_search import search_args
from cairn.cli.results import (
    MAX_SEARCH_LIMIT,
    more_hint,
    oneline,
    ref,
    render_found,
    render_notes,
)
from cairn.cli.safe import plain_text, terminal_data
from cairn.dates import shown_date
from cairn.search.labels import kind_label

if TYPE_CHECKING:
    from cairn.config import Settings
    from cairn.store.store import Store


class SearchMode(StrEnum):
    hybrid = "hybrid"
    semantic = "semantic"
    keyword = "keyword"


class KindChoice(StrEnum):
    ideas = "ideas"
    spans = "spans"
    messages = "messages"
    all = "all"


#: The largest `--limit` of `content` (search's: `cairn.cli.results.MAX_SEARCH_LIMIT`).
MAX_CONTENT_LIMIT = 50


PageTokenOpt = Annotated[
    str | None,
    typer.Option("--page-token", help="Continue a listing at its next page: the next_token of its --json."),
]


MinScoreOpt = Annotated[
    float | None,
    typer.Option("--min-score", min=0.0, max=1.0, help="Leave out results scoring below this (0 to 1)."),
]


PageLimitOpt = Annotated[int, typer.Option("--limit", min=1, max=MAX_SEARCH_LIMIT, help="Results per page.")]


def _ask(op: str, args: dict[str, Any], on_direct: Callable[[Store], Any] | None = None) -> Any:
    """Run `op` through the daemon or directly; a refusal (bad id, damaged token, invalid filter) is
    one error line either way (`ask` turns it into `fail`). The daemon is asked before anything else is
    loaded, so its answer takes a fraction of a second (`benchmarks/cli_search.py`)."""
    return ask(op, args, on_direct=on_direct)


#: A search answered without the daemon that kept the user waiting longer than this (the whole command,
#: start-up included) ends with `DAEMON_HINT` on stderr, when that is a terminal; a quicker one has
#: nothing worth saying.
SLOW_SEARCH_S = 1.0
DAEMON_HINT = "Searched without the daemon ({seconds:.1f} s); `cairn daemon start` makes it sub-second."


#: The notice of a search answered without the daemon from keywords alone (`search_without_daemon`),
#: when they were not decisive: matches by meaning could have changed the answer, so it says so, in
#: the table and in `--json`'s notices, with how the next search gets them.
KEYWORDS_ONLY = "keyword matches only: no daemon had the embedding model loaded; {next}"
NEXT_STARTED = "it is starting, so the next search matches by meaning too"
NEXT_START_IT = (
    '`cairn daemon start` makes the next searches hybrid (search_without_daemon = "hybrid": each loads it)'
)
#: Said on stderr when a search started the daemon (`search_starts_daemon`).
DAEMON_STARTED = (
    "Started the cairn daemon in the background (the indexing model is offline: it spends nothing); "
    "search_starts_daemon = false turns this off."
)


def starts_daemon(settings: Settings) -> bool:
    """Whether a search that found no daemon starts one: when `search_starts_daemon` allows it, a person
    runs it (stderr is a terminal: a script's searches leave no process behind them) and the daemon
    would spend nothing — the offline indexing model. With any other model it would index what the
    hooks queued, at a cost, which only the user or the capture hook decides."""
    from cairn.agent.model_names import OFFLINE, default_model

    if not settings.search_starts_daemon or not _at_terminal():
        return False
    return (settings.model or default_model()).strip() == OFFLINE


def _start_daemon(settings: Settings) -> bool:
    """Start the daemon detached (`cairn.daemon.hook.start_in_background`); True when it was asked to
    start here, False when one was already alive or starting."""
    from cairn.daemon.hook import daemon_alive, start_in_background

    home = str(settings.home)
    if daemon_alive(home):
        return False
    start_in_background(home, source="cairn-search")
    return True


def _at_terminal() -> bool:
    """Whether a person reads stderr: scripts and pipes get no advice, no line that depends on timing."""
    return err.is_terminal


def _hint_daemon() -> None:
    """Say, in one line on stderr (never on a `--json` stdout), how a slow search gets fast."""
    from cairn.clock import process_seconds

    seconds = process_seconds()
    if seconds > SLOW_SEARCH_S and _at_terminal():
        err.print(Text(DAEMON_HINT.format(seconds=seconds), style="dim"), soft_wrap=True)


def parse_when(value: str | None, option: str) -> str | None:
    """`value` as an ISO string by cairn's one date parser (`cairn.dates`), or a one-line error, exit 2.

    Checked here rather than left to the op so a typo gets an answer naming the option and the accepted
    forms.
    """
    from cairn.dates import DateError, parse_when_iso

    try:
        return parse_when_iso(value, option)
    except DateError as exc:
        raise fail(str(exc), 2) from None


def empty_date_range(since: str | None, until: str | None = None) -> str | None:
    """`cairn.dates.empty_range` of the options as typed (already checked by `parse_when`)."""
    from cairn.dates import empty_range

    return empty_range(since, until)


def render_search(page: dict[str, Any], query: str) -> None:
    """A search page as the op answered it, or what to try when nothing matched."""
    if page.get("results"):
        render_found(page)
    else:
        _no_results(query or str(terminal_data(page.get("query") or "")))
    render_notes(page)


def _no_results(query: str) -> None:
    """Say what to try next: other words or semantic mode, or indexing first when the memory is empty."""
    console.print(Text("No matches for ") + plain_text(repr(query)) + Text(".") if query else "No matches.")
    tips: list[str] = []
    # A query without words gets a notice from search itself; tips about other words would not help it.
    if re.search(r"\w", query):
        tips = [
            "try other or fewer words, or drop a filter (--kind, --intent, --since, --min-score)",
            "--mode semantic finds passages by meaning when the words differ",
        ]
    try:
        stats = _ask("stats", {})
    except (typer.Exit, ValueError, OSError):
        stats = None
    if isinstance(stats, dict) and not stats.get("messages"):
        tips = ["the memory is empty: run `cairn backfill` (or `cairn sync`) to index your transcripts"]
    for tip in tips:
        console.print(Text(f"  - {tip}", style="dim"))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in your own words or exact terms.")] = "",
    mode: Annotated[
        SearchMode,
        typer.Option(
            "--mode",
            metavar="<mode>",
            help="hybrid (words and meaning), semantic (meaning) or keyword (words).",
        ),
    ] = SearchMode.hybrid,
    kind: Annotated[
        KindChoice,
        typer.Option(
            "--kind", metavar="<kind>", help="ideas, spans (topic spans), messages, or all of them."
        ),
    ] = KindChoice.all,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    intent: Annotated[
        list[str] | None,
        typer.Option(
            "--intent",
            help="Only ideas with this intent (decision, conclusion, question, problem, solution, todo, "
            "context); repeat for several.",
        ),
    ] = None,
    origin: Annotated[
        list[str] | None,
        typer.Option(
            "--from",
            help="Only messages from: prompt (yours), reply (the assistant's), tool_call, tool_result, "
            "subagent, summary (compaction), system; repeat or comma-separate for several.",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only items said at or after: 2025-01-31, today, 3d, 2w.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only items said before: 2025-01-31, yesterday, 1w.")
    ] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="Also show ideas a later one replaced.")
    ] = False,
    min_score: MinScoreOpt = None,
    limit: PageLimitOpt = 10,
    page_token: PageTokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the memory: ideas, topic spans and messages, ranked by words, meaning, recency and use.

    With --page-token the query and filters come from the token, so QUERY can be left out.

    The daemon answers when it runs (`cairn daemon start`): it keeps the index and the embedding model
    loaded, so a search takes a fraction of a second and matches words and meaning. Without it the
    search answers at once by keywords, saying so unless they were decisive (search_without_daemon =
    "hybrid" loads the model instead, which takes seconds); run at a terminal with the offline indexing
    model, it also starts the daemon in the background, since that spends nothing
    (search_starts_daemon = false: never).
    """
    from cairn.store.vocab import INTENTS
    from cairn.transcripts.origin import ORIGINS

    unknown = sorted(set(intent or ()) - set(INTENTS))
    if unknown:
        raise fail(f"unknown intent {', '.join(unknown)}; choose from {', '.join(INTENTS)}", 2)
    origins = [o.strip() for value in origin or () for o in value.split(",") if o.strip()]
    if unknown := sorted(set(origins) - set(ORIGINS)):
        raise fail(f"unknown --from {', '.join(unknown)}; choose from {', '.join(ORIGINS)}", 2)
    args = search_args(
        query,
        mode=mode.value,
        kind=kind.value,
        project=project,
        session=session,
        intents=intent,
        origins=origins,
        since=parse_when(since, "--since"),
        until=parse_when(until, "--until"),
        include_superseded=include_superseded,
        min_score=min_score,
        limit=limit,
        continuation=page_token,
    )
    if not as_json and (empty := empty_date_range(since, until)):
        console.print(plain_text(f"No matches: {empty}."))
        return
    direct: list[Settings] = []
    deferred: list[str] = []

    def keywords_first(store: Store) -> None:
        """Without the daemon, search by keywords unless told to load the vectors (`--mode semantic`,
        `search_without_daemon = "hybrid"`): Chroma and the embedding model take seconds to load."""
        direct.append(store.settings)
        if mode is not SearchMode.semantic and store.settings.search_without_daemon == "keywords":
            next_step = NEXT_STARTED if starts_daemon(store.settings) else NEXT_START_IT
            store.vectors_deferred = KEYWORDS_ONLY.format(next=next_step)
            deferred.append(store.vectors_deferred)

    page = _ask("search", args, on_direct=keywords_first)
    if deferred and not page.get("results") and page.get("vectors_unavailable") == deferred[0]:
        # Words found nothing, and meaning may: "no matches" is worth the seconds the model takes.
        page = _ask("search", args, on_direct=lambda store: direct.append(store.settings))
    if as_json:
        print_json(page)
    else:
        render_search(page, query)
    if direct:
        _hint_daemon()
        if starts_daemon(direct[0]) and _start_daemon(direct[0]):
            err.print(Text(DAEMON_STARTED, style="dim"), soft_wrap=True)


def _excerpt(text: str, terms: list[str], width: int = 400) -> str:
    """`width` characters of `text` on one line, starting a little before the first term it contains.

    A chunk is a whole message, often far longer than a row; the part worth seeing is where the term is.
    """
    flat = oneline(text)
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    hits = [i for i in (lower.find(t.lower()) for t in terms if t.strip()) if i >= 0]
    start = max(0, min(hits) - width // 4) if hits else 0
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def _content_table(data: dict[str, Any], terms: list[str]) -> Table:
    table = Table(expand=True, show_lines=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("chunk", no_wrap=True, style="cyan")
    table.add_column("content", overflow="fold", ratio=1)
    seen: set[str] = set()
    for row in data.get("results") or []:
        text = Text(_excerpt(str(row.get("content") or ""), terms))
        text.highlight_words([t for t in terms if t.strip()], style="bold yellow", case_sensitive=False)
        document = str(row.get("document_id") or "")
        if row.get("start_line") is not None:  # a project file: where the passage sits in it
            text.append(f"\n{document}:{row['start_line']}-{row.get('end_line') or ''}", style="dim")
        else:
            text.append(f"\n{document.rsplit('/', 1)[-1]}:{row.get('chunk_index', '')}", style="dim")
        # The keywords are the document's, the same on each of its chunks: shown at its first one.
        keywords = [] if document in seen else row.get("document_keywords") or []
        seen.add(document)
        if keywords:
            text.append(f" · {', '.join(map(str, keywords[:8]))}", style="dim")
        if row.get("learned_from"):
            text.append(f"\nlifted: found after the search {row['learned_from']!r}", style="green")
        table.add_row(f"{float(row.get('relevance_score') or 0):.2f}", str(row.get("chunk_id") or ""), text)
    return table


def render_content(data: dict[str, Any], terms: list[str]) -> None:
    results = data.get("results") or []
    stats = data.get("statistics") or {}
    if results:
        console.print(_content_table(data, terms))
    else:
        console.print("No chunks matched. Try other terms, broader concepts, or a lower --min-score.")
    line = Text(f"{len(results)} of {stats.get('total_results', len(results))}", style="bold")
    files = stats.get("files_covered")
    if files:
        count = len(files) if isinstance(files, list) else files
        line.append(f" · {count} document{'' if count == 1 else 's'}")
    if results and stats.get("avg_relevance") is not None:
        line.append(f" · average relevance {float(stats['avg_relevance']):.2f}")
    console.print(line)
    if stats.get("search_interpretation"):
        console.print(Text(str(stats["search_interpretation"]), style="dim"))
    hints = content_hints(data, terms)
    if hints:
        console.print(Text("next:", style="bold"))
        for hint in hints:
            console.print(Text(f"  - {hint}"))
    related = (data.get("navigation_hints") or {}).get("related_queries") or []
    if related:
        console.print(Text("related: ", style="bold") + Text(", ".join(map(str, related))))
    continuation = data.get("continuation") or {}
    if continuation.get("has_more"):
        console.print(more_hint(len(results), int(stats.get("total_results") or 0), MAX_CONTENT_LIMIT))


#: A top score at least this high is worth reading in full (`cairn.search.content.STRONG_SCORE`).
STRONG_CONTENT_SCORE = 0.75


def content_hints(data: dict[str, Any], terms: list[str]) -> list[str]:
    """What to try next, in this command's words: the op's own `navigation_hints.next_actions` speak the
    MCP tool's parameters (`show(id=...)`, `continuation_token`, `min_score`), which a shell does not."""
    results = data.get("results") or []
    if not results:
        hints = ["lower --min-score (0.3 suits --term alone), or try broader --concept words"]
        if terms:
            hints.append(
                "a code-shaped --term (camelCase, snake_case, with digits) matches case-sensitively, "
                "as a whole identifier"
            )
        return [*hints, 'cairn search "..." looks through the decisions, ideas and topics remembered']
    top = results[0]
    hints = []
    if float(top.get("relevance_score") or 0) >= STRONG_CONTENT_SCORE or len(results) <= 3:
        hints.append(f"cairn show {top.get('chunk_id')} shows the best match in full")
    total = int((data.get("statistics") or {}).get("total_results") or 0)
    if total > len(results):
        hints.append(
            "add a --term (an identifier, file name or version) to narrow the results"
            if not terms
            else "raise --min-score, or add a --concept, to keep only the closest matches"
        )
    hints.append('cairn search "..." finds the decisions and ideas recorded about it')
    return hints


@app.command()
def content(
    concept: Annotated[
        list[str] | None,
        typer.Option("--concept", help="An idea to find by meaning, e.g. 'retry policy'; repeatable."),
    ] = None,
    term: Annotated[
        list[str] | None,
        typer.Option("--term", help="An exact word or identifier that must appear; repeatable."),
    ] = None,
    min_score: MinScoreOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_CONTENT_LIMIT, help="Results per page.")
    ] = 10,
    page_token: PageTokenOpt = None,
    project: ProjectOpt = None,
    session: SessionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search passages — transcript messages and the project files the agent touched — by concepts (meaning)
    and exact terms; full text, best first."""
    concepts = [c for c in concept or () if c.strip()]
    terms = [t for t in term or () if t.strip()]
    if not concepts and not terms and not page_token:
        raise fail("give at least one --concept or --term (or a --page-token to continue)", 2)
    args: dict[str, Any] = {
        "semantic_concepts": concepts,
        "exact_terms": terms,
        "min_score": min_score,
        "limit": limit,
        "continuation_token": page_token,
        "project": project,
        "session": session,
    }
    data = _ask("search_content", args)
    if as_json:
        print_json(data)
    else:
        render_content(terminal_data(data), terms)


def _idea_line(idea: dict[str, Any], prefix: str = "") -> Text:
    """One linked item on one line: `prefix #id intent date  preview`, dimmed when superseded."""
    line = Text(prefix)
    line.append(ref(idea.get("id", "")), style="cyan")
    label = idea.get("intent") or idea.get("kind")
    if label:
        line.append(f" {label}", style="magenta")
    if idea.get("said_at"):
        line.append(f" {shown_date(idea['said_at'], with_time=False)}", style="dim")
    text = idea.get("preview") or idea.get("content") or idea.get("name") or ""
    if text:
        line.append("  ")
        line.append(oneline(text), style="dim strike" if idea.get("superseded") else "")
    if idea.get("superseded"):
        line.append("  (superseded)", style="dim")
    return line


def _section(title: str, lines: list[Text]) -> list[RenderableType]:
    return [Text(""), Text(title, style="bold"), *lines] if lines else []


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _relation_line(relation: dict[str, Any]) -> Text:
    """`relation` as it reads: outgoing "→ builds on #12 …", incoming "← #12 … (builds on this)"."""
    kind = str(relation.get("type", "related")).replace("_", " ")
    idea = relation.get("idea") or {}
    if relation.get("direction") == "incoming":
        line = _idea_line(idea, prefix="  ← ")
        line.append(f"  ({kind} this)", style="dim")
        return line
    return _idea_line(idea, prefix=f"  → {kind} ")


def _entity_label(entity: Any) -> str:
    if isinstance(entity, dict):
        name = entity.get("name", "")
        return f"{name} ({entity['type']})" if entity.get("type") else str(name)
    return str(entity)


def _header_lines(item: dict[str, Any]) -> list[RenderableType]:
    """Where the item was said (session, project, topic, file:line) and its bookkeeping, dim labels."""
    lines: list[RenderableType] = []
    session = item.get("session") or {}
    if isinstance(session, dict) and session:
        where = Text("session ", style="dim").append(str(session.get("id", "")))
        project = session.get("project_name") or session.get("project")
        if project:
            where.append("  project ", style="dim").append(str(project))
        if session.get("topic"):
            where.append("  topic ", style="dim").append(str(session["topic"]))
            if session.get("topic_id"):
                where.append(f" ({session['topic_id']})", style="dim")
        lines.append(where)
    source = item.get("source") or {}
    if isinstance(source, dict) and source.get("file"):
        location = str(source["file"])
        if source.get("line"):
            location += f":{source['line']}"
            if item.get("end_line"):
                location += f"-{item['end_line']}"
        lines.append(Text("source ", style="dim") + Text(location))
    facts = Text()
    for key, label in (
        ("importance", "importance"),
        ("confidence", "confidence"),
        ("usage_count", "found"),
        ("created_at", "stored"),
        ("answered_at", "answered"),
        ("completed_at", "completed"),
        ("declined_at", "declined"),
        ("depth", "depth"),
    ):
        value = item.get(key)
        if value is None or (key == "depth" and not value):
            continue
        if key.endswith("_at"):
            value = shown_date(str(value))
        elif key == "usage_count":
            value = f"{value} times"
        facts.append(f"{label} ", style="dim").append(f"{value}  ")
    if facts:
        lines.append(facts)
    return lines


def show_panel(item: dict[str, Any]) -> Panel:
    """One item in full: where it was said, its text, what replaced or answered it, what it links to."""
    title = Text(ref(item.get("id", "")), style="bold cyan")
    label = item.get("intent") or item.get("kind")
    if item.get("kind") == "message" and item.get("intent"):
        label = f"message from {item['intent']}"
    if label:
        title.append(f" {label}", style="bold magenta")
    if item.get("said_at"):
        title.append(f"  {shown_date(item['said_at'])}", style="dim")
    superseded = bool(item.get("superseded") or item.get("superseded_by"))
    if superseded:
        title.append("  superseded", style="yellow")
    parts = _header_lines(item)
    parts.append(Text(""))
    if item.get("title") and item.get("title") != item.get("content"):
        parts.append(Text(str(item["title"]), style="bold"))
    parts.append(Text(str(item.get("content") or ""), style="dim" if superseded else ""))
    if item.get("resolution"):
        parts += _section("resolution", [Text(str(item["resolution"]))])
    links = (
        ("superseded by", "superseded_by", "  → "),
        ("supersedes", "supersedes", "  ← "),
        ("answered by", "answered_by", "  → "),
        ("answers", "answers", "  → "),
    )
    for heading, key, prefix in links:
        parts += _section(heading, [_idea_line(i, prefix=prefix) for i in _as_list(item.get(key))])
    parts += _section("relations", [_relation_line(r) for r in _as_list(item.get("relations"))])
    entities = [_entity_label(e) for e in _as_list(item.get("entities"))]
    if entities:
        parts += _section("entities", [Text("  " + ", ".join(entities))])
    ideas = _as_list(item.get("ideas"))
    heading = "ideas"
    if item.get("idea_count") and item["idea_count"] > len(ideas):
        heading = f"ideas ({len(ideas)} of {item['idea_count']})"
    parts += _section(heading, [_idea_line(i, prefix="  ") for i in ideas])
    children = [
        Text("  ").append(str(c.get("id", "")), style="cyan").append(f" {c.get('name', '')}")
        + Text(f"  lines {c.get('start_line')}-{c.get('end_line') or ''}, {c.get('ideas', 0)} ideas", "dim")
        for c in _as_list(item.get("children"))
    ]
    parts += _section("sub-topics", children)
    keywords = [str(k) for k in _as_list(item.get("document_keywords"))]
    if keywords:
        parts += _section("file keywords", [Text("  " + ", ".join(keywords))])
    parts += _section(
        "learned from searches", [_association_line(a) for a in _as_list(item.get("associations"))]
    )
    return Panel(Group(*parts), title=title, title_align="left", border_style="dim" if superseded else "cyan")


def _association_line(association: dict[str, Any]) -> Text:
    line = Text("  ").append(repr(str(association.get("query", ""))))
    facts = [str(association.get("source") or "")]
    if association.get("times_learned", 1) > 1:
        facts.append(f"learned {association['times_learned']} times")
    if hits := int(association.get("hits") or 0):
        facts.append("helped once" if hits == 1 else f"helped {hits} times")
    if association.get("original_score") is not None:
        facts.append(f"search scored {float(association['original_score']):.2f}")
    return line.append("  " + ", ".join(f for f in facts if f), style="dim")


ItemIdArg = Annotated[
    str,
    typer.Argument(
        help="An item id: 123 or #123 (idea), s12 (topic span), m456 (message), c78 (file chunk)."
    ),
]


@app.command()
def show(item_id: ItemIdArg, as_json: JsonOpt = False) -> None:
    """Show one idea, topic span, message or file chunk in full, with what it links to."""
    item = _ask("show", {"id": item_id})
    if as_json:
        print_json(item)
    else:
        console.print(show_panel(terminal_data(item)))


def _session_header(session_id: str, sessions: dict[str, Any]) -> Text:
    info = sessions.get(session_id) or {}
    header = Text("session ", style="bold")
    header.append(str(session_id)[:8] if session_id else "?", style="bold")
    if isinstance(info, dict):
        project = info.get("project_name") or info.get("project")
        if project:
            header.append(f" · {project}")
        if info.get("started_at"):
            header.append(f" · started {shown_date(info['started_at'])}", style="dim")
        if info.get("first_topic"):
            header.append(f" · {info['first_topic']}", style="dim")
    return header


def _session_of(item: dict[str, Any]) -> str:
    session = item.get("session")
    if isinstance(session, dict):
        return str(session.get("id") or "")
    return str(session or item.get("session_id") or "")


def render_timeline(data: dict[str, Any]) -> None:
    """The ideas around an anchor in the order they were said, a header wherever the session changes."""
    sessions = data.get("sessions") or {}
    anchor = data.get("anchor") or {}
    scope = data.get("scope")
    if scope:
        where = data.get("project_name") or data.get("project")
        what = f"project {where}" if scope == "project" and where else f"the {scope}"
        console.print(Text(f"ideas from {what}, oldest first", style="dim"))
    rows = [(i, False) for i in data.get("before") or []]
    rows += [(anchor, True)] if anchor else []
    rows += [(i, False) for i in data.get("after") or []]
    groups: list[tuple[str, list[tuple[dict[str, Any], bool]]]] = []
    for item, is_anchor in rows:
        session_id = _session_of(item)
        if not groups or groups[-1][0] != session_id:
            groups.append((session_id, []))
        groups[-1][1].append((item, is_anchor))
    for session_id, group in groups:
        console.rule(_session_header(session_id, sessions), align="left", style="dim")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=1, no_wrap=True, style="bold yellow")
        grid.add_column(width=16, no_wrap=True, style="dim")
        grid.add_column(min_width=6, no_wrap=True, justify="right", style="cyan")
        grid.add_column(min_width=13, no_wrap=True, style="magenta")
        grid.add_column(overflow="fold")
        for item, is_anchor in group:
            text = oneline(item.get("preview") or item.get("content") or item.get("title") or "")
            grid.add_row(
                "▶" if is_anchor else "",
                shown_date(item.get("said_at")),
                ref(item.get("id", "")),
                kind_label({"kind": "idea", **item}),
                Text(text, style="dim strike" if item.get("superseded") else ""),
                style="bold" if is_anchor else None,
            )
        console.print(grid)
    if not data.get("before") and not data.get("after"):
        console.print(Text("No other ideas were said around it.", style="dim"))


@app.command()
def timeline(
    item_id: ItemIdArg,
    before: Annotated[int, typer.Option("--before", min=0, max=50, help="Items said before it.")] = 5,
    after: Annotated[int, typer.Option("--after", min=0, max=50, help="Items said after it.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Show what was said around an item, in order: the ideas and messages before and after it."""
    data = _ask("timeline", {"id": item_id, "before": before, "after": after})
    if as_json:
        print_json(data)
    else:
        render_timeline(terminal_data(data))
