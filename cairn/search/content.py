"""`search_content`: find passages by meaning and by exact terms, with their full text in the answer.

This is retrieval, not discovery: the caller (a coding agent) already knows roughly what it looks for
and wants the passages themselves, ranked flat across every document, in one round trip. Two signals,
combined multiplicatively (a passage must match on both to rank high):

- **semantic**: cosine similarity between the caller's `semantic_concepts` (embedded as one text) and
  each chunk, calibrated to [0, 1] with `search_vector_floor`/`search_vector_ceiling` because raw
  MiniLM cosine of a good match is only about 0.5-0.7;
- **exact**: every distinct `exact_terms` entry found in a chunk multiplies its score by
  `content_exact_boost`. Identifiers embed poorly, so this is what makes `useState` findable. A product
  (not a sum) keeps a poor semantic match from being rescued by a term that merely occurs in it.

With exact terms only, the search is grep-like: only chunks containing a term are results, and a chunk
with all n terms scores 1.0 (base `boost ** -n`), each missing term dividing that by the boost.

Chunks come from *sources*: the project files the agent touched, chunked by the file index (document:
the file's absolute path), and transcript messages, one chunk each (document: the transcript file).
A source says where its rows, FTS table and vectors are, so the ranking never asks which one it
reads. When Chroma cannot answer, concepts fall back to their words in FTS (the share of concept
words a chunk contains stands in for the semantic score) and the answer says so.

**Learned associations** (`cairn.learning.boost`): when an earlier search close to this one came back
weak and the agent then found what it wanted by reading a file, that file's chunks are lifted by the
weight w of the strongest such association, before `min_score` applies, to the larger of
`score + (1 - score) x w` and `score x (1 + w)`. The first is the association's own evidence: the
search failed because the file's text is far from the query, so a learned file must rise toward 1
however low its similarity. The second treats the association like an exact term (which multiplies),
so a file that also matches well ranks above passages that merely say the same words — the user's
own question, quoted back, would otherwise tie with it at 1. Lifted chunks are candidates even when
neither FTS nor the nearest vectors drew them (their semantic score then comes from their stored
vectors), and a file's own chunks keep their order. Exact-terms-only searches stay grep-like: only
chunks containing a term are lifted. The results say which association lifted them (`learned_from`),
and a caller that receives them counts a hit for it (`record_usage`).

Paging is stateless: the token carries the request, a snapshot (each source's highest row id at the
first page, so rows written meanwhile neither appear nor shift pages) and the offset. A caller with a
context to keep (the MCP tool) passes `max_chars`: the page then ends where its passages fill that many
characters (`content_budget`), and the next page starts there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cairn.config import Settings
from cairn.learning.boost import AssociationBoost, associations_for, boosted_documents, reinforce
from cairn.search import query as fts
from cairn.search.content_budget import fit_passages
from cairn.search.content_models import (
    NO_SIGNAL,
    ChunkResult,
    ContentRequest,
    ContentResponse,
    ContentStatistics,
    Continuation,
    NavigationHints,
)
from cairn.search.content_sources import FILES, MESSAGES, SOURCES, ContentSource, Filters
from cairn.search.errors import BadContinuationError, SearchError
from cairn.search.paging import decode_token, encode_token
from cairn.search.projects import UNKNOWN_HINT, resolve_projects
from cairn.search.semantic import calibrate, cosines
from cairn.search.terms import ExactTerm, compile_term, is_code_shaped
from cairn.store.db import Database
from cairn.transcripts.redact import redact

if TYPE_CHECKING:
    from pathlib import Path

    from cairn.store.vectors import VectorIndex

# The request/response models, sources and term matching live in their own modules; importers that
# know them as part of `search_content` keep finding them here.
__all__ = [
    "FILES",
    "MESSAGES",
    "SOURCES",
    "ChunkResult",
    "ContentRequest",
    "ContentResponse",
    "ContentSource",
    "ContentStatistics",
    "Continuation",
    "ExactTerm",
    "Filters",
    "NavigationHints",
    "compile_term",
    "is_code_shaped",
    "search_content",
]

log = logging.getLogger(__name__)

TOKEN_KIND = "search_content"
#: Nearest vectors drawn per source; enough that the default min_score never runs out of candidates.
VECTOR_CANDIDATES = 200
#: FTS rows drawn per exact term or concept word. Porter stemming over-matches, and the exact check
#: in Python then drops the extras, so this is generous.
FTS_CANDIDATES = 2_000
MAX_KEYWORDS = 7
MAX_RELATED = 5
#: Scores at or above this count as strong when choosing navigation hints.
STRONG_SCORE = 0.75
#: Learned associations named in the search interpretation; the rest are counted.
MAX_NAMED_ASSOCIATIONS = 3


# The search


@dataclass(frozen=True)
class _Plan:
    """What this page searches: the request as first given, plus where paging stands."""

    concepts: list[str]
    terms: list[str]
    min_score: float
    project: str | None
    session: str | None
    snapshot: dict[str, int]
    offset: int
    total: int | None

    def token(self, offset: int, total: int, home: Path) -> str:
        """The signed token for the page starting at `offset` (`home` holds the signing key)."""
        return encode_token(
            TOKEN_KIND,
            {
                "concepts": self.concepts,
                "terms": self.terms,
                "min_score": self.min_score,
                "project": self.project,
                "session": self.session,
                "snapshot": self.snapshot,
                "offset": offset,
                "total": total,
            },
            home,
        )


@dataclass
class _Row:
    source: int
    id: int
    document_id: str
    content: str
    chunk_index: int
    keyword_key: Any
    start_line: int | None = None
    end_line: int | None = None
    score: float = 0.0
    lift: AssociationBoost | None = None


@dataclass
class _Ranking:
    """Every result, best first; why vectors were not used (None if they were); what lifted results."""

    rows: list[_Row]
    degraded: str | None
    lifted: dict[int, AssociationBoost]


async def search_content(
    db: Database,
    vectors: VectorIndex | None,
    settings: Settings,
    request: ContentRequest,
    *,
    record_usage: bool = True,
) -> ContentResponse:
    """One page of chunks matching `request`, best first, with paging state and hints for what next.

    `record_usage`: the page reaches a caller, so the learned associations that lifted a result on it
    count a hit (and their decay restarts), as `search` counts the ideas it returns.
    """
    plan = await _plan(db, settings, request)
    if not (plan.concepts or plan.terms):
        raise SearchError(NO_SIGNAL)
    filters = await _filters(db, plan.project, plan.session)
    terms = [compile_term(term) for term in plan.terms]
    ranking = await _rank(db, vectors, settings, plan, filters, terms)
    ranked, degraded = ranking.rows, ranking.degraded

    total = plan.total if plan.total is not None else len(ranked)
    page = ranked[plan.offset : plan.offset + request.limit]
    keywords = await _keywords(db, page)
    results = [
        ChunkResult(
            chunk_id=f"{SOURCES[row.source].prefix}{row.id}",
            document_id=row.document_id,
            content=row.content,
            relevance_score=round(min(1.0, max(0.0, row.score)), 4),
            chunk_index=row.chunk_index,
            document_keywords=keywords.get((row.source, row.keyword_key), []),
            start_line=row.start_line,
            end_line=row.end_line,
            learned_from=row.lift.query if row.lift is not None else None,
        )
        for row in page
    ]
    if request.max_chars is not None:
        results = fit_passages(results, request.max_chars)
        page = page[: len(results)]
    end = plan.offset + len(page)
    has_more = end < len(ranked)
    if record_usage:
        await reinforce(db, [row.lift.association_id for row in page if row.lift is not None])
    avg = round(sum(r.relevance_score for r in results) / len(results), 4) if results else 0.0
    return ContentResponse(
        results=results,
        statistics=ContentStatistics(
            total_results=total,
            files_covered=list(dict.fromkeys(r.document_id for r in results)),
            avg_relevance=avg,
            search_interpretation=_interpretation(settings, plan, terms, degraded, ranking.lifted),
        ),
        continuation=Continuation(
            has_more=has_more, next_token=plan.token(end, total, settings.home) if has_more else None
        ),
        navigation_hints=_hints(plan, results, total, has_more, request.limit, len(ranked) - end),
    )


async def _plan(db: Database, settings: Settings, request: ContentRequest) -> _Plan:
    if request.continuation_token is None:
        snapshot = {
            source.name: int(await db.scalar(f"SELECT coalesce(max(id), 0) FROM {source.table}"))
            for source in SOURCES
        }
        min_score = settings.content_min_score if request.min_score is None else request.min_score
        return _Plan(
            concepts=request.semantic_concepts,
            terms=request.exact_terms,
            min_score=min_score,
            project=request.project,
            session=request.session,
            snapshot=snapshot,
            offset=0,
            total=None,
        )
    data = decode_token(TOKEN_KIND, request.continuation_token, settings.home)
    try:
        plan = _Plan(
            concepts=_strings(data["concepts"]),
            terms=_strings(data["terms"]),
            min_score=float(data["min_score"]),
            project=_optional_string(data["project"]),
            session=_optional_string(data["session"]),
            snapshot={str(k): int(v) for k, v in dict(data["snapshot"]).items()},
            offset=int(data["offset"]),
            total=int(data["total"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BadContinuationError(
            "the continuation token is damaged or was not issued by cairn; repeat the search without it"
        ) from exc
    if plan.offset < 0 or not 0 <= plan.min_score <= 1:
        raise BadContinuationError("the continuation token is damaged; repeat the search without it")
    return plan


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return value


def _optional_string(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("expected a string")
    return value


async def _filters(db: Database, project: str | None, session: str | None) -> Filters:
    ids: tuple[int, ...] | None = None
    paths: tuple[str, ...] | None = None
    if project is not None:
        found = await resolve_projects(db, project)
        if not found:
            raise SearchError(
                f"no project {project!r} is stored ({UNKNOWN_HINT}); "
                "or leave project out to search everywhere"
            )
        ids = tuple(pid for pid, _ in found)
        paths = tuple(path for _, path in found)
    session = session.strip() if session is not None else None
    if session and await db.scalar("SELECT 1 FROM sessions WHERE id = ?", (session,)) is None:
        raise SearchError(f"no session {session!r} is stored; leave session out to search all of them")
    return Filters(project_ids=ids, project_paths=paths, session=session or None)


async def _rank(
    db: Database,
    vectors: VectorIndex | None,
    settings: Settings,
    plan: _Plan,
    filters: Filters,
    terms: list[ExactTerm],
) -> _Ranking:
    """Every result of the search, best first, why vectors were not used, and what lifted results."""
    sources = [(index, source) for index, source in enumerate(SOURCES) if source.usable(filters)]
    scopes = {index: source.scope(filters, plan.snapshot.get(source.name, 0)) for index, source in sources}

    exact_ids: dict[int, set[int]] = {index: set() for index, _ in sources}
    for index, source in sources:
        for term in terms:
            exact_ids[index].update(await _term_ids(db, source, term, scopes[index]))

    embedding: list[float] | None = None
    degraded: str | None = None
    if plan.concepts:
        if vectors is None:
            degraded = "no vector index is open"
        else:
            try:
                embedding = (await asyncio.to_thread(vectors.embed, ["; ".join(plan.concepts)]))[0]
            except Exception as exc:
                log.warning("search_content: embedding failed, using keywords instead: %s", exc)
                degraded = f"vector search failed: {type(exc).__name__}"

    lifts, boosted_ids = await _lifts(db, vectors, settings, plan, filters, sources, scopes, embedding)
    wanted = {index: exact_ids[index] | boosted_ids.get(index, set()) for index, _ in sources}

    semantic: dict[tuple[int, int], float] = {}
    if embedding is not None and vectors is not None:
        try:
            semantic = await _semantic(db, vectors, settings, plan, filters, sources, embedding, wanted)
        except Exception as exc:
            log.warning("search_content: vector search failed, using keywords instead: %s", exc)
            degraded = f"vector search failed: {type(exc).__name__}"
    if plan.concepts and degraded is not None:
        semantic = await _word_coverage(db, plan.concepts, sources, scopes)

    candidates: dict[int, set[int]] = {index: set(exact_ids[index]) for index, _ in sources}
    if plan.concepts:
        for index, ids in boosted_ids.items():
            candidates[index] |= ids
    for index, row_id in semantic:
        candidates[index].add(row_id)

    boost = settings.content_exact_boost
    exact_only = not plan.concepts
    ranked: list[_Row] = []
    lifted: dict[int, AssociationBoost] = {}
    for index, source in sources:
        for row in await _hydrate(db, index, source, candidates[index], scopes[index]):
            matched = sum(1 for term in terms if term.pattern.search(row.content))
            if exact_only:
                if matched == 0:
                    continue
                row.score = boost ** (matched - len(terms))
            else:
                row.score = semantic.get((index, row.id), 0.0) * boost**matched
            lift = lifts.get(row.keyword_key) if source is FILES else None
            if lift is not None:
                row.score = max(row.score + (1.0 - row.score) * lift.weight, row.score * (1 + lift.weight))
                row.lift = lift
            if row.score > 0 and row.score >= plan.min_score:
                ranked.append(row)
                if row.lift is not None:
                    lifted[row.lift.association_id] = row.lift
    ranked.sort(key=lambda row: (-row.score, row.source, row.id))
    return _Ranking(ranked, degraded, lifted)


async def _lifts(
    db: Database,
    vectors: VectorIndex | None,
    settings: Settings,
    plan: _Plan,
    filters: Filters,
    sources: list[tuple[int, ContentSource]],
    scopes: dict[int, tuple[str, list[Any]]],
    embedding: list[float] | None,
) -> tuple[dict[Any, AssociationBoost], dict[int, set[int]]]:
    """The learned associations that apply (file document id -> strongest) and the chunks they reach.

    The search text is the concepts and terms joined as the learner records a `search_content` query,
    so repeating a search finds its association by key; closeness by meaning uses the concepts'
    embedding the search already made (a terms-only search has none: only the same query applies).
    """
    files = next((index for index, source in sources if source is FILES), None)
    if files is None or plan.snapshot.get(FILES.name, 0) == 0:
        return {}, {}
    boosts = await associations_for(
        db,
        vectors,
        settings,
        text="; ".join([*plan.concepts, *plan.terms]),
        embedding=embedding,
        project_ids=filters.project_ids,
    )
    documents = await boosted_documents(db, boosts)
    if not documents:
        return {}, {}
    where, params = scopes[files]
    rows = await db.fetchall(
        f"""
        SELECT t.id FROM {FILES.table} AS t {FILES.joins}
        WHERE t.document_id IN (SELECT value FROM json_each(?)) AND {where}
        """,
        (json.dumps(sorted(documents)), *params),
    )
    return dict(documents), {files: {int(row[0]) for row in rows}}


async def _term_ids(
    db: Database, source: ContentSource, term: ExactTerm, scope: tuple[str, list[Any]]
) -> list[int]:
    """Rows that may contain `term`: FTS for anything with a word in it, a plain scan for the rest
    (`->`, `*`: symbols FTS does not index). Python checks each candidate exactly afterwards."""
    where, params = scope
    if term.match is not None:
        sql = f"""
            SELECT t.id FROM {source.fts_table} JOIN {source.table} AS t ON t.id = {source.fts_table}.rowid
            {source.joins}
            WHERE {source.fts_table} MATCH ? AND {where}
            ORDER BY {source.fts_table}.rank LIMIT ?
        """
        rows = await db.fetchall(sql, (term.match, *params, FTS_CANDIDATES))
    else:
        sql = f"""
            SELECT t.id FROM {source.table} AS t {source.joins}
            WHERE instr({source.text_column}, ?) > 0 AND {where}
            ORDER BY t.id DESC LIMIT ?
        """
        rows = await db.fetchall(sql, (term.text, *params, FTS_CANDIDATES))
    return [int(row[0]) for row in rows]


async def _semantic(
    db: Database,
    vectors: VectorIndex,
    settings: Settings,
    plan: _Plan,
    filters: Filters,
    sources: list[tuple[int, ContentSource]],
    query: list[float],
    wanted: dict[int, set[int]],
) -> dict[tuple[int, int], float]:
    """Calibrated similarity of the concepts to the nearest chunks and to every `wanted` candidate
    (exact-term matches, chunks of boosted files) the nearest ones missed.

    The nearest-neighbour query asks for as many more vectors as rows were written since the
    snapshot: those are dropped afterwards, and without the extra they could push snapshot rows out
    of the top, changing the result set between pages. A source that had no rows at the first page
    has nothing in scope and is not asked at all.
    """
    scores: dict[tuple[int, int], float] = {}
    for index, source in sources:
        snapshot = plan.snapshot.get(source.name, 0)
        if snapshot == 0:
            continue
        newer = int(await db.scalar(f"SELECT count(*) FROM {source.table} WHERE id > ?", (snapshot,)))
        n = VECTOR_CANDIDATES + min(newer, FTS_CANDIDATES)
        hits = await asyncio.to_thread(
            vectors.query, source.vector_kind, n=n, where=source.vector_where(filters), embedding=query
        )
        for hit in hits:
            if hit.id.isdigit():
                scores[(index, int(hit.id))] = calibrate(hit.score, settings)
        missing = [str(row_id) for row_id in wanted.get(index, ()) if (index, row_id) not in scores]
        if missing:
            stored = await asyncio.to_thread(vectors.get_embeddings, source.vector_kind, missing)
            for record_id, cosine in cosines(query, stored).items():
                scores[(index, int(record_id))] = calibrate(cosine, settings)
    return scores


async def _word_coverage(
    db: Database,
    concepts: list[str],
    sources: list[tuple[int, ContentSource]],
    scopes: dict[int, tuple[str, list[Any]]],
) -> dict[tuple[int, int], float]:
    """Without vectors: the share of the concepts' key words each chunk contains, as its semantic score.

    Crude next to embeddings, but it keeps concept searches answering (and ranking) while Chroma is
    down, rather than failing or returning nothing.
    """
    built = fts.build(" ".join(concepts))
    if built is None:
        return {}
    hits: Counter[tuple[int, int]] = Counter()
    for index, source in sources:
        where, params = scopes[index]
        for term in built.terms:
            rows = await db.fetchall(
                f"""
                SELECT t.id FROM {source.fts_table}
                JOIN {source.table} AS t ON t.id = {source.fts_table}.rowid {source.joins}
                WHERE {source.fts_table} MATCH ? AND {where}
                ORDER BY {source.fts_table}.rank LIMIT ?
                """,
                (built.term_match(term), *params, FTS_CANDIDATES),
            )
            hits.update((index, int(row[0])) for row in rows)
    return {key: count / len(built.terms) for key, count in hits.items()}


async def _hydrate(
    db: Database, index: int, source: ContentSource, ids: set[int], scope: tuple[str, list[Any]]
) -> list[_Row]:
    """The candidates that really are results of this search (eligible, in scope, in the snapshot)."""
    if not ids:
        return []
    where, params = scope
    rows = await db.fetchall(
        f"""
        SELECT t.id AS id, {source.document_column} AS document_id, {source.text_column} AS content,
               {source.index_column} AS chunk_index, {source.keyword_column} AS keyword_key,
               {source.start_column} AS start_line, {source.end_column} AS end_line
        FROM {source.table} AS t {source.joins}
        WHERE t.id IN (SELECT value FROM json_each(?)) AND {where}
        """,
        (json.dumps(sorted(ids)), *params),
    )
    return [
        _Row(
            source=index,
            id=int(row["id"]),
            # A message's document is its transcript, whose directory Claude Code names after the cwd.
            document_id=redact(str(row["document_id"])),
            content=str(row["content"]),
            chunk_index=int(row["chunk_index"]),
            keyword_key=row["keyword_key"],
            start_line=row["start_line"],
            end_line=row["end_line"],
        )
        for row in rows
    ]


async def _keywords(db: Database, page: list[_Row]) -> dict[tuple[int, Any], list[str]]:
    """Each page row's document keywords, keyed by `(source, keyword_key)`."""
    found: dict[tuple[int, Any], list[str]] = {}
    for index, source in enumerate(SOURCES):
        keys = list(dict.fromkeys(row.keyword_key for row in page if row.source == index))
        keys = [key for key in keys if key is not None]
        if not keys:
            continue
        for row in await db.fetchall(source.keywords_sql, (json.dumps(keys),)):
            names = found.setdefault((index, row["key"]), [])
            if len(names) < MAX_KEYWORDS:
                names.append(str(row["name"]))
    return found


# Explanations


def _interpretation(
    settings: Settings,
    plan: _Plan,
    terms: list[ExactTerm],
    degraded: str | None,
    lifted: dict[int, AssociationBoost],
) -> str:
    boost = f"{settings.content_exact_boost:g}"
    parts: list[str] = []
    if plan.concepts:
        parts.append("Chunks close in meaning to: " + "; ".join(plan.concepts) + ".")
        if degraded is not None:
            parts.append(
                f"Semantic search was unavailable ({degraded}), so concepts were matched by their words "
                "instead: the score is the share of concept words a chunk contains."
            )
    if terms:
        described = ", ".join(
            f"{t.text} ({'case-sensitive' if t.case_sensitive else 'any case'})" for t in terms
        )
        if plan.concepts:
            parts.append(f"Exact terms, each found multiplying the score by {boost}: {described}.")
        elif len(terms) == 1:
            parts.append(f"Exact term only (grep-like): {described}; every chunk containing it scores 1.0.")
        else:
            parts.append(
                f"Exact terms only (grep-like): {described}. A chunk with all {len(terms)} scores 1.0, "
                f"each missing term divides that by {boost}."
            )
    if lifted:
        strongest = sorted(lifted.values(), key=lambda b: (-b.weight, b.association_id))
        named = "; ".join(
            f"{b.query!r} -> {b.rel_path or b.file_path} (weight {b.weight:.2f})"
            for b in strongest[:MAX_NAMED_ASSOCIATIONS]
        )
        more = len(strongest) - MAX_NAMED_ASSOCIATIONS
        parts.append(
            "Files the agent found after earlier weak searches like this one are lifted by "
            f"learned associations: {named}" + (f"; and {more} more." if more > 0 else ".")
        )
    if plan.project is not None:
        parts.append(f"Only project {plan.project}.")
    if plan.session is not None:
        parts.append(f"Only session {plan.session}; project files, which belong to no session, left out.")
    parts.append(f"Minimum score {plan.min_score:g}.")
    return " ".join(parts)


def _hints(
    plan: _Plan, results: list[ChunkResult], total: int, has_more: bool, limit: int, remaining: int
) -> NavigationHints:
    """Suggestions shaped by the outcome: read on when a few results are strong, narrow down when many
    are middling, broaden or switch tools when there is nothing."""
    actions: list[str] = []
    if not results:
        actions.append(
            f"Nothing scored at least {plan.min_score:g}: lower min_score (0.3 suits exact terms only) "
            "or try broader semantic_concepts"
        )
        if plan.terms:
            actions.append(
                "Check exact_terms: code-shaped terms (camelCase, snake_case, with digits or symbols) "
                "match case-sensitively and as whole identifiers"
            )
        actions.append("Use the `search` tool to look through remembered decisions, ideas and topics")
    else:
        top = results[0]
        avg = sum(r.relevance_score for r in results) / len(results)
        if total <= 3 or top.relevance_score >= STRONG_SCORE:
            if top.start_line is not None:
                actions.append(f"Open the file {top.document_id} at lines {top.start_line}-{top.end_line}")
            else:
                actions.append(f"Read the surrounding conversation: show(id='{top.chunk_id}')")
                actions.append(f"Open the document {top.document_id} around line {top.chunk_index}")
        if total > limit or avg < STRONG_SCORE:
            if not plan.terms:
                actions.append("Add exact_terms (identifiers, file names, versions) to narrow results")
            else:
                actions.append("Raise min_score or add semantic_concepts to keep only the closest matches")
        if has_more:
            actions.append(f"Use continuation_token for more results ({remaining} more)")
        actions.append("Use the `search` tool for the decisions and ideas recorded about these topics")
    return NavigationHints(next_actions=actions, related_queries=_related(plan, results))


def _related(plan: _Plan, results: list[ChunkResult]) -> list[str]:
    """Document keywords the request did not already name, most common on the page first."""
    asked = {s.casefold() for s in [*plan.concepts, *plan.terms]}
    counts = Counter(k for r in results for k in dict.fromkeys(r.document_keywords))
    related = [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].casefold()))]
    related = [k for k in related if k.casefold() not in asked]
    if not related and not results and len(plan.concepts) > 1:
        related = list(plan.concepts)
    return related[:MAX_RELATED]
