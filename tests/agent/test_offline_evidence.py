"""Offline ideas that hold the evidence, where the session's structure shows it: the
person's decision on an offer (a refusal reads with the offer it turns down), the choice a session ends
on (an open question with its options, settled once a later batch answers it).

Which sentences state a decision, problem or fix is the learned model's call, tested in
`test_offline_learned.py` and measured by `cairn eval sessions`. Cases are excerpts of real Claude Code
sessions (`tests/fixtures/transcripts`, entireio/cli, MIT) or small transcripts written here, indexed
through the real agent and executor with the offline model.
"""

from __future__ import annotations

from pathlib import Path

from cairn.config import Settings
from cairn.recall.ops import context_for
from cairn.store.store import Store
from tests.agent.offline_helpers import _index_all
from tests.helpers.builders import Transcript
from tests.helpers.paths import REAL_TRANSCRIPTS

GC_SESSION = REAL_TRANSCRIPTS / "entireio-cli" / "03a1382e-ecd5-42c4-b3d4-5c659e165904.jsonl"


def _excerpt(source: Path, target: Path, *spans: tuple[int, int]) -> dict[int, int]:
    """Write the physical lines `spans` (1-based, inclusive) of `source` to `target`, in order; the
    excerpt's line of each source line."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [n for start, end in spans for n in range(start, end + 1)]
    target.write_text("".join(lines[n - 1] for n in kept), encoding="utf-8")
    return {n: i + 1 for i, n in enumerate(kept)}


async def _ideas(store: Store) -> dict[int, list[tuple[str, str]]]:
    rows = await store.db.fetchall("SELECT source_line, intent, content FROM ideas ORDER BY id")
    found: dict[int, list[tuple[str, str]]] = {}
    for row in rows:
        found.setdefault(row["source_line"], []).append((row["intent"], row["content"]))
    return found


OFFER = "Want me to also set `gc.auto 0` on your repo now?"


async def test_an_offer_turned_down_is_a_refusal_with_the_offer(settings: Settings, tmp_path: Path) -> None:
    """ "no don't set it" is no decision to set it: the idea holds the offer and the refusal."""
    t = Transcript(tmp_path / "cli")
    t.user("why does the worktree index keep breaking?")
    t.say("git gc --auto prunes loose objects the worktree index still points at. " + OFFER)
    t.user("no don't set it, let's see if it keeps happening")
    path = t.append(tmp_path / "offer.jsonl")
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    [(intent, refusal)] = ideas[3]
    assert intent == "context" and refusal.startswith("Declined: " + OFFER)
    assert "don't set it" in refusal
    assert not any(intent == "decision" for line in ideas for intent, _ in ideas[line])


async def test_an_offer_taken_up_to_look_further_and_a_bare_nod_are_no_ideas(
    settings: Settings, tmp_path: Path
) -> None:
    # Line 60 offers "Want me to look into whether your gc config or any hooks might be triggering this?"
    # and 64 says "Yeah check what's triggering gc": the next step of the work, not a decision. "yeah
    # close it" (884) on "Want me to close it?" is a nod with one word of its own: no idea.
    path = tmp_path / "gc.jsonl"
    at = _excerpt(GC_SESSION, path, (55, 66), (180, 225), (860, 902))
    async with await Store.open(settings) as store:
        [(_planned, _result, _calls, stats)] = await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    assert stats.rejected == 0 and ideas
    assert not [content for line in ideas for _i, content in ideas[line] if "(on: Want me to look" in content]
    assert at[884] not in ideas


async def test_the_real_refusal_of_gc_auto_0_is_stored_as_declined(
    settings: Settings, tmp_path: Path
) -> None:
    # Line 216 offers "Want me to also set `gc.auto 0` on your repo now?"; 221: "no don't set it, let's
    # see if it keeps happening".
    path = tmp_path / "gc.jsonl"
    at = _excerpt(GC_SESSION, path, (55, 66), (180, 225), (860, 902))
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    [(intent, offer)] = ideas[at[221]]
    assert intent == "context" and offer.startswith("Declined: ")
    assert "don't set it" in offer and "gc.auto 0" in offer


PAT_SESSION = REAL_TRANSCRIPTS / "entireio-cli" / "2cfdacb8-9317-430f-8975-0709d2837d1c.jsonl"


async def test_the_choice_a_session_ends_on_is_an_open_question_with_its_options(
    settings: Settings, tmp_path: Path
) -> None:
    # Issue 29: 230-232 lay out "**Option 1: Fine-grained PAT (quick)**" and "**Option 2: GitHub App (proper
    # for orgs)**" and ends "Which way do you want to go?"; the session ends there, unanswered.
    path = tmp_path / "pat.jsonl"
    at = _excerpt(PAT_SESSION, path, (225, 234))
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
        cwd = str(await store.db.scalar("SELECT path FROM projects"))
        start = await context_for(store, "SessionStart", cwd, None)
    # 230 and 232 are one API message (thinking between): stored as one message from 230.
    [(_intent, content)] = [idea for idea in ideas[at[230]] if idea[0] == "question"]
    assert content.startswith("Which way do you want to go?")
    assert "Option 1: Fine-grained PAT (quick)" in content and "Option 2: GitHub App" in content
    assert (
        start.text is not None and "Open questions:" in start.text and "Which way do you want" in start.text
    )


async def test_a_choice_answered_in_a_later_batch_is_not_listed_open(
    settings: Settings, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "shop")
    t.user("the cache layer for the price service: what should back it?")
    t.say("**Option A: Redis**\n\nFast, one more service.\n\n**Option B: Postgres**\n\nNo new service.\n\n"
          "Which one do you prefer for the price cache?")  # fmt: skip
    path = t.append(tmp_path / "live.jsonl")  # `append` below adds only the lines said since
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path], mode="continuous")
        cwd = str(await store.db.scalar("SELECT path FROM projects"))
        first = await context_for(store, "SessionStart", cwd, None)
        assert first.text is not None and "Option A: Redis; Option B: Postgres" in first.text
        t.user("Postgres, we run it anyway")
        t.say("Done: the price cache now lives in a Postgres unlogged table.")
        t.append(path)
        await _index_all(store, settings, [path], mode="continuous")
        later = await context_for(store, "SessionStart", cwd, None)
    assert later.text is None or "Which one do you prefer" not in later.text, "the person answered it"
