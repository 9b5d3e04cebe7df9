"""A date the query names ("on 7 July, 2023") is a time window search weighs, not words to match."""

from __future__ import annotations

from datetime import datetime

from cairn.search.dates import dates_in
from cairn.search.hybrid import search
from cairn.search.models import SearchRequest
from cairn.store.store import Store, message_hash
from tests.search.helpers import ids
from tests.tools.memory import insert


def test_complete_dates_become_windows_and_leave_the_text() -> None:
    for text in (
        "What did Maria plan on the evening of 7 July, 2023?",
        "What did Maria plan on July 7th, 2023?",
        "What did Maria plan on 2023-07-07?",
    ):
        found = dates_in(text)
        assert [(w.start.date(), w.end.date()) for w in found.windows] == [
            (datetime(2023, 7, 6).date(), datetime(2023, 7, 8).date())
        ], text
        assert "2023" not in found.rest and "7" not in found.rest.split()
        assert found.rest.startswith("What did Maria plan")
        assert found.holds("2023-07-07T21:30:00.000Z")
        assert not found.holds("2023-07-09T09:00:00.000Z")

    month = dates_in("Which class did Maria start in December 2023?")
    assert month.rest == "Which class did Maria start in ?"
    assert month.holds("2023-12-31T20:00:00.000Z") and not month.holds("2023-11-20T10:00:00.000Z")


def test_a_bare_month_or_year_or_an_impossible_day_is_no_window() -> None:
    for text in ("When did Melanie go camping in June?", "How often did we deploy in 2023?", "We may go"):
        found = dates_in(text)
        assert found.windows == () and found.rest == text
    assert not dates_in("on 30 February, 2023").holds("2023-02-28T10:00:00.000Z")


async def _days(store: Store, chatter: int = 0) -> dict[str, int]:
    """Two sessions a month apart: the answer said on 7 July 2023 holds no word of the question but
    the name; a turn of 1 August holds the name and the month's word, and `chatter` more August turns
    ask Maria where she is going."""
    turns = [
        ("july", "2023-07-07T19:00:00.000Z", "Maria: I'm off to have dinner with friends from the gym!"),
        ("august", "2023-08-01T10:00:00.000Z", "John: Maria, July was a busy month for you"),
    ]
    turns += [
        (f"aug{n}", f"2023-08-{n + 2:02d}T10:00:00.000Z", f"John: Maria, where are you going later, {n}?")
        for n in range(chatter)
    ]
    found = {}
    async with store.db.write() as conn:
        project = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/chat', 'chat')")
        for session, when, text in turns:
            await conn.execute(
                "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
                (session, project, when, when),
            )
            file_id = await insert(
                conn,
                "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)",
                (f"/t/{session}.jsonl", session),
            )
            found[session] = await insert(
                conn,
                "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, "
                "kind, text, content_hash, timestamp) VALUES (?, ?, 1, 1, 0, 50, 'user', 'text', ?, ?, ?)",
                (session, file_id, text, message_hash("user", "text", text), when),
            )
    await store.sync_vectors()
    return found


async def test_what_was_said_on_the_named_day_ranks_first(store: Store) -> None:
    found = await _days(store)
    query = "What did Maria plan to do later on the evening of 7 July, 2023?"
    for mode in ("hybrid", "keyword"):
        request = SearchRequest(query=query, mode=mode, kind="messages", min_score=0)
        page = await search(store.db, store.vectors, store.settings, request, record_usage=False)
        assert ids(page)[0] == f"m{found['july']}", mode

    # Without the setting the date is plain words again, and "July" wins the other turn first place.
    plain = store.settings.model_copy(update={"search_date_weight": 0.0})
    request = SearchRequest(query=query, mode="keyword", kind="messages", min_score=0)
    page = await search(store.db, store.vectors, plain, request, record_usage=False)
    assert ids(page)[0] == f"m{found['august']}"


async def test_a_narrow_window_draws_its_items_as_candidates(store: Store) -> None:
    # Twelve August turns are nearer the question than the answer, and semantic search keeps ten
    # candidates: the answer is found only because it was said on the day the question names.
    found = await _days(store, chatter=12)
    answer = f"m{found['july']}"
    request = SearchRequest(
        query="Where was Maria going later on 7 July, 2023?",
        mode="semantic",
        kind="messages",
        min_score=0,
        limit=50,
    )
    for weight, expected in ((0.2, True), (0.0, False)):
        settings = store.settings.model_copy(update={"search_candidates": 10, "search_date_weight": weight})
        page = await search(store.db, store.vectors, settings, request, record_usage=False)
        assert (answer in ids(page)) is expected, weight
    assert ids(page)  # the August turns are still found without the date
