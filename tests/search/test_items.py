"""Item lookups on a real store: `show` for each kind, `timeline` around each kind of anchor, `open_items`."""

from __future__ import annotations

from dataclasses import dataclass

import aiosqlite
import pytest

from cairn.search.errors import ItemNotFoundError
from cairn.search.item_models import IdeaBrief
from cairn.search.items import show
from cairn.search.models import BadItemIdError
from cairn.search.open_items import open_items
from cairn.search.timeline import timeline
from cairn.store.store import Store, message_hash
from tests.tools.memory import MAIN, OTHER, SAID_AT, add_idea, add_span, insert, seed

# ---------------------------------------------------------------------------------------------------
# show


async def test_show_idea_with_relations_entities_and_what_it_supersedes(store: Store) -> None:
    memory = await seed(store)
    ideas, spans = memory.ideas, memory.spans

    chroma = await show(store.db, str(ideas["chroma"]))

    assert chroma.id == str(ideas["chroma"])
    assert chroma.kind == "idea"
    assert chroma.intent == "decision"
    assert chroma.content == "Store vectors in Chroma, derived from SQLite through an outbox"
    assert chroma.session is not None
    assert chroma.session.id == MAIN
    assert chroma.session.project == "/work/cairn"
    assert chroma.session.project_name == "cairn"
    assert chroma.session.started_at == "2025-01-02T00:00:00.000Z"
    assert chroma.session.topic == "Vector index with Chroma"
    assert chroma.session.topic_id == f"s{spans['vectors']}"
    assert chroma.source.file == "/t/s-main.jsonl"
    assert chroma.source.line == 20
    assert chroma.importance == 0.5
    assert chroma.confidence == 0.5
    assert chroma.usage_count == 0
    assert chroma.superseded is False
    assert chroma.superseded_by is None
    assert [(b.id, b.intent, b.superseded) for b in chroma.supersedes] == [
        (str(ideas["blobs"]), "decision", True)
    ]
    assert [(r.type, r.direction, r.idea.id) for r in chroma.relations] == [
        ("supersedes", "outgoing", str(ideas["blobs"])),
        ("relates_to", "incoming", str(ideas["duplicates"])),
    ]
    assert chroma.relations[1].idea.preview == "How should the agent find duplicate ideas?"
    assert [(e.name, e.type) for e in chroma.entities] == [("Chroma", "technology"), ("SQLite", "technology")]
    assert chroma.entities[0].id == memory.entities["Chroma"]
    assert chroma.ideas == [] and chroma.children == [] and chroma.title is None


async def test_show_superseded_idea_names_its_replacement(store: Store) -> None:
    memory = await seed(store)
    ideas = memory.ideas

    blobs = await show(store.db, ideas["blobs"])

    assert blobs.superseded is True
    assert blobs.superseded_by is not None
    assert blobs.superseded_by.id == str(ideas["chroma"])
    assert blobs.superseded_by.preview == "Store vectors in Chroma, derived from SQLite through an outbox"
    assert blobs.said_at == SAID_AT  # the timestamp of its source message at line 12
    assert blobs.supersedes == []
    assert [(r.type, r.direction, r.idea.id) for r in blobs.relations] == [
        ("supersedes", "incoming", str(ideas["chroma"]))
    ]
    assert [e.name for e in blobs.entities] == ["SQLite"]


async def test_show_answered_question_and_its_answer(store: Store) -> None:
    memory = await seed(store)
    ideas = memory.ideas

    question = await show(store.db, f"#{ideas['offline']}")
    answer = await show(store.db, f"idea:{ideas['minilm']}")

    assert question.intent == "question"
    assert question.answered_at == SAID_AT
    assert question.answered_by is not None
    assert question.answered_by.id == str(ideas["minilm"])
    assert question.answered_by.intent == "solution"
    assert [(r.type, r.direction, r.idea.id) for r in question.relations] == [
        ("answers", "incoming", str(ideas["minilm"]))
    ]
    assert [b.id for b in answer.answers] == [str(ideas["offline"])]
    assert answer.answered_by is None
    assert answer.session is not None and answer.session.topic == "Indexing agent tools"

    todo = await show(store.db, ideas["triggers"])
    assert todo.completed_at == SAID_AT
    assert todo.answered_at is None


async def test_show_span_with_its_ideas_parent_and_children(store: Store) -> None:
    memory = await seed(store)
    ideas, spans = memory.ideas, memory.spans

    vectors = await show(store.db, f"s{spans['vectors']}")

    assert vectors.id == f"s{spans['vectors']}"
    assert vectors.kind == "span"
    assert vectors.intent is None
    assert vectors.title == "Vector index with Chroma"
    assert vectors.content == "Choosing Chroma for embeddings, kept in step with SQLite by an outbox"
    assert [(b.id, b.superseded) for b in vectors.ideas] == [
        (str(ideas["blobs"]), True),
        (str(ideas["chroma"]), False),
    ]
    assert vectors.idea_count == 2
    assert vectors.depth == 1
    assert vectors.session is not None
    assert vectors.session.id == MAIN
    assert vectors.session.topic == "Storage design"  # the parent span
    assert vectors.session.topic_id == f"s{spans['storage']}"
    # The span has no file of its own: its lines are the session's transcript's.
    assert vectors.source.file == "/t/s-main.jsonl"
    assert vectors.source.line == 10
    assert vectors.end_line == 30
    assert vectors.said_at == SAID_AT  # dated by its first dated line (12), line 10 has no message

    storage = await show(store.db, f"span:{spans['storage']}")
    assert [(c.id, c.name, c.start_line, c.end_line, c.ideas) for c in storage.children] == [
        (f"s{spans['vectors']}", "Vector index with Chroma", 10, 30, 2)
    ]
    assert storage.ideas == [] and storage.idea_count == 0
    assert storage.session is not None and storage.session.topic is None

    finished = await show(store.db, f"s{spans['finished']}")
    assert finished.content == "Release checklist"  # no summary: the name stands in


async def test_show_message_with_the_ideas_taken_from_it(store: Store) -> None:
    memory = await seed(store)
    message = await store.db.scalar("SELECT id FROM messages WHERE line = 12")

    shown = await show(store.db, f"m{message}")

    assert shown.id == f"m{message}"
    assert shown.kind == "message"
    assert shown.intent == "user"
    assert shown.content == "Let's keep the vectors as blobs in SQLite for now."
    assert shown.said_at == SAID_AT
    assert shown.source.file == "/t/s-main.jsonl"
    assert shown.source.line == 12
    assert shown.end_line is None
    assert [b.id for b in shown.ideas] == [str(memory.ideas["blobs"])]
    assert shown.session is not None
    assert shown.session.project_name == "cairn"
    # Lines 1-40 and 10-30 both hold line 12; the deeper span is the topic.
    assert shown.session.topic == "Vector index with Chroma"
    assert shown.session.topic_id == f"s{memory.spans['vectors']}"
    assert shown.relations == [] and shown.importance is None


async def test_show_unknown_and_malformed_ids(store: Store) -> None:
    await seed(store)

    with pytest.raises(ItemNotFoundError, match=r"no idea #99999 .*search again"):
        await show(store.db, "99999")
    with pytest.raises(ItemNotFoundError, match="no topic span s99999"):
        await show(store.db, "s99999")
    with pytest.raises(ItemNotFoundError, match="no message m99999"):
        await show(store.db, "m99999")
    with pytest.raises(BadItemIdError, match="is not an item id"):
        await show(store.db, "x12")
    with pytest.raises(BadItemIdError):
        await show(store.db, 0)


# ---------------------------------------------------------------------------------------------------
# timeline


@dataclass(frozen=True)
class Scene:
    ideas: dict[str, int]
    spans: dict[str, int]
    messages: dict[str, int]


def at(hour: int, minute: int = 0) -> str:
    return f"2025-03-01T{hour:02d}:{minute:02d}:00.000Z"


async def add_message(
    conn: aiosqlite.Connection, session: str, file: int, line: int, when: str, text: str
) -> int:
    return await insert(
        conn,
        "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, text, "
        "content_hash, timestamp) VALUES (?, ?, ?, ?, 0, 10, 'assistant', 'text', ?, ?, ?)",
        (session, file, line, line, text, message_hash("assistant", "text", text), when),
    )


async def scene(store: Store, *, crowd: int = 0) -> Scene:
    """Project `alpha` with sessions A and B interleaved in time, project `beta` (session C) said in
    between, and session D with no project; `crowd` more (empty) beta sessions make alpha a small
    project, which timeline reads through its sessions rather than along the said_at index."""
    async with store.db.write() as conn:
        alpha = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/p/alpha', 'alpha')")
        beta = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/p/beta', 'beta')")
        await conn.executemany(
            "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
            [
                ("A", alpha, at(0, 30), at(5)),
                ("B", alpha, at(1, 30), at(6)),
                ("C", beta, at(2), at(4)),
                ("D", None, at(0), at(3)),
                *((f"crowd-{n}", beta, None, None) for n in range(crowd)),
            ],
        )
        files = {
            name: await insert(
                conn,
                "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)",
                (f"/t/{name}.jsonl", name),
            )
            for name in "ABCD"
        }
        spans = {
            "a": await add_span(conn, "A", "Alpha work", 10, summary="Working on alpha"),
            "a2": await add_span(conn, "A", "Second alpha topic", 30),
        }
        messages = {
            "a30": await add_message(conn, "A", files["A"], 30, at(3), "Now the second topic."),
            "b40": await add_message(conn, "B", files["B"], 40, at(4), "Looking at the cache."),
        }
        ideas: dict[str, int] = {}

        async def idea(name: str, session: str, line: int, when: str, intent: str = "decision") -> None:
            ideas[name] = await add_idea(
                conn, session, intent, f"Idea {name}", line, file_id=files[session], said_at=when
            )

        await idea("a1", "A", 10, at(1))
        await idea("b1", "B", 10, at(2))
        await idea("c2", "C", 5, at(2, 30))
        await idea("a2", "A", 31, at(3))
        await idea("c1", "C", 6, at(3, 30))
        await idea("b2", "B", 40, at(4))
        await idea("b3", "B", 41, at(4))  # said at the same time as b2: id order settles it
        await idea("a3", "A", 50, at(5))
        await idea("b4", "B", 50, at(6))
        await idea("d1", "D", 1, at(1))
        await idea("d2", "D", 2, at(2))
        await conn.execute("UPDATE ideas SET superseded_by = ? WHERE id = ?", (ideas["b4"], ideas["a3"]))
    return Scene(ideas, spans, messages)


def names(scene: Scene, briefs: list[IdeaBrief]) -> list[str]:
    by_id = {str(v): k for k, v in scene.ideas.items()}
    return [by_id[b.id] for b in briefs]


@pytest.mark.parametrize("crowd", [0, 60])
async def test_timeline_around_an_idea_spans_the_project_sessions_only(store: Store, crowd: int) -> None:
    s = await scene(store, crowd=crowd)

    around = await timeline(store.db, s.ideas["b2"], before=10, after=10)

    assert around.anchor.id == str(s.ideas["b2"])
    assert around.anchor.kind == "idea"
    assert around.anchor.said_at == at(4)
    assert names(s, around.before) == ["a1", "b1", "a2"]  # beta's c1, c2 and D's ideas left out
    assert names(s, around.after) == ["b3", "a3", "b4"]
    assert [b.superseded for b in around.after] == [False, True, False]
    assert around.scope == "project"
    assert around.project == "/p/alpha"
    assert around.project_name == "alpha"
    assert list(around.sessions) == ["B", "A"]
    a = around.sessions["A"]
    assert (a.project_name, a.started_at, a.last_at, a.topics, a.first_topic) == (
        "alpha",
        at(0, 30),
        at(5),
        2,
        "Alpha work",
    )
    assert around.sessions["B"].topics == 0 and around.sessions["B"].first_topic is None


async def test_timeline_limits_ties_and_zero(store: Store) -> None:
    s = await scene(store)

    near = await timeline(store.db, str(s.ideas["b2"]), before=1, after=2)
    assert names(s, near.before) == ["a2"]  # the closest one, not the oldest
    assert names(s, near.after) == ["b3", "a3"]

    tie = await timeline(store.db, s.ideas["b3"], before=2, after=1)
    assert names(s, tie.before) == ["a2", "b2"]  # same said_at, lower id: before
    assert names(s, tie.after) == ["a3"]

    none_before = await timeline(store.db, s.ideas["b3"], before=0)
    assert none_before.before == []
    assert names(s, none_before.after) == ["a3", "b4"]

    negative = await timeline(store.db, s.ideas["a2"], before=-4, after=-1)
    assert negative.before == [] and negative.after == []
    assert list(negative.sessions) == ["A"]


async def test_timeline_clamps_to_fifty_a_side(store: Store) -> None:
    async with store.db.write() as conn:
        await conn.execute("INSERT INTO sessions (id) VALUES ('big')")
        ids = [
            await add_idea(
                conn, "big", "context", f"Fact number {n}", n, said_at=f"2025-04-01T00:{n:02d}:00.000Z"
            )
            for n in range(60)
        ]

    middle = await timeline(store.db, ids[55], before=500, after=500)

    assert [b.id for b in middle.before] == [str(i) for i in ids[5:55]]
    assert [b.id for b in middle.after] == [str(i) for i in ids[56:]]
    assert middle.scope == "session"  # the session has no project
    assert middle.project is None


async def test_timeline_around_a_message_and_a_span(store: Store) -> None:
    s = await scene(store)

    # A message anchors at its timestamp; ideas said at that very time (b2, b3) come after it.
    message = await timeline(store.db, f"m{s.messages['b40']}", before=2, after=2)
    assert message.anchor.kind == "message"
    assert message.anchor.intent == "assistant"
    assert message.anchor.preview == "Looking at the cache."
    assert message.anchor.said_at == at(4)
    assert names(s, message.before) == ["b1", "a2"]
    assert names(s, message.after) == ["b2", "b3"]
    assert message.scope == "project"

    # A span starts when the message at its first line was said (line 30 of A's transcript: 03:00).
    span = await timeline(store.db, f"s{s.spans['a2']}", before=1, after=2)
    assert span.anchor.kind == "span"
    assert span.anchor.title == "Second alpha topic"
    assert span.anchor.preview == "Second alpha topic"
    assert span.anchor.said_at == at(3)
    assert names(s, span.before) == ["b1"]
    assert names(s, span.after) == ["a2", "b2"]
    assert set(span.sessions) == {"A", "B"}


async def test_timeline_of_a_session_without_project_and_unknown_anchor(store: Store) -> None:
    s = await scene(store)

    lone = await timeline(store.db, s.ideas["d2"])
    assert lone.scope == "session"
    assert names(s, lone.before) == ["d1"]
    assert lone.after == []
    assert lone.sessions["D"].project is None

    with pytest.raises(ItemNotFoundError, match="no idea #424242"):
        await timeline(store.db, 424242)
    with pytest.raises(ItemNotFoundError, match="no topic span s424242"):
        await timeline(store.db, "s424242")
    with pytest.raises(ItemNotFoundError, match="no message m424242"):
        await timeline(store.db, "m424242")


# ---------------------------------------------------------------------------------------------------
# open items


async def open_scene(store: Store) -> dict[str, int]:
    """The seeded memory plus an open question in webapp and a superseded open question in cairn."""
    memory = await seed(store)
    async with store.db.write() as conn:
        webapp = await add_idea(conn, OTHER, "question", "Should the button be blue?", 7, said_at=at(9))
        stale = await add_idea(
            conn, MAIN, "question", "Which vector store?", 11, superseded_by=memory.ideas["chroma"]
        )
    return {**memory.ideas, "webapp": webapp, "stale": stale, "tools": memory.spans["tools"]}


async def test_open_items_by_project_name_and_path(store: Store) -> None:
    ideas = await open_scene(store)

    for project in ["cairn", "/work/cairn", "/work/cairn/"]:
        found = await open_items(store.db, project=project)
        # newest first; the answered question and the superseded one are left out
        assert [q.id for q in found.questions] == [str(ideas["locked"]), str(ideas["duplicates"])]
        assert [q.intent for q in found.questions] == ["problem", "question"]
        assert [t.id for t in found.todos] == [str(ideas["write_tests"])]  # the completed one left out
        assert (found.question_count, found.todo_count, found.notice) == (2, 1, None)

    first = (await open_items(store.db, project="cairn")).questions[0]
    assert first.preview == "SQLite reports database is locked with several writers"
    assert first.session is not None
    assert (first.session.id, first.session.project, first.session.project_name) == (
        MAIN,
        "/work/cairn",
        "cairn",
    )
    assert first.session.topic == "Indexing agent tools"
    assert first.session.topic_id == f"s{ideas['tools']}"


async def test_open_items_everywhere_by_session_and_without_todos(store: Store) -> None:
    ideas = await open_scene(store)

    everywhere = await open_items(store.db)
    assert [q.id for q in everywhere.questions] == [
        str(ideas["locked"]),
        str(ideas["duplicates"]),
        str(ideas["webapp"]),
    ]

    other = await open_items(store.db, session=OTHER)
    assert [q.id for q in other.questions] == [str(ideas["webapp"])]
    assert other.todos == []
    assert other.questions[0].said_at == at(9)
    assert other.questions[0].session is not None
    assert other.questions[0].session.project_name == "webapp"

    no_todos = await open_items(store.db, session=MAIN, include_todos=False)
    assert len(no_todos.questions) == 2
    assert no_todos.todos == [] and no_todos.todo_count == 0

    capped = await open_items(store.db, project="cairn", limit=0)
    assert [q.id for q in capped.questions] == [str(ideas["locked"])]
    assert capped.question_count == 2


async def test_open_items_unknown_project_or_session(store: Store) -> None:
    await open_scene(store)

    unknown = await open_items(store.db, project="nowhere")
    assert unknown.questions == [] and unknown.todos == []
    assert unknown.notice is not None
    assert "no project matches 'nowhere'" in unknown.notice

    missing = await open_items(store.db, session="no-such-session")
    assert missing.questions == []
    assert missing.notice is not None and "no-such-session" in missing.notice
