"""The request and response shapes of `search_content`, validated as they arrive.

Kept apart from the search itself so the contract a caller (CLI, MCP tool, socket op) sees reads in one
place: what may be asked — at least one signal, at most `MAX_SIGNALS` of each, a bounded page size —
and what comes back — the chunks, statistics about them, the paging state and hints for what next.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator, model_validator

MAX_LIMIT = 50
MAX_SIGNALS = 20
MAX_CONCEPT_CHARS = 1_000
MAX_TERM_CHARS = 200

NO_SIGNAL = (
    "give semantic_concepts (ideas to match by meaning), exact_terms (words or identifiers that must "
    "appear), or both"
)


class ContentRequest(BaseModel):
    """One content search. With `continuation_token` set, everything but `limit` and `max_chars` comes
    from the token."""

    semantic_concepts: list[str] = Field(
        default_factory=list, description="Ideas to match by meaning, e.g. ['authentication', 'retries']."
    )
    exact_terms: list[str] = Field(
        default_factory=list,
        description="Words or identifiers that must appear, e.g. ['useState', 'v4']; each one found "
        "multiplies the score by content_exact_boost.",
    )
    min_score: float | None = Field(default=None, ge=0, le=1, description="Default: content_min_score.")
    limit: int = Field(default=10, description=f"Results per page, 1 to {MAX_LIMIT}.")
    continuation_token: str | None = None
    project: str | None = Field(default=None, description="Project path or name.")
    session: str | None = Field(default=None, description="Only this session's content.")
    max_chars: int | None = Field(
        default=None,
        ge=1_000,
        le=1_000_000,
        description="Bound the page's size: passages are cut to a share of this and the page ends before "
        "their JSON passes it (at least one passage). Default: no bound, whole passages.",
    )

    @field_validator("semantic_concepts")
    @classmethod
    def _clean_concepts(cls, value: list[str]) -> list[str]:
        return _clean(value, MAX_CONCEPT_CHARS, "semantic_concepts")

    @field_validator("exact_terms")
    @classmethod
    def _clean_terms(cls, value: list[str]) -> list[str]:
        return _clean(value, MAX_TERM_CHARS, "exact_terms")

    @field_validator("limit")
    @classmethod
    def _check_limit(cls, value: int) -> int:
        if not 1 <= value <= MAX_LIMIT:
            raise ValueError(
                f"limit must be between 1 and {MAX_LIMIT} (got {value}); "
                "page through more results with continuation_token"
            )
        return value

    @model_validator(mode="after")
    def _needs_a_signal(self) -> ContentRequest:
        if self.continuation_token is None and not (self.semantic_concepts or self.exact_terms):
            raise ValueError(NO_SIGNAL)
        return self


def _clean(values: list[str], max_chars: int, name: str) -> list[str]:
    """Stripped, non-empty, distinct entries: blank strings are no signal, repeats no extra one."""
    cleaned = list(dict.fromkeys(v.strip()[:max_chars] for v in values if v.strip()))
    if len(cleaned) > MAX_SIGNALS:
        raise ValueError(f"{name} takes at most {MAX_SIGNALS} entries (got {len(cleaned)})")
    return cleaned


class ChunkResult(BaseModel):
    chunk_id: str = Field(
        description="The chunk's id: `c<id>` for a part of a project file, `m<id>` for a transcript "
        "message; usable with `show`."
    )
    document_id: str = Field(
        description="The document the chunk belongs to: the file's absolute path, or the transcript's path."
    )
    content: str = Field(description="The chunk's full text.")
    relevance_score: float = Field(description="Match quality in [0, 1].")
    chunk_index: int = Field(
        description="Position in the document: the chunk's number in its file (0-based), or a message's "
        "line in its transcript."
    )
    document_keywords: list[str] = Field(
        default_factory=list,
        description="Up to 7 key phrases of the file, or key entities of the message's session.",
    )
    start_line: int | None = Field(default=None, description="A file chunk's first line (1-based).")
    end_line: int | None = Field(default=None, description="A file chunk's last line.")
    learned_from: str | None = Field(
        default=None,
        description="When a learned search association lifted this result: the earlier search's query "
        "after which the agent found this file.",
    )
    omitted_chars: int | None = Field(
        default=None,
        description="Set when the page's size bound cut this passage: the characters left out; `show` "
        "returns the whole text.",
    )


class ContentStatistics(BaseModel):
    total_results: int = Field(description="Results over all pages (the same on every page).")
    files_covered: list[str] = Field(description="Distinct document_ids on this page.")
    avg_relevance: float = Field(description="Mean relevance_score on this page.")
    search_interpretation: str = Field(description="What was searched for and how it was scored.")


class Continuation(BaseModel):
    has_more: bool
    next_token: str | None = Field(default=None, description="Pass as continuation_token for the next page.")


class NavigationHints(BaseModel):
    next_actions: list[str] = Field(default_factory=list)
    related_queries: list[str] = Field(default_factory=list)


class ContentResponse(BaseModel):
    results: list[ChunkResult]
    statistics: ContentStatistics
    continuation: Continuation
    navigation_hints: NavigationHints
