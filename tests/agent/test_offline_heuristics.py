"""The offline indexer's heuristics on small hand-written batches: cues, noise, links, entities, topics."""

from __future__ import annotations

from cairn.agent.offline import Known, build_result, read_batch
from cairn.agent.offline.entities import entity_key, extract, file_name
from cairn.agent.offline.gazetteer import canonical, canonical_names, find_technologies
from cairn.agent.offline.lookups import KnownEntity, KnownIdea, KnownSpan, absorb, plan
from cairn.agent.offline.text import segments, shorten, term_set
from cairn.agent.offline.topics import name_from
from cairn.agent.schema import IndexResult
from cairn.tools.results import EntityInfo, EntityList, IdeaBrief, IdeaList, Notice, SpanInfo
from tests.agent.offline_helpers import SESSION, Picks, batch, fresh


def intents(result: IndexResult) -> list[tuple[int, str]]:
    return [(idea.source_line, idea.intent) for idea in result.ideas]


# ---------------------------------------------------------------------------------------------------
# Text


def test_segments_drop_code_and_tool_lines_and_keep_bullets() -> None:
    text = (
        'I checked e.g. the config. It is fine.\n[tool_use Bash] command="ls"\n```py\nx = 1. Y = 2.\n```\n'
        "## Next steps\n- Add a test.\n- Ship it."
    )
    found = segments(text)
    assert [s.text for s in found] == ["I checked e.g. the config.", "It is fine.", "Add a test.", "Ship it."]
    assert found[2].bullet and found[2].heading == "Next steps"


def test_shorten_cuts_at_a_word_and_terms_meet_at_a_stem() -> None:
    assert len(shorten("word " * 100)) <= 300
    assert shorten("Plan:").endswith(".")
    assert term_set("the database is locked") & term_set("locking databases") == {"databas", "lock"}
    assert term_set("[REDACTED:anthropic_api_key] secret") == {"secret"}


# ---------------------------------------------------------------------------------------------------
# Noise, hypotheses, in-batch questions


def test_a_batch_of_noise_yields_no_ideas_and_skips_every_line() -> None:
    result = build_result(
        batch(
            ("user", "hi"),
            ("assistant", 'Let me look at the repository.\n[tool_use Bash] command="ls -la"'),
            ("tool", "[tool_result Bash] README.md\nsrc"),
            ("user", "thanks"),
        ),
        Known(spans={SESSION: None}),
    )
    assert result.ideas == [] and result.topic_changes == []
    assert result.skip_lines == [1, 2, 3, 4]


def test_a_refuted_hypothesis_is_kept_and_superseded_by_its_correction(model_picks: Picks) -> None:
    model_picks({1: "problem", 2: "resolved", 3: "resolved"}, resolving=[3])
    result = build_result(
        batch(
            ("user", "The export job fails every night."),
            ("assistant", "My first guess is that the disk fills up."),
            (
                "assistant",
                "That guess was wrong: the disk has 80% free. The real cause is an expired S3 token in the "
                "export job.",
            ),
        ),
        fresh(),
    )
    # The guess stays, marked superseded by the correction: the chain is visible, and recall can leave
    # the superseded guess out. The problem is answered where the cause is said.
    assert intents(result) == [(1, "problem"), (2, "conclusion"), (3, "conclusion")]
    problem, guess, cause = result.ideas
    assert guess.confidence == 0.5 and "expired S3 token" in cause.content
    assert [(r.from_key, r.to_idea_id, r.relation_type) for r in result.relations] == [
        (cause.key, guess.key, "supersedes")
    ]
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(problem.key, 3)]


def test_an_unrefuted_hypothesis_is_kept_tentative(model_picks: Picks) -> None:
    model_picks({1: "resolved"})
    result = build_result(batch(("assistant", "I suspect the cron runs in UTC, not local time.")), fresh())
    [idea] = result.ideas
    assert idea.intent == "conclusion" and idea.confidence == 0.5


def test_a_question_answered_later_in_the_batch_is_answered_by_key(model_picks: Picks) -> None:
    model_picks({1: "raised", 4: "resolved"}, resolving=[2, 4])
    result = build_result(
        batch(
            ("user", "Why does the nightly export skip the last customer row?"),
            ("assistant", 'Let me read the exporter.\n[tool_use Read] file_path="/srv/app/export.py"'),
            ("tool", "[tool_result Read] for row in rows[:-1]: ..."),
            ("assistant", "The cause is an off-by-one slice in export.py: rows[:-1] drops the last row."),
        ),
        fresh(),
    )
    assert intents(result) == [(1, "question"), (4, "conclusion")]
    # The question has no id yet: the result names it by key, answered where the cause is said, not at
    # the preamble "Let me read the exporter." (no `answers` relation: the line says it).
    key = result.ideas[0].key
    assert key is not None and result.ideas[1].key is None
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(key, 4)]
    assert result.relations == []
    assert {"app/export.py"} <= {e.name for e in result.ideas[1].entities}


def test_repeated_statements_of_one_rule_keep_the_fuller_one(model_picks: Picks) -> None:
    model_picks({1: "decision", 2: "decision"})
    result = build_result(
        batch(
            ("user", "Let's also remember: never run the migrations against prod from a laptop."),
            (
                "assistant",
                "Noted as a team rule: production migrations run only from CI, never from a laptop.",
            ),
        ),
        fresh(),
    )
    assert intents(result) == [(2, "decision")]
    assert result.skip_lines == []  # line 1 opens the topic


def test_a_failed_tool_gives_a_problem_but_harness_errors_do_not() -> None:
    result = build_result(
        batch(
            ("assistant", '[tool_use Bash] command="pytest -q"'),
            (
                "tool",
                "[tool_result Bash error] Traceback (most recent call last):\n  File x\nKeyError: 'user_id'",
            ),
            ("assistant", 'The session dict has no user_id yet.\n[tool_use Edit] file_path="/srv/app/db.py"'),
            ("tool", "[tool_result Edit error] <tool_use_error>File has not been read yet.</tool_use_error>"),
            ("assistant", "I need to read the file first."),
        ),
        fresh(),
    )
    [problem] = result.ideas
    assert (
        problem.intent == "problem" and problem.source_line == 2 and "KeyError: 'user_id'" in problem.content
    )
    assert problem.importance < 0.8


def test_open_todowrite_items_become_todos_and_finished_ones_do_not() -> None:
    write = (
        '[tool_use TodoWrite] todos=[{{"content":"{a}","status":"{sa}"}},{{"content":"{b}","status":"{sb}"}}]'
    )
    result = build_result(
        batch(
            (
                "assistant",
                write.format(a="Add rate limiting", sa="in_progress", b="Write the docs", sb="pending"),
            ),
            (
                "assistant",
                write.format(a="Add rate limiting", sa="completed", b="Write the docs", sb="pending"),
            ),
        ),
        fresh(),
    )
    assert [(i.source_line, i.intent, i.content) for i in result.ideas] == [(1, "todo", "Write the docs")]


# ---------------------------------------------------------------------------------------------------
# Links to stored ideas


def test_a_change_of_mind_supersedes_only_a_stored_decision(model_picks: Picks) -> None:
    model_picks({1: "decision"})
    text = "Actually, let's switch the orders database to PostgreSQL instead of SQLite."
    stored = KnownIdea(7, "decision", "We'll use SQLite for the orders database.", "s-0", 4)
    known = fresh()
    known.ideas[7] = stored
    result = build_result(batch(("assistant", text)), known)
    assert [(r.from_line, r.to_idea_id, r.relation_type) for r in result.relations] == [(1, 7, "supersedes")]
    assert result.activated_ideas == [7]
    assert build_result(batch(("assistant", text)), fresh()).relations == []


def test_a_correction_contradicts_a_stored_conclusion(model_picks: Picks) -> None:
    model_picks({1: "resolved"})
    known = fresh()
    known.ideas[3] = KnownIdea(3, "conclusion", "The export fails because the disk fills up.", "s-0", 9)
    result = build_result(
        batch(
            (
                "assistant",
                "That guess was wrong: the export disk is nearly empty, so the disk is not the cause.",
            )
        ),
        known,
    )
    assert [(r.to_idea_id, r.relation_type) for r in result.relations] == [(3, "contradicts")]


def test_a_restated_stored_idea_is_not_added_again(model_picks: Picks) -> None:
    model_picks({1: "decision"})
    known = fresh()
    known.ideas[5] = KnownIdea(5, "decision", "We'll use Redis for the session cache.", "s-0", 2)
    result = build_result(batch(("user", "Let's use Redis for the session cache.")), known)
    assert result.ideas == [] and result.activated_ideas == [5]


def test_a_stored_question_is_answered_and_a_stored_todo_completed(model_picks: Picks) -> None:
    model_picks({1: "resolved", 2: "resolved"})
    known = fresh()
    known.open_questions[SESSION] = [
        KnownIdea(11, "question", "Should we move orders to Postgres before Black Friday?")
    ]
    known.open_todos[SESSION] = [KnownIdea(12, "todo", "Add a load test for the orders endpoint.")]
    result = build_result(
        batch(
            ("assistant", "Load test for the orders endpoint is done: p95 is 12 ms."),
            ("assistant", "Conclusion: orders stay on SQLite through Black Friday; no Postgres move needed."),
        ),
        known,
    )
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(11, 2)]
    assert [(t.todo_idea_id, t.completed_at_line) for t in result.completed_todos] == [(12, 1)]
    assert ("answers", 11, 2) in {(r.relation_type, r.to_idea_id, r.from_line) for r in result.relations}
    assert {11, 12} <= set(result.activated_ideas)


def test_a_todowrite_completion_completes_a_stored_todo() -> None:
    known = fresh()
    known.open_todos[SESSION] = [KnownIdea(4, "todo", "Add rate limiting to the login endpoint")]
    item = '{"content":"Add rate limiting to the login endpoint","status":"completed"}'
    done = f"[tool_use TodoWrite] todos=[{item}]"
    result = build_result(batch(("assistant", done)), known)
    assert [(t.todo_idea_id, t.completed_at_line) for t in result.completed_todos] == [(4, 1)]


def test_every_id_comes_from_the_tools_and_every_line_from_the_batch() -> None:
    known = fresh()
    known.ideas[40] = KnownIdea(40, "decision", "Use SQLite for the orders database.")
    known.entities[9] = KnownEntity(9, "SQLite", "technology")
    result = build_result(
        batch(
            ("user", "The orders import fails with `sqlite3.OperationalError`."),
            ("assistant", "Decision: switch the orders database from SQLite to PostgreSQL instead."),
        ),
        known,
    )
    lines = {1, 2}
    assert {r.to_idea_id for r in result.relations} | set(result.activated_ideas) <= {40}
    assert {link.entity_id for link in result.entity_links} == {9}
    assert {i.source_line for i in result.ideas} | set(result.skip_lines) <= lines
    assert {c.start_line for c in result.topic_changes} <= lines


# ---------------------------------------------------------------------------------------------------
# Entities


def test_sqlite_spellings_canonicalise_to_one_technology() -> None:
    for spelling in ("sqlite", "SQLite", "sqlite3", "SQLITE"):
        assert canonical(spelling) == "SQLite"
        assert entity_key(spelling) == entity_key("SQLite")
    assert find_technologies("sqlite3.connect() and then SQLite again") == ["SQLite"]
    assert find_technologies("Update CLAUDE.md and pytest.ini") == []
    assert find_technologies("react to the event") == [] and find_technologies("a React app") == ["React"]
    assert len(canonical_names()) >= 80


def test_entities_link_to_existing_ones_and_keep_their_name() -> None:
    known = fresh()
    known.entities[3] = KnownEntity(3, "SQLite", "technology", ("sqlite3",))
    known.entities[4] = KnownEntity(4, "app/db.py", "file")
    result = build_result(
        batch(
            (
                "assistant",
                "Decision: use sqlite3 with WAL in `db.py` for the queue.\n"
                '[tool_use Edit] file_path="/srv/app/db.py"',
            )
        ),
        known,
    )
    [idea] = result.ideas
    assert {(e.name, e.type) for e in idea.entities} >= {("SQLite", "technology"), ("app/db.py", "file")}
    assert sorted((link.entity_id, link.entity_name) for link in result.entity_links) == [
        (3, "SQLite"),
        (4, "app/db.py"),
    ]


def test_files_identifiers_and_technologies_are_extracted() -> None:
    found = {
        (e.name, e.type)
        for e in extract("`OrderRepo.save()` in /srv/acme/app/db.py calls read_rows() on Postgres")
    }
    assert ("app/db.py", "file") in found
    assert ("PostgreSQL", "technology") in found
    assert ("read_rows()", "concept") in found
    assert file_name("/home/dev/acme-api/tests/conftest.py") == "tests/conftest.py"
    assert file_name("README.md") == "README.md"


# ---------------------------------------------------------------------------------------------------
# Topics


def test_the_first_batch_of_a_session_opens_its_first_topic() -> None:
    result = build_result(
        batch(
            ("user", "The checkout page crashes when the cart is empty."),
            ("assistant", "The cause is a division by the item count in cart_total()."),
        ),
        fresh(),
    )
    [change] = result.topic_changes
    assert change.from_span_id is None and change.start_line == 1
    assert 1 <= len(change.new_topic_name.split()) <= 6
    assert "checkout" in change.reason.lower()


def test_an_explicit_transition_opens_a_new_topic_from_the_current_span() -> None:
    known = fresh()
    known.spans[SESSION] = KnownSpan(21, SESSION, "Checkout Crash", "Empty cart crash in cart_total()", 1)
    result = build_result(
        batch(
            ("assistant", "The checkout fix is merged."),
            ("user", "Great. Let's move on to the invoice PDF layout and its fonts."),
            ("assistant", "The PDF uses the system font, so we'll use an embedded font instead."),
        ),
        known,
    )
    [change] = result.topic_changes
    assert (change.from_span_id, change.start_line) == (21, 2)
    assert "Invoice" in change.new_topic_name and "PDF" in change.new_topic_name


def test_a_related_prompt_stays_in_the_current_topic_and_updates_its_summary(model_picks: Picks) -> None:
    model_picks({2: "resolved"})
    known = fresh()
    known.spans[SESSION] = KnownSpan(
        21, SESSION, "Checkout Crash", "The checkout page crashes on an empty cart.", 1
    )
    result = build_result(
        batch(
            ("user", "Does the checkout crash also happen with an empty cart on mobile?"),
            ("assistant", "The cause is the same division in cart_total(), on every platform."),
        ),
        known,
    )
    assert result.topic_changes == []
    [update] = result.topic_updates
    assert update.span_id == 21 and "cart_total()" in (update.summary or "")


def test_an_unrelated_request_opens_a_new_topic() -> None:
    known = fresh()
    known.spans[SESSION] = KnownSpan(
        5, SESSION, "Checkout Crash", "The checkout page crashes on an empty cart.", 1
    )
    result = build_result(
        batch(
            ("assistant", "The checkout crash is fixed."),
            ("assistant", "All checkout tests pass."),
            ("user", "Please write a Dockerfile for the reporting service with a slim Python base image."),
        ),
        known,
    )
    [change] = result.topic_changes
    assert change.start_line == 3 and change.from_span_id == 5
    assert name_from("Please write a Dockerfile for the reporting service") == "Dockerfile Reporting Service"


# ---------------------------------------------------------------------------------------------------
# Lookups


def test_the_plan_stays_within_budget_and_uses_only_offered_parameters(model_picks: Picks) -> None:
    model_picks({1: "decision"})
    tools = {"get_current_span": ["session"], "search_entities": ["name"], "search_ideas": ["limit", "query"]}
    drafts = read_batch(
        batch(("assistant", "Decision: use SQLite and FastAPI, switch to uv instead of pip."))
    )
    lookups = plan([SESSION], {SESSION: drafts[0].candidates}, tools, budget=4)
    assert len(lookups) == 4
    assert lookups[0].tool == "get_current_span" and lookups[0].args == {"session": SESSION}
    assert all(set(lk.args) <= set(tools[lk.tool]) for lk in lookups)
    assert {lk.tool for lk in lookups} == {"get_current_span", "search_ideas", "search_entities"}


def test_tool_answers_are_read_by_shape_and_notices_ignored() -> None:
    known = Known()
    idea = IdeaBrief(id=3, intent="question", content="Why is the queue slow?", session=SESSION, line=4)
    absorb(known, "get_open_questions", {"session": SESSION}, IdeaList(ideas=[idea]))
    absorb(
        known,
        "get_current_span",
        {"session": SESSION},
        SpanInfo(id=8, session=SESSION, name="Queue", start_line=1, open=True),
    )
    absorb(
        known,
        "search_entities",
        {"name": "sqlite"},
        EntityList(
            entities=[
                EntityInfo(id=2, canonical_name="SQLite", type="technology", aliases=["sqlite3"], ideas=4)
            ]
        ),
    )
    absorb(known, "get_open_todos", {"session": SESSION}, Notice(notice="Tool budget used up"))
    absorb(known, "search_ideas", {"query": "x"}, "Tool budget used up (15 calls).")
    no_span = Notice(notice="session 's-2' has no topic spans yet")
    absorb(known, "get_current_span", {"session": "s-2"}, no_span)
    absorb(known, "get_current_span", {"session": "s-3"}, Notice(notice="Tool budget used up (15 calls)."))
    assert [q.id for q in known.open_questions[SESSION]] == [3]
    assert known.spans[SESSION] == KnownSpan(8, SESSION, "Queue", "", 1, True)
    assert known.entities[2] == KnownEntity(2, "SQLite", "technology", ("sqlite3",))
    assert known.open_todos == {} and set(known.ideas) == {3}
    assert known.spans["s-2"] is None and "s-3" not in known.spans  # no span vs. not known
