"""`search`: hybrid retrieval over ideas, topic spans and messages — the one entry point every face uses.

The steps, for each kind the request covers:

1. keyword candidates (FTS5 BM25, three tiers, `cairn.search.keyword`) under the filters, for the
   query without the dates it names (`cairn.search.dates`: those are time windows);
2. unless keyword matches are decisive (top strength >= `search_decisive_top` and ahead of the second
   by `search_decisive_gap`), vector candidates (Chroma, filtered inside the query) for the query's
   embedding, computed once and started while the keyword queries run, and the items of a narrow
   window the query names;
3. load every candidate with its context, re-checking the filters (`cairn.search.hydrate`);
4. score (`cairn.search.ranking`), lift the reply that closes a turn by what its turn matched
   (`cairn.search.exchanges`), fold a raw message into the idea extracted from it, copies of one text
   into one result and an answered question into its answer (`cairn.search.folding`), drop what falls
   under `min_score`, and page: each result of the page with its exchange and how often it was said.

Ideas are searched with their messages as evidence (`with_evidence`): kind=ideas searches messages
too, lets each idea take its message's place when that ranks better, and returns the ideas only.

Learned search associations (`cairn.learning.boost`) take part too: when an earlier search close to
this one came back weak and the agent then found what it wanted in a file, the ideas linked to that
file's entity get relevance x (1 + weight). Such an idea is a candidate even when neither ranking
drew it: its vector rank is where its stored vector's similarity would have placed it. The lookup
reuses the query's embedding and costs one SQL query when no association applies.

A failing vector index degrades the search to keywords with a notice: SQLite, the truth, still answers.
Returned ideas have their usage counted (reinforcement on recall), and the associations that lifted
them a hit, unless the caller says otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from cairn.config import Settings
from cairn.dates import iso_utc
from cairn.learning.boost import AssociationBoost, associations_for, boosted_ideas
from cairn.learning.boost import reinforce as reinforce_associations
from cairn.search.dates import QueryDates, dates_in, in_window
from cairn.search.errors import BadContinuationError
from cairn.search.exchanges import Turn, exchanges_of, turns_of
from cairn.search.filters import TABLES, Filters
from cairn.search.folding import Ranked, count_repeats, fold_answered, fold_messages, fold_repeats
from cairn.search.hydrate import Item, answers_of, complete, load
from cairn.search.keyword import keyword_hits, passage_texts
from cairn.search.models import (
    KIND_OF_FILTER,
    Exchange,
    Kind,
    SearchPage,
    SearchRequest,
    SearchResult,
)
from cairn.search.paging import MAX_SEEN, decode_token, encode_token
from cairn.search.projects import UNKNOWN_HINT, resolve_projects
from cairn.search.query import FtsQuery, build
from cairn.search.ranking import Scale, Signals, relevance, score
from cairn.search.rereads import fold_rereads, shown
from cairn.search.semantic import PASSAGES, VectorMatch, cosines_of, vector_matches
from cairn.store.db import Database
from cairn.store.usage import record_use

if TYPE_CHECKING:
    from pathlib import Path

    from cairn.store.vectors import VectorIndex

log = logging.getLogger(__name__)

_TOKEN = "search"
# How far from its end a message's question mark may sit for the message to ask a question.
QUESTION_TAIL = 200
# Rows counted for the "still waiting for vectors" notice, at most.
PENDING_CAP = 10_001


async def search(
    db: Database,
    vectors: VectorIndex | None,
    settings: Settings,
    request: SearchRequest,
    *,
    record_usage: bool = True,
    evidence: bool = True,
    without_vectors: str | None = None,
) -> SearchPage:
    """One page of results for `request` (or for the search its `continuation` token continues).

    `evidence=False` searches ideas without their messages (`with_evidence`): half the work of a
    kind=ideas query, for recall, which must answer within its hook's deadline. `without_vectors`
    says why `vectors` is None, in the notice of a search whose keyword matches were not decisive
    (with decisive ones the answer is the one vectors would have given)."""
    started = time.perf_counter()
    base, snapshot, seen = _resume(request, settings.home)
    notices: list[str] = []
    dates = dates_in(base.query) if settings.search_date_weight > 0 else QueryDates((), base.query)
    query = build(dates.rest) or build(base.query)
    if query is None:
        return _empty(base, ["the query has no words to search for; say what to look for"], started)
    filters = await _filters(db, base, snapshot, notices)
    wanted = filters.kinds(KIND_OF_FILTER[base.kind])
    kinds = with_evidence(wanted) if evidence else wanted

    use_vectors = base.mode != "keyword"
    unavailable: str | None = None  # why vectors took no part though the mode asked for them
    embedding = _start_embedding(vectors, base.query) if use_vectors else None
    # The vector queries do not depend on the keyword matches: they run alongside them, and their
    # answer is dropped unused when the keyword matches turn out decisive.
    nearest = _start_vector_matches(db, vectors, embedding, kinds, filters, settings)
    use_keywords = base.mode != "semantic"

    signals: dict[tuple[Kind, int], Signals] = {}
    if use_keywords or not use_vectors or vectors is None:
        try:
            await _add_keyword_signals(db, kinds, query, filters, settings, signals)
        except BaseException:
            for task in (nearest, embedding):
                if task is not None:
                    _drop(task)
            raise
        use_keywords = True

    vector_skipped = False
    if use_vectors and base.mode == "hybrid" and _decisive(signals, settings):
        use_vectors, vector_skipped = False, True
        notices.append("keyword matches were decisive; vector search skipped")
    if use_vectors and vectors is None:
        use_vectors = False
        unavailable = without_vectors or "semantic search is not available here; keyword matches only"
        notices.append(unavailable)
    if not use_vectors:
        for task in (nearest, embedding):
            if task is not None:
                _drop(task)
    if use_vectors and nearest is not None and vectors is not None:
        unavailable = await _add_vector_signals(nearest, vectors, kinds, signals)
        if unavailable is not None:
            notices.append(unavailable)
            if not use_keywords:
                use_keywords = True
                await _add_keyword_signals(db, kinds, query, filters, settings, signals)
            use_vectors = False

    vector = (await embedding)[0] if use_vectors and embedding is not None else None
    # Independent look-ups, at once: pending vectors, the date window's items, learned associations,
    # and the answers of the questions drawn (`cairn.search.folding.fold_answered`).
    _, dated, boosts, answers = await asyncio.gather(
        _note_pending_vectors(db, wanted, notices) if use_vectors or vector_skipped else _nothing(),
        _dated(db, kinds, dates, filters, settings) if use_vectors and dates.windows else _nothing(),
        _idea_lifts(db, vectors, settings, base, filters, vector) if "idea" in kinds else _nothing(),
        answers_of(db, [row_id for (k, row_id) in signals if k == "idea"]),
    )
    for key in [*(dated or ()), *(answer for answer in answers if answer[0] in kinds)]:
        signals.setdefault(key, Signals())
    lifts: dict[int, AssociationBoost] = boosts or {}
    if vector is not None:
        for idea in lifts:
            signals.setdefault(("idea", idea), Signals())
    # Every candidate is known now: its stored vector, its row and its turn are read at once.
    message_ids = [row_id for (k, row_id) in signals if k == "message"]
    loaded = await asyncio.gather(
        _fill_cosines(vectors, vector, signals) if vector is not None else _nothing(),
        turns_of(db, message_ids) if settings.search_exchange_weight > 0 else _nothing(),
        *(load(db, kind, [row_id for (k, row_id) in signals if k == kind], filters) for kind in kinds),
    )
    _, turns, *per_kind = loaded
    items = dict(zip(kinds, per_kind, strict=True))
    ranked = _rank(kinds, items, signals, settings, base, use_keywords, use_vectors, lifts, dates, turns)
    ranked = await fold_rereads(db, query, [r for r in ranked if r.item.kind in wanted])
    return await _page(
        db,
        base,
        query,
        ranked,
        filters,
        seen,
        notices,
        vector_skipped,
        unavailable,
        started,
        record_usage,
        settings.home,
    )


def with_evidence(kinds: tuple[Kind, ...]) -> tuple[Kind, ...]:
    """The kinds to search for `kinds`: with ideas wanted, messages too, as their evidence.

    An idea is a sentence distilled from a message, and the message holds what the sentence leaves
    out — the question it answers, the names and numbers around it. kind=all already lets an idea
    take its message's place when the message ranks better (`fold_messages`); searching ideas alone
    threw that evidence away, so kind=ideas ranked below semantic search of the same ideas. The
    messages searched only as evidence are not returned.
    """
    if "idea" in kinds and "message" not in kinds:
        return (*kinds, "message")
    return kinds


def _resume(request: SearchRequest, home: Path) -> tuple[SearchRequest, dict[str, int] | None, list[str]]:
    """The request a continuation token carries (with this call's limit), its snapshot and seen ids."""
    if not request.continuation:
        return request, None, []
    payload = decode_token(_TOKEN, request.continuation, home)
    try:
        base = SearchRequest.model_validate({**payload["request"], "limit": request.limit})
        snapshot = {str(k): int(v) for k, v in payload["snapshot"].items()}
        seen = [str(s) for s in payload["seen"]]
    except (KeyError, TypeError, ValueError, ValidationError, AttributeError) as exc:
        raise BadContinuationError(
            "the continuation token is damaged or from another cairn version; repeat the search without it"
        ) from exc
    return base, snapshot, seen


async def _filters(
    db: Database, request: SearchRequest, snapshot: dict[str, int] | None, notices: list[str]
) -> Filters:
    project_ids: tuple[int, ...] | None = None
    project_paths: tuple[str, ...] = ()
    if request.project:
        found = await resolve_projects(db, request.project)
        project_ids = tuple(pid for pid, _ in found)
        project_paths = tuple(path for _, path in found)
        if not found:
            notices.append(f"no stored project matches {request.project!r}; {UNKNOWN_HINT}")
    if snapshot is None:
        row = await db.fetchone(
            "SELECT (SELECT max(id) FROM ideas) AS idea, (SELECT max(id) FROM topic_spans) AS span, "
            "(SELECT max(id) FROM messages) AS message"
        )
        snapshot = {kind: int(row[kind] or 0) for kind in ("idea", "span", "message")} if row else {}
    return Filters(
        project_ids=project_ids,
        project_paths=project_paths,
        session=request.session,
        intents=tuple(request.intents),
        origins=tuple(request.origins),
        since=iso_utc(request.since) if request.since else None,
        until=iso_utc(request.until) if request.until else None,
        include_superseded=request.include_superseded,
        snapshot=snapshot,
    )


def _start_embedding(vectors: VectorIndex | None, text: str) -> asyncio.Task[list[list[float]]] | None:
    """Embed the query in a thread while the keyword queries run (it is the slowest step)."""
    if vectors is None:
        return None
    return asyncio.ensure_future(asyncio.to_thread(vectors.embed, [text]))


def _start_vector_matches(
    db: Database,
    vectors: VectorIndex | None,
    embedding: asyncio.Task[list[list[float]]] | None,
    kinds: tuple[Kind, ...],
    filters: Filters,
    settings: Settings,
) -> asyncio.Task[list[list[VectorMatch]]] | None:
    """Each kind's vector ranking, started now: once the query's embedding is there, the kinds'
    queries run at once, in threads, while the keyword queries hold the database's readers."""
    if vectors is None or embedding is None:
        return None

    async def nearest() -> list[list[VectorMatch]]:
        vector = (await embedding)[0]
        n = settings.search_candidates
        return list(
            await asyncio.gather(
                *(vector_matches(db, vectors, kind, vector, filters, n, settings) for kind in kinds)
            )
        )

    return asyncio.ensure_future(nearest())


def _drop(task: asyncio.Future[object]) -> None:
    """Cancel a task whose answer is no longer wanted, and let its failure, if any, go unreported:
    a vector query that fails after a decisive keyword match changes nothing."""
    task.cancel()
    task.add_done_callback(lambda done: done.cancelled() or done.exception())


async def _nothing() -> None:
    return None


def tied_ranks(keys: list[tuple[float, ...]]) -> list[int]:
    """1-based ranks of an ordered list where equal keys share a rank: identical matches (the same
    sentence said in two sessions) must not be told apart by which row id came first, or the rank
    bonus would outweigh what should decide between them (recency, importance)."""
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        ranks.append(ranks[-1] if ranks and keys[position - 2] == key else position)
    return ranks


async def _add_keyword_signals(
    db: Database,
    kinds: tuple[Kind, ...],
    query: FtsQuery,
    filters: Filters,
    settings: Settings,
    signals: dict[tuple[Kind, int], Signals],
) -> None:
    # The kinds' queries run at once, on the database's two readers; merged in `kinds` order as before.
    found = await asyncio.gather(
        *(
            keyword_hits(
                db,
                kind,
                query,
                filters,
                settings.search_candidates,
                settings.search_term_window,
                settings.search_tool_call_weight,
            )
            for kind in kinds
        )
    )
    for kind, hits in zip(kinds, found, strict=True):
        for rank, hit in zip(tied_ranks([(h.strength, h.bm25) for h in hits]), hits, strict=True):
            signals[(kind, hit.row_id)] = Signals(
                keyword_rank=rank, keyword=hit.strength, bm25=hit.bm25, passage_id=hit.passage_id
            )


def _decisive(signals: dict[tuple[Kind, int], Signals], settings: Settings) -> bool:
    strengths = sorted((s.keyword or 0.0 for s in signals.values()), reverse=True)
    if not strengths:
        return False
    second = strengths[1] if len(strengths) > 1 else 0.0
    top = strengths[0]
    return top >= settings.search_decisive_top and top - second >= settings.search_decisive_gap


async def _add_vector_signals(
    nearest: asyncio.Task[list[list[VectorMatch]]],
    vectors: VectorIndex,
    kinds: tuple[Kind, ...],
    signals: dict[tuple[Kind, int], Signals],
) -> str | None:
    """Merge each kind's vector ranking (`_start_vector_matches`) into `signals`; when the vector
    index failed, none of it and the one line saying so (`_vector_failure_notice`)."""
    try:
        found = await nearest
        for kind, matches in zip(kinds, found, strict=True):
            ranks = tied_ranks([(round(m.cosine, 6),) for m in matches])
            for rank, match in zip(ranks, matches, strict=True):
                entry = signals.setdefault((kind, match.row_id), Signals())
                entry.vector_rank, entry.cosine = rank, match.cosine
                entry.passage_id = entry.passage_id or match.passage_id  # words beat meaning for a snippet
    except Exception as exc:
        for entry in signals.values():
            entry.vector_rank = entry.cosine = None
        return _vector_failure_notice(exc, vectors)
    return None


def _vector_failure_notice(exc: Exception, vectors: VectorIndex) -> str:
    """The one line that says vector search failed and the answer holds keyword matches only.

    A vector store that cannot be used is said with what to do, and logged without its traceback:
    with no handler (the CLI) a logged warning reaches the user as a traceback on stderr, and the
    store's failure is no bug of cairn's. That is a Chroma server that does not answer, and an error
    of Chroma's own (`ChromaError`): a damaged local store ("file is not a database") printed a
    traceback above the keyword answer. `cairn doctor` tells that case's fix (rebuild or move the
    directory aside). Anything else is a bug, logged whole."""
    from chromadb.errors import ChromaError

    from cairn.store.vectors import VectorStoreError, VectorStoreUnavailable

    if not isinstance(exc, VectorStoreError | ChromaError):
        log.warning("vector search failed; answering from keyword matches", exc_info=True)
        return f"semantic search failed ({type(exc).__name__}: {exc}); keyword matches only"
    log.info("vector search failed, answering from keyword matches: %s", exc)
    if isinstance(exc, VectorStoreUnavailable):
        return (
            f"semantic search is unavailable, keyword matches only: {exc} (start the Chroma server, or unset "
            "chroma_url to use the local store)"
        )
    if isinstance(exc, ChromaError):
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        return (
            f"semantic search is unavailable, keyword matches only: the vector store at {vectors.location} "
            f"cannot be used ({detail}); `cairn doctor` says what to do"
        )
    return f"semantic search failed ({exc}); keyword matches only"


async def _note_pending_vectors(db: Database, kinds: tuple[Kind, ...], notices: list[str]) -> None:
    """Say so when rows of the searched kinds still wait for their vectors (a backfill or a busy daemon
    embeds after capture): keyword matches already cover them, semantic matches only once embedded.
    Counting stops at `PENDING_CAP` rows, so a large backlog costs no more than a small one."""
    collections = [TABLES[kind].vectors for kind in kinds]
    if "message" in kinds:
        collections.append(PASSAGES)
    marks = ", ".join("?" * len(collections))
    waiting = int(
        await db.scalar(
            "SELECT count(*) FROM (SELECT 1 FROM vector_outbox "
            f"WHERE op = 'upsert' AND kind IN ({marks}) LIMIT {PENDING_CAP})",
            tuple(collections),
        )
        or 0
    )
    if waiting:
        count = f"over {PENDING_CAP - 1:,}" if waiting >= PENDING_CAP else f"{waiting:,}"
        notices.append(
            f"{count} items are still waiting for their vectors: keyword matches cover them, "
            "semantic matches follow as they are embedded (`cairn stats`: pending vectors)"
        )


async def _dated(
    db: Database,
    kinds: tuple[Kind, ...],
    dates: QueryDates,
    filters: Filters,
    settings: Settings,
) -> list[tuple[Kind, int]]:
    """Items said within a date the query names are candidates even when neither ranking drew them
    (a window of at most `search_candidates` items a kind): their cosine then scores them. The kinds'
    windows are read at once; the keys come back in `kinds` order."""
    windows = await asyncio.gather(
        *(in_window(db, kind, dates, filters, settings.search_candidates) for kind in kinds)
    )
    return [(kind, row_id) for kind, ids in zip(kinds, windows, strict=True) for row_id in ids]


async def _idea_lifts(
    db: Database,
    vectors: VectorIndex | None,
    settings: Settings,
    request: SearchRequest,
    filters: Filters,
    vector: list[float] | None,
) -> dict[int, AssociationBoost]:
    """Ideas linked to files learned associations point at (idea id -> strongest). With the query's
    embedding the caller adds them to the candidates when no ranking drew them: their cosine to the
    query then scores them like the rest.

    Without the query's embedding (keyword mode, a decisive keyword match, no vectors) only the same
    query applies and only ideas already drawn are lifted: no idea's similarity is known to rank it by.
    """
    boosts = await associations_for(
        db, vectors, settings, text=request.query, embedding=vector, project_ids=filters.project_ids
    )
    return await boosted_ideas(db, boosts)


async def _fill_cosines(
    vectors: VectorIndex | None, vector: list[float], signals: dict[tuple[Kind, int], Signals]
) -> None:
    """Give every candidate the vector query did not draw its cosine, from its stored vector, so a
    keyword match is weighed by its meaning too. The kinds' vectors are read at once, as matrices. A
    failure leaves them without (keywords still count)."""
    if vectors is None:
        return
    missing: dict[Kind, list[int]] = {}
    for (kind, row_id), entry in signals.items():
        if entry.cosine is None:
            missing.setdefault(kind, []).append(row_id)
    found = await asyncio.gather(
        *(
            asyncio.to_thread(vectors.get_matrix, TABLES[kind].vectors, [str(i) for i in ids])
            for kind, ids in missing.items()
        ),
        return_exceptions=True,
    )
    for (kind, ids), stored in zip(missing.items(), found, strict=True):
        if isinstance(stored, Exception):
            log.warning("could not read the vectors of %d %s candidates", len(ids), kind, exc_info=stored)
            continue
        if isinstance(stored, BaseException):
            raise stored
        for record_id, cosine in cosines_of(vector, *stored).items():
            signals[(kind, int(record_id))].cosine = cosine


def _rank(
    kinds: tuple[Kind, ...],
    loaded: dict[Kind, dict[int, Item]],
    signals: dict[tuple[Kind, int], Signals],
    settings: Settings,
    request: SearchRequest,
    keyword_used: bool,
    vector_used: bool,
    lifts: dict[int, AssociationBoost],
    dates: QueryDates,
    turns: dict[int, Turn] | None = None,
) -> list[Ranked]:
    """Every candidate that passes the filters and `min_score`, best first; an item said within a
    date the query names gains `search_date_weight` of relevance, an idea a learned association lifts
    gets relevance x (1 + its weight), a turn's closing reply a share of its turn's best (`turns`,
    `_with_exchange`), and messages are folded into their ideas, copies of one text into one result
    and answered questions onto their answers (`cairn.search.folding`), before `min_score` applies.
    `loaded` holds the candidates of each kind that pass the filters (`load`)."""
    now = datetime.now(UTC)
    minimum = settings.search_min_score if request.min_score is None else request.min_score
    ranked: list[Ranked] = []
    # What answers a candidate question (`Item.answer`): a candidate even when it matches nothing itself.
    answering = {item.answer for item in loaded.get("idea", {}).values() if item.answer is not None}
    answers_only: set[tuple[Kind, int]] = set()  # candidates only as a candidate question's answer
    for kind in kinds:
        ids = [row_id for (k, row_id) in signals if k == kind]
        scale = Scale.of([signals[(kind, row_id)] for row_id in ids], settings)
        items = loaded[kind]
        relevances = {
            row_id: relevance(
                signals[(kind, row_id)], scale, settings, keyword_used=keyword_used, vector_used=vector_used
            )
            for row_id in items
        }
        alone = relevances
        if kind == "message" and (settings.search_context_weight > 0 or settings.search_answer_weight > 0):
            relevances = _with_context(items, relevances, settings)
        if kind == "message" and turns is not None:
            relevances = _with_exchange(items, alone, relevances, turns, settings)
        if dates.windows and settings.search_date_weight > 0:
            relevances = {
                row_id: (own + settings.search_date_weight, vector)
                if own > 0 and dates.holds(items[row_id].said_at)
                else (own, vector)
                for row_id, (own, vector) in relevances.items()
            }
        for row_id, item in items.items():
            entry = signals[(kind, row_id)]
            parts_in = relevances[row_id]
            if parts_in[0] <= 0 and (kind != "idea" or row_id not in lifts):
                if (kind, row_id) not in answering:
                    continue
                answers_only.add((kind, row_id))
            final, parts = score(item, entry, parts_in, settings, now)
            lift = lifts.get(row_id) if kind == "idea" else None
            if lift is not None:
                final *= 1 + lift.weight
                parts.learned = round(lift.weight, 4)
            ranked.append(Ranked(item, entry, final, parts, lift))
    folded = fold_answered(fold_repeats(fold_messages(ranked)))

    # An answer whose question did not rank has nothing to stand for.
    def stands_for_nothing(r: Ranked) -> bool:
        return r.final <= 0 and (r.item.kind, r.item.row_id) in answers_only

    return [r for r in folded if r.score >= minimum and not stands_for_nothing(r)]


def _with_context(
    items: dict[int, Item], relevances: dict[int, tuple[float, float]], settings: Settings
) -> dict[int, tuple[float, float]]:
    """Each message's relevance plus `search_context_weight` x the best relevance among the candidate
    text messages (not tool output) within `search_context_lines` lines of it in the same file, plus
    `search_answer_weight` x the best relevance of such a message *before* it that asks a question.

    An answer sits in a conversation about the question: the turn before asks it, the turn after
    builds on it, and either may hold the words the answer itself leaves out ("When did she apply?"
    answered by "I did it last week" under a turn about the application). Tool output gives no
    context: a long listing next to a message matches many words by chance. A turn that asks what
    the query asks matches it best of all — "Have you done events for any other causes?" for "What
    causes has John done events for?" — but the answer is the turn after it, which the question's
    relevance lifts further than any other neighbour's (`asks_question`).
    """
    weight, reach = settings.search_context_weight, settings.search_context_lines
    by_line: dict[tuple[int, int], float] = {}
    asking: dict[tuple[int, int], float] = {}
    for row_id, item in items.items():
        if item.source_key is not None and item.boost_key == "message":
            by_line[item.source_key] = relevances[row_id][0]
            if asks_question(item.content):
                asking[item.source_key] = relevances[row_id][0]
    with_context = {}
    for row_id, (own, vector) in relevances.items():
        key = items[row_id].source_key
        best = asked = 0.0
        if key is not None:
            file_id, line = key
            best = max(by_line.get((file_id, line + step), 0.0) for step in range(-reach, reach + 1) if step)
            asked = max(asking.get((file_id, line - step), 0.0) for step in range(1, reach + 1))
        with_context[row_id] = (own + weight * best + settings.search_answer_weight * asked, vector)
    return with_context


def _with_exchange(
    items: dict[int, Item],
    own: dict[int, tuple[float, float]],
    relevances: dict[int, tuple[float, float]],
    turns: dict[int, Turn],
    settings: Settings,
) -> dict[int, tuple[float, float]]:
    """The reply that closes a turn gains `search_exchange_weight` x the best own relevance among the
    candidate messages of its turn (`cairn.search.exchanges`) further than `search_context_lines`
    lines from it.

    A turn of a coding session is a question and what was done about it, and its closing reply says
    what came of it: a hit on the person's prompt or on a test run's output points at the reply that
    answered or reported it ("Where did we leave the sound-variety work?" matched the session's tool
    output; the answer is the reply after it). Unlike `_with_context` this counts tool output: the
    reply is where its meaning was said. Candidates within `search_context_lines` lines already lend
    their context, and lend nothing twice: so a conversation, whose turns are a prompt and a reply
    next to each other (LoCoMo), ranks as before.
    """
    weight, reach = settings.search_exchange_weight, settings.search_context_lines
    members: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for row_id, item in items.items():
        if row_id in turns and item.source_key is not None:
            members.setdefault(turns[row_id].key, []).append((item.source_key[1], own[row_id][0]))
    lifted = dict(relevances)
    for row_id, item in items.items():
        turn = turns.get(row_id)
        if turn is None or turn.closing_reply != row_id or item.source_key is None:
            continue
        line = item.source_key[1]
        best = max((value for at, value in members[turn.key] if abs(at - line) > reach), default=0.0)
        value, vector = relevances[row_id]
        lifted[row_id] = (value + weight * best, vector)
    return lifted


def asks_question(text: str) -> bool:
    """Whether a message asks something: a question mark within its last `QUESTION_TAIL` characters
    (a turn may open with a statement and end on its question; one quoted early in a long answer
    does not make it a question)."""
    return "?" in text[-QUESTION_TAIL:]


async def _page(
    db: Database,
    request: SearchRequest,
    query: FtsQuery,
    ranked: list[Ranked],
    filters: Filters,
    seen: list[str],
    notices: list[str],
    vector_skipped: bool,
    unavailable: str | None,
    started: float,
    record_usage: bool,
    home: Path,
) -> SearchPage:
    already = set(seen)
    remaining = [r for r in ranked if r.item.id not in already]
    page = remaining[: request.limit]
    next_token = None
    if len(remaining) > len(page):
        returned = seen + [r.item.id for r in page]
        if len(returned) <= MAX_SEEN:
            next_token = encode_token(
                _TOKEN,
                {
                    "request": request.model_dump(mode="json", exclude={"continuation", "limit"}),
                    "snapshot": filters.snapshot,
                    "seen": returned,
                },
                home,
            )
        else:
            notices.append(f"more than {MAX_SEEN} results paged through; narrow the search to see the rest")
    passages, exchanges, _, _ = await asyncio.gather(
        passage_texts(db, [r.signals.passage_id for r in page if r.signals.passage_id]),
        exchanges_of(db, [r.item.source_key for r in page if r.item.kind != "span" and r.item.source_key]),
        count_repeats(db, page, filters),
        complete(db, [r.item for r in page]),
    )
    results = _results(query, page, passages, exchanges)
    if record_usage:
        await reinforce(db, [r.item.row_id for r in page if r.item.kind == "idea"])
        await reinforce_associations(db, [r.lift.association_id for r in page if r.lift is not None])
    return SearchPage(
        query=request.query,
        mode=request.mode,
        results=results,
        total=len(ranked),
        next_token=next_token,
        vector_skipped=vector_skipped,
        vectors_unavailable=unavailable,
        notices=notices,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _results(
    query: FtsQuery,
    page: list[Ranked],
    passages: dict[int, str],
    exchanges: dict[tuple[int, int], Exchange],
) -> list[SearchResult]:
    """The page as results, each read as a person reads it (`cairn.search.rereads.shown`)."""
    results = []
    for r in page:
        item = r.item
        row = item.row
        snippet, preview = shown(query, r, passages)
        results.append(
            SearchResult(
                id=item.id,
                kind=item.kind,
                intent=item.intent,
                content=item.content,
                preview=preview,
                score=round(r.score, 4),
                scores=r.parts,
                match=r.signals.match_type,
                snippet=snippet.text,
                highlights=snippet.highlights,
                said_at=item.said_at,
                session=item.session,
                superseded=item.superseded_by is not None,
                superseded_by=item.superseded_by,
                answered_at=item.row.get("answered_at"),
                completed_at=item.row.get("completed_at"),
                declined_at=item.row.get("declined_at"),
                related=item.related,
                origin=item.origin,
                call=item.call,
                failed=bool(row.get("failed")),
                source=item.source,
                learned_from=r.lift.query if r.lift is not None else None,
                repeats=r.repeats,
                last_said_at=r.last_said_at,
                exchange=exchanges.get(item.source_key) if item.kind != "span" and item.source_key else None,
            )
        )
    return results


async def reinforce(db: Database, idea_ids: Iterable[int]) -> None:
    """Reinforcement on recall: ideas returned to a caller (or injected into a session) count one more
    use. A store that cannot be written still answers."""
    await record_use(db, "ideas", idea_ids)


def _empty(request: SearchRequest, notices: list[str], started: float) -> SearchPage:
    return SearchPage(
        query=request.query,
        mode=request.mode,
        results=[],
        total=0,
        notices=notices,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )
