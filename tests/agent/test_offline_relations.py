"""Offline relations on small hand-written cases: evidence, each relation type, negatives, lookups.

Stored ideas are what the tools would have returned (`Known`). New ideas are built directly: which
sentence of a session is an idea is the learned model's call (tested in `test_offline_learned.py`,
measured by `cairn eval sessions`), while these tests are about what the linking steps make of an idea
once found. `stating` hands `build_result` the batch's ideas, so everything after extraction (answers,
relations, activation) still runs as in the indexer.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cairn.agent.offline import Known, build_result
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.entities import Entity, extract
from cairn.agent.offline.evidence import (
    BARE_FILE_ANCHOR,
    FULL_ANCHOR,
    Evidence,
    StoredEntities,
    anchor_weight,
    evidence,
    said_before,
)
from cairn.agent.offline.lookups import (
    LOOKUP_BUDGET,
    MAX_ENTITY_IDEA_LOOKUPS,
    KnownEntity,
    KnownIdea,
    absorb,
    follow_up,
    plan,
)
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.relating import MAX_RELATIONS_PER_IDEA, relation_type, relations
from cairn.agent.schema import DEFAULT_IMPORTANCE, BatchMessage, IndexBatch, IndexResult, SessionUpdate
from cairn.tools.results import EntityIdeas, EntityInfo, EntityList, IdeaBrief

SESSION = "s-1"
FILE = "/home/dev/.claude/projects/acme/s-1.jsonl"
EARLIER = "2026-01-01T09:00:00Z"
NOW = "2026-01-02T10:00:00Z"
LATER = "2026-01-03T08:00:00Z"

FILTERS_IN_HOOK = "Keep the todo filters in `hooks/useTodos.ts` so every page shares them."
EXPORT_CRASH = "The nightly export crashes in `export_rows` when a row has no user id."

TOOLS = {
    "get_current_span": ["session"],
    "get_open_questions": ["limit", "session"],
    "get_open_todos": ["limit", "session"],
    "get_recent_ideas": ["intent", "limit", "session"],
    "search_ideas": ["intent", "limit", "query", "session"],
    "search_entities": ["name", "type"],
    "get_entity_ideas": ["entity_id", "limit"],
}


def batch(*messages: tuple[str, str], at: str | None = NOW) -> IndexBatch:
    """A one-session batch of (role, content) messages at lines 1, 2, …, all said at `at`."""
    return IndexBatch(
        updates=[
            SessionUpdate(
                session=SESSION,
                file_path=FILE,
                messages=[
                    BatchMessage(line=1 + i, role=role, content=text, timestamp=at)
                    for i, (role, text) in enumerate(messages)
                ],
            )
        ]
    )


def known(*ideas: KnownIdea) -> Known:
    """The tools' answers for a session with no span and nothing open, and these stored ideas."""
    found = Known(spans={SESSION: None}, open_questions={SESSION: []}, open_todos={SESSION: []})
    found.ideas.update({idea.id: idea for idea in ideas})
    return found


def related(result: IndexResult) -> list[tuple[int, int, str]]:
    return [(r.from_line, r.to_idea_id, r.relation_type) for r in result.relations]


def candidate(content: str, intent: str = "decision", *entities: Entity, at: str | None = NOW) -> Candidate:
    return Candidate(SESSION, FILE, 5, intent, content, 0.8, 1.0, 1, list(entities), at=at)  # type: ignore[arg-type]


def said(line: int, intent: str, content: str, **flags: object) -> Candidate:
    """The idea found at `line` of the session, with the entities its words name (as extraction gives)."""
    importance = DEFAULT_IMPORTANCE[intent]  # type: ignore[index]
    return Candidate(SESSION, FILE, line, intent, content, 0.8, importance, 1, extract(content), **flags)  # type: ignore[arg-type]


@pytest.fixture
def stating(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`stating(*ideas)`: the ideas `build_result` finds in session `SESSION` of the batch (other sessions
    say nothing), each at its message's line, turn and time as extraction would place it."""

    def install(*ideas: Candidate) -> None:
        def session_candidates(view: SessionView) -> list[Candidate]:
            if view.session != SESSION:
                return []
            found = []
            for idea in ideas:
                message = view.by_line(idea.line)
                assert message is not None, f"no message at line {idea.line}"
                found.append(
                    replace(idea, turn=message.turn, at=message.timestamp, entities=list(idea.entities))
                )
            return found

        monkeypatch.setattr("cairn.agent.offline.build.session_candidates", session_candidates)

    return install


# ---------------------------------------------------------------------------------------------------
# Evidence


@pytest.mark.parametrize(
    ("mine", "theirs", "weight"),
    [
        (("app/page.tsx", "file"), ("app/page.tsx", "file"), FULL_ANCHOR),
        (("useTodos", "concept"), ("useTodos()", "concept"), FULL_ANCHOR),
        (("page.tsx", "file"), ("app/page.tsx", "file"), BARE_FILE_ANCHOR),
        (("CLAUDE.md", "file"), ("CLAUDE.md", "file"), BARE_FILE_ANCHOR),
        (("app/page.tsx", "file"), ("about/page.tsx", "file"), 0.0),  # two files of one name
        (("React", "technology"), ("React", "technology"), 0.0),  # in every idea of the stack
        (("state management", "concept"), ("state management", "concept"), 0.0),  # prose, not code
        (("useTodos", "concept"), ("useTodos.ts", "file"), 0.0),
    ],
)
def test_only_files_and_identifiers_anchor_and_a_bare_file_name_only_half(
    mine: tuple[str, str], theirs: tuple[str, str], weight: float
) -> None:
    assert anchor_weight(mine, theirs) == weight


def test_shared_words_leave_out_the_anchor_and_technology_names() -> None:
    stored = KnownIdea(30, "decision", "Keep the todo filters in `hooks/useTodos.ts`, typed with TypeScript.")
    new = candidate(
        "Move the filter reset into hooks/useTodos.ts, also TypeScript.",
        "decision",
        Entity("hooks/useTodos.ts", "file"),
        Entity("TypeScript", "technology"),
    )
    found = evidence(new, stored, StoredEntities(known(stored)))
    assert found.anchor == FULL_ANCHOR
    assert found.shared == {"filter"}  # not "hook", "todo", "ts" (the file), nor "type", "script"


def test_a_stored_idea_is_anchored_by_the_entities_the_tools_link_it_to() -> None:
    stored = KnownIdea(30, "decision", "Keep the filter state in one custom hook so every screen shares it.")
    new = candidate(
        "Move the filter reset into the hook as well.", "decision", Entity("hooks/useTodos.ts", "file")
    )
    unlinked = known(stored)
    assert evidence(new, stored, StoredEntities(unlinked)).anchor == 0.0
    linked = known(stored)
    linked.entities[4] = KnownEntity(4, "hooks/useTodos.ts", "file")
    linked.entity_ideas[4] = (30,)
    assert evidence(new, stored, StoredEntities(linked)).anchor == FULL_ANCHOR


def test_order_in_time_is_read_from_both_timestamps_and_unknown_counts_as_earlier() -> None:
    new = candidate("Anything.", at=NOW)
    assert said_before(KnownIdea(1, "decision", "x", at=EARLIER), new)
    assert not said_before(KnownIdea(1, "decision", "x", at=LATER), new)
    assert said_before(KnownIdea(1, "decision", "x", at=None), new)
    assert said_before(KnownIdea(1, "decision", "x", at="not a time"), new)


# ---------------------------------------------------------------------------------------------------
# Each relation type


FIX = "Fixed by making `export_rows` skip any row without a user id."


def test_a_fix_about_a_stored_open_problem_answers_it_across_sessions(stating) -> None:  # type: ignore[no-untyped-def]
    problem = KnownIdea(21, "problem", EXPORT_CRASH, "s-0", 8, at=EARLIER)
    stating(said(1, "solution", FIX))
    result = build_result(batch(("assistant", FIX)), known(problem))
    assert [i.intent for i in result.ideas] == ["solution"]
    assert related(result) == [(1, 21, "answers")]
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(21, 1)]
    assert result.activated_ideas == [21]


def test_an_answer_to_another_session_of_the_batch_is_a_relation_only(stating) -> None:  # type: ignore[no-untyped-def]
    # The executor would look the answering line up in the problem's own session, which is in the batch.
    problem = KnownIdea(21, "problem", EXPORT_CRASH, "s-0", 8, at=EARLIER)
    stating(said(1, "solution", FIX))
    fix = batch(("assistant", FIX))
    other = SessionUpdate(
        session="s-0", file_path="/p/s-0.jsonl", messages=[BatchMessage(line=1, role="user", content="ok")]
    )
    two_sessions = IndexBatch(mode="continuous", updates=[*fix.updates, other])
    result = build_result(two_sessions, known(problem))
    assert related(result) == [(1, 21, "answers")]
    assert result.answered_questions == []


def test_an_answered_problem_is_not_answered_again(stating) -> None:  # type: ignore[no-untyped-def]
    problem = KnownIdea(21, "problem", EXPORT_CRASH, "s-0", 8, answered=True, at=EARLIER)
    stating(said(1, "solution", FIX))
    result = build_result(batch(("assistant", FIX)), known(problem))
    assert result.answered_questions == []
    assert related(result) == [(1, 21, "relates_to")]


MOVE_RESET = "Move the filter reset into `hooks/useTodos.ts` as well."


def test_the_same_file_touched_again_builds_on_the_earlier_idea(stating) -> None:  # type: ignore[no-untyped-def]
    stored = KnownIdea(30, "decision", FILTERS_IN_HOOK, "s-0", 5, at=EARLIER)
    stating(said(1, "decision", MOVE_RESET))
    result = build_result(batch(("assistant", MOVE_RESET)), known(stored))
    assert related(result) == [(1, 30, "builds_on")]


def test_a_relation_with_a_direction_never_points_forward_in_time(stating) -> None:  # type: ignore[no-untyped-def]
    later = KnownIdea(30, "decision", FILTERS_IN_HOOK, "s-0", 5, at=LATER)
    stating(said(1, "decision", MOVE_RESET))
    assert related(build_result(batch(("assistant", MOVE_RESET)), known(later))) == [(1, 30, "relates_to")]
    change = "Actually, let's switch the orders database to PostgreSQL instead of SQLite."
    # A change of mind ("instead of"): it may supersede only what came before it.
    stating(said(1, "decision", change))
    decided_later = KnownIdea(7, "decision", "We'll use SQLite for the orders database.", "s-0", 4, at=LATER)
    assert build_result(batch(("assistant", change)), known(decided_later)).relations == []
    decided_before = KnownIdea(
        7, "decision", "We'll use SQLite for the orders database.", "s-0", 4, at=EARLIER
    )
    assert related(build_result(batch(("assistant", change)), known(decided_before))) == [
        (1, 7, "supersedes")
    ]


def test_a_new_problem_relates_to_a_stored_decision_about_the_same_file(stating) -> None:  # type: ignore[no-untyped-def]
    stored = KnownIdea(30, "decision", FILTERS_IN_HOOK, "s-0", 5, at=EARLIER)
    build_fails = "The build fails in `hooks/useTodos.ts`: the filter type is missing."
    stating(said(1, "problem", build_fails))
    result = build_result(batch(("user", build_fails)), known(stored))
    assert [i.intent for i in result.ideas] == ["problem"]
    assert related(result) == [(1, 30, "relates_to")]


def test_a_recurring_error_relates_to_the_stored_problem_by_its_identifier() -> None:
    stored = KnownIdea(
        2, "problem", "The orders suite fails with `sqlite3.OperationalError: database is locked`."
    )
    failure = (
        "[tool_result Bash error] FAILED test_checkout.py - sqlite3.OperationalError: database is locked"
    )
    result = build_result(
        batch(("assistant", "Running the suite."), ("tool", failure), ("assistant", "Same error again.")),
        known(stored),
    )
    assert related(result) == [(2, 2, "relates_to")]


def ev(anchor: float, *shared: str, common: int | None = None, similarity: float = 0.5) -> Evidence:
    """Evidence with these words in common (besides the anchor's name); `common` counts its name too."""
    return Evidence(anchor, frozenset(shared), len(shared) if common is None else common, similarity)


BARE, FULL = BARE_FILE_ANCHOR, FULL_ANCHOR


@pytest.mark.parametrize(
    ("intent", "stored_intent", "found", "expected"),
    [
        # answers: an answering intent, a specific entity and two more words
        ("solution", "problem", ev(BARE, "row", "user"), "answers"),
        ("decision", "question", ev(FULL, "cache", "ttl"), "answers"),
        ("solution", "problem", ev(BARE, "row", common=3), "relates_to"),  # too few for an answer
        ("solution", "problem", ev(BARE, "row", common=2), None),
        ("context", "problem", ev(FULL, "row", "user"), "relates_to"),  # a report answers nothing
        # builds_on: the same file or identifier and one more word, or much the same words
        ("context", "context", ev(FULL, "creat", common=3), "builds_on"),
        ("context", "context", ev(FULL, common=2), None),  # only the file in common
        ("decision", "decision", ev(0.0, "cache", "ttl", "redis"), "builds_on"),
        ("decision", "decision", ev(0.0, "cache", "ttl", "redis", similarity=0.45), "relates_to"),
        # relates_to: by words, or by a bare file name and two words
        ("decision", "conclusion", ev(0.0, "cache", "ttl", "redis", similarity=0.4), "relates_to"),
        ("decision", "conclusion", ev(0.0, "cache", "ttl", similarity=0.9), None),
        ("decision", "conclusion", ev(BARE, "bar", "count", common=4, similarity=0.3), "relates_to"),
        ("decision", "conclusion", ev(BARE, "bar", "count", common=4, similarity=0.2), None),
        ("problem", "problem", ev(0.0, "cache", "ttl", "redis"), "relates_to"),
        # no relation: a report's project vocabulary, a problem and a decision by words, questions, todos
        ("context", "context", ev(0.0, "todo", "app", "creat", similarity=0.7), None),
        ("problem", "decision", ev(0.0, "cache", "ttl", "redis"), None),
        ("question", "decision", ev(FULL, "cache", "ttl"), None),
        ("todo", "decision", ev(FULL, "cache", "ttl"), None),
    ],
)
def test_the_rules_by_intent_and_evidence(
    intent: str, stored_intent: str, found: Evidence, expected: str | None
) -> None:
    new = candidate("A new idea.", intent, at=NOW)
    stored = KnownIdea(9, stored_intent, "A stored idea.", "s-0", 3, at=EARLIER)
    assert relation_type(new, stored, found) == expected


# ---------------------------------------------------------------------------------------------------
# Negatives


def test_shared_technologies_alone_relate_nothing(stating) -> None:  # type: ignore[no-untyped-def]
    stored = KnownIdea(
        5, "decision", "We'll build the dashboard with React and TypeScript.", "s-0", 3, at=EARLIER
    )
    react_query = "Use React Query with TypeScript for the settings page."
    stating(said(1, "decision", react_query))
    result = build_result(batch(("assistant", react_query)), known(stored))
    assert {e.name for i in result.ideas for e in i.entities} >= {"TypeScript"}  # shared, yet no relation
    assert [i.intent for i in result.ideas] == ["decision"]
    assert result.relations == []


def test_the_same_file_with_nothing_else_in_common_relates_nothing() -> None:
    stored = KnownIdea(
        1, "context", "I've created a basic CLAUDE.md file for this empty repository.", "s-0", 29
    )
    found = known(stored)
    found.entities[3] = KnownEntity(3, "Demo/CLAUDE.md", "file")
    found.entity_ideas[3] = (1,)
    new = candidate("Updated the Next.js version to 15.5.2.", "context", Entity("Demo/CLAUDE.md", "file"))
    assert relations([new], found, set()).relations == []


def test_a_bare_file_name_and_one_word_relate_nothing() -> None:
    stored = KnownIdea(8, "conclusion", "The README.md install section is outdated for the CLI.", "s-0", 2)
    new = candidate("Decision: rewrite README.md for the web app.", "decision", Entity("README.md", "file"))
    found = evidence(new, stored, StoredEntities(known(stored)))
    assert found.anchor == BARE_FILE_ANCHOR and len(found.shared) < 2
    assert relations([new], known(stored), set()).relations == []


def test_no_relation_to_the_idea_itself_nor_to_resolved_ideas() -> None:
    new = candidate(
        "Decision: move the filter reset into hooks/useTodos.ts.",
        "decision",
        Entity("hooks/useTodos.ts", "file"),
    )
    itself = KnownIdea(30, "decision", new.content, SESSION, new.line)
    assert relations([new], known(itself), set()).relations == []
    other = KnownIdea(31, "decision", FILTERS_IN_HOOK, "s-0", 5)
    assert relations([new], known(other), {31}).relations == []
    assert [r.to_idea_id for r in relations([new], known(other), set()).relations] == [31]


def test_each_new_idea_gets_at_most_two_relations_strongest_first() -> None:
    stored = [
        KnownIdea(40, "conclusion", "Filters in hooks/useTodos.ts reset on every render.", "s-0", 1),
        KnownIdea(41, "decision", FILTERS_IN_HOOK, "s-0", 2),
        KnownIdea(
            42, "decision", "Persist the filter choice of hooks/useTodos.ts in local storage.", "s-0", 3
        ),
        KnownIdea(43, "problem", "The filter menu in hooks/useTodos.ts flickers on load.", "s-0", 4),
    ]
    new = candidate(
        "Decision: move the filter reset into hooks/useTodos.ts.",
        "decision",
        Entity("hooks/useTodos.ts", "file"),
    )
    found = relations([new], known(*stored), set()).relations
    assert len(found) == MAX_RELATIONS_PER_IDEA
    assert {r.relation_type for r in found} == {"builds_on"}
    assert all(r.to_idea_id != 43 for r in found)  # the weaker relates_to is cut


# ---------------------------------------------------------------------------------------------------
# Lookups


def test_searches_go_to_solutions_and_problems_not_only_decisions() -> None:
    found = [
        said(
            1,
            "problem",
            "Bash call failed: sqlite3.OperationalError: database is locked",
            origin="tool_error",
        ),
        said(2, "solution", "Fixed by retrying the checkout write when the database is busy."),
    ]
    lookups = plan([SESSION], {SESSION: found}, TOOLS)
    queries = [lk.args["query"] for lk in lookups if lk.tool == "search_ideas"]
    assert queries == [
        "Fixed retrying checkout write database busy",
        "sqlite3 OperationalError database locked",
    ]
    basics = [lk.tool for lk in lookups[:4]]
    assert basics == ["get_current_span", "get_open_questions", "get_open_todos", "get_recent_ideas"]


FILTER_WORK = [
    said(1, "decision", "Move the filter reset into `hooks/useTodos.ts` and `app/page.tsx`."),
    said(2, "conclusion", "The cause is `applyFilter` in lib/filters.ts, with React state."),
    said(3, "solution", "Fixed by memoising `applyFilter` in lib/filters.ts."),
]


def test_the_plan_keeps_room_for_entity_ideas_and_the_follow_up_uses_it() -> None:
    candidates = FILTER_WORK
    first = plan([SESSION], {SESSION: candidates}, TOOLS)
    assert len(first) == LOOKUP_BUDGET - MAX_ENTITY_IDEA_LOOKUPS
    searched = [lk.args for lk in first if lk.tool == "search_entities"]
    assert searched == [{"name": "applyFilter"}, {"name": "lib/filters.ts", "type": "file"}]

    found = Known()
    absorb(
        found,
        "search_entities",
        searched[0],
        EntityList(
            entities=[EntityInfo(id=7, canonical_name="applyFilter", type="concept", aliases=[], ideas=2)]
        ),
    )
    absorb(
        found,
        "search_entities",
        searched[1],
        EntityList(
            entities=[EntityInfo(id=8, canonical_name="lib/filters.ts", type="file", aliases=[], ideas=0)]
        ),
    )
    second = follow_up(candidates, found, TOOLS, LOOKUP_BUDGET - len(first))
    assert [(lk.tool, lk.args) for lk in second] == [("get_entity_ideas", {"entity_id": 7, "limit": 10})]
    assert follow_up(candidates, found, TOOLS, 0) == []
    found.exhausted = True
    assert follow_up(candidates, found, TOOLS, 5) == []


def test_without_get_entity_ideas_the_plan_uses_the_whole_budget() -> None:
    tools = {name: params for name, params in TOOLS.items() if name != "get_entity_ideas"}
    lookups = plan([SESSION], {SESSION: FILTER_WORK}, tools)
    assert len(lookups) == 10 and sum(lk.tool == "search_entities" for lk in lookups) == 3
    assert follow_up(FILTER_WORK, Known(), tools, 5) == []


def test_entity_ideas_are_absorbed_with_their_links_and_times() -> None:
    found = Known()
    answer = EntityIdeas(
        entity=EntityInfo(id=4, canonical_name="hooks/useTodos.ts", type="file", aliases=[], ideas=2),
        ideas=[
            IdeaBrief(id=30, intent="decision", content=FILTERS_IN_HOOK, session="s-0", line=5, at=EARLIER),
            IdeaBrief(id=31, intent="problem", content="The filter menu flickers.", session="s-0", line=9),
        ],
    )
    absorb(found, "get_entity_ideas", {"entity_id": 4}, answer)
    assert found.entity_ideas == {4: (30, 31)}
    assert found.entities[4] == KnownEntity(4, "hooks/useTodos.ts", "file")
    assert found.ideas[30].at == EARLIER and found.ideas[31].at is None
    assert found.idea_ids() == {30, 31}


DECIDED_SQLITE = KnownIdea(7, "decision", "We'll use SQLite for the orders database.", "s-0", 4, at=EARLIER)
SWITCH = "I'll switch the orders database to PostgreSQL instead of SQLite."


def test_a_plan_put_off_still_supersedes_the_stored_decision_it_changes() -> None:
    # A deferred todo starts no relation but this one: putting the change off does not bring back the
    # decision it replaced (the stored one came in an earlier batch, so only `relating` can see it).
    plan_put_off = said(1, "todo", SWITCH, origin="deferred")
    assert [
        (r.from_line, r.to_idea_id, r.relation_type)
        for r in relations([plan_put_off], known(DECIDED_SQLITE), set()).relations
    ] == [(1, 7, "supersedes")]
    assert relations([replace(plan_put_off, origin="prose")], known(DECIDED_SQLITE), set()).relations == []


def test_a_change_of_mind_found_by_the_pipeline_supersedes_a_stored_decision() -> None:
    """The flags as the pipeline now sets them: a plan with the change cue ("instead of") in its words."""
    for origin, intent in (("deferred", "todo"), ("prose", "decision")):
        change = said(1, intent, SWITCH, origin=origin)
        found = relations([change], known(DECIDED_SQLITE), set()).relations
        assert [(r.from_line, r.to_idea_id, r.relation_type) for r in found] == [(1, 7, "supersedes")]
