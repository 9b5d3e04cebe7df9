"""Offline ideas that hold the evidence (issue 15): the statements real sessions make that someone asks
about weeks later — answers to the person's questions, the person's decisions on an offer, the cause
once it is seen, summaries of work done, fixes stated as such — become ideas at their own line.

Every case is an excerpt of a real Claude Code session (`tests/fixtures/transcripts`, entireio/cli
and chiphuyen/sniffly, MIT), indexed through the real agent and executor with the offline model.
"""

from __future__ import annotations

from pathlib import Path

from cairn.config import Settings
from cairn.recall.ops import context_for
from cairn.store.store import Store
from tests.agent.test_offline_agent import _index_all
from tests.builders import Transcript
from tests.conftest import REAL_TRANSCRIPTS

GC_SESSION = REAL_TRANSCRIPTS / "entireio-cli" / "03a1382e-ecd5-42c4-b3d4-5c659e165904.jsonl"
FORK_SESSION = REAL_TRANSCRIPTS / "entireio-cli" / "2cfdacb8-9317-430f-8975-0709d2837d1c.jsonl"
REBASE_SESSION = REAL_TRANSCRIPTS / "entireio-cli" / "5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl"
MUSIC_SESSION = REAL_TRANSCRIPTS / "chiphuyen-sniffly" / "d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"


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


async def test_answers_to_the_persons_questions_and_their_decisions_on_offers_are_ideas(
    settings: Settings, tmp_path: Path
) -> None:
    # Line 184 asks "is it problematic, data wise?" about turning auto-GC off; 185 answers "Disabling
    # auto-GC won't lose any data, but it will cause **disk bloat**:" above a list. Line 216 offers
    # "Want me to also set `gc.auto 0` on your repo now?"; 221: "no don't set it, let's see if it keeps
    # happening". Line 876 is the person rejecting a tool call with "is 241 really still a problem?",
    # answered at 877. Line 894 asks for the auto-summarization setting; 901 answers with a path and a
    # JSON block.
    path = tmp_path / "gc.jsonl"
    at = _excerpt(GC_SESSION, path, (55, 66), (180, 225), (860, 902))
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    assert ("conclusion", "Disabling auto-GC won't lose any data, but it will cause disk bloat.") in ideas[
        at[185]
    ]
    # Turned down: no decision, the refusal with the offer, and the suggestion (line 216's own advice
    # to set gc.auto 0, if it was an idea) is never handed on as what was done.
    [(intent, offer)] = ideas[at[221]]
    assert intent == "context" and offer.startswith("Declined: ")
    assert "don't set it" in offer and "gc.auto 0" in offer
    assert ("question", "Is 241 really still a problem?") in ideas[at[876]]
    said = " ".join(content for _intent, content in ideas[at[877]])
    assert "GC pruning objects is harmless" in said and "The real fix is ENT-242." in said
    setting = " ".join(content for _intent, content in ideas[at[901]])
    assert ".entire/settings.json" in setting and '"summarize": { "enabled": true }' in setting
    # Line 60 offers "Want me to look into whether your gc config or any hooks might be triggering this?"
    # and 64 says "Yeah check what's triggering gc": the next step of the work, not a decision.
    assert not [
        content for line in ideas for intent, content in ideas[line] if "(on: Want me to look" in content
    ]
    # "yeah close it" (884) on "Want me to close it?" is a nod with one word of its own: no idea.
    assert at[884] not in ideas


async def test_the_cause_once_seen_is_the_sentence_after_i_see_the_problem(
    settings: Settings, tmp_path: Path
) -> None:
    # "I see the problem! The current mapping is too narrow …" (71); "I notice from the output that
    # almost everything is getting mapped to **waltz rhythm** …" (117). In the rebase session: "Now I
    # understand the issue. During `git rebase`, git calls prepare-commit-msg …" (19-21) and "Done.
    # The fix adds detection for git "sequence operations" …" (57-58).
    music = tmp_path / "music.jsonl"
    music.write_bytes(MUSIC_SESSION.read_bytes())
    rebase = tmp_path / "rebase.jsonl"
    rebase.write_bytes(REBASE_SESSION.read_bytes())
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [music, rebase])
        rows = await store.db.fetchall(
            "SELECT f.path, i.source_line, i.intent, i.content FROM ideas AS i"
            " JOIN transcript_files AS f ON f.id = i.source_file_id"
        )
    ideas = {(Path(r["path"]).stem, r["source_line"]): (r["intent"], r["content"]) for r in rows}
    intent, content = ideas[("music", 71)]
    assert intent == "conclusion" and content.startswith(
        "I see the problem! The current mapping is too narrow"
    )
    assert ideas[("music", 117)][0] == "conclusion" and "waltz rhythm" in ideas[("music", 117)][1]
    intent, content = ideas[("rebase", 19)]
    assert intent == "conclusion" and 'doesn\'t pass a special "rebase" source' in content
    assert ideas[("rebase", 57)] == (
        "solution",
        'The fix adds detection for git "sequence operations" (rebase, cherry-pick, revert) at the start '
        "of `PrepareCommitMsg`.",
    )
    # A realisation with nothing after it says nothing: no idea reads only "I see the problem!".
    assert not any(
        content.rstrip("!.") in ("I see the problem", "Found it") for _i, content in ideas.values()
    )


async def test_summaries_of_work_done_hold_their_design_decisions_flow_and_limits(
    settings: Settings, tmp_path: Path
) -> None:
    # "Here's the flow:" above three bullets (73); "Here's what I built: … **How it works:** … **Key
    # design decisions:** … **Limitation:** For private forks, …" (118); "Key changes:" (178).
    path = tmp_path / "fork.jsonl"
    path.write_bytes(FORK_SESSION.read_bytes())
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    [(intent, flow)] = ideas[73]
    assert intent == "conclusion" and "Entire-Checkpoint" in flow and "12 lowercase hex characters" in flow
    built = dict(ideas[118])
    assert built["decision"].startswith("Selective import — only copies checkpoint directories")
    assert "; Idempotent — exits cleanly" in built["decision"]
    assert built["problem"].startswith("For private forks, you'd pass a PAT")
    assert "conclusion" in built  # how it works
    assert dict(ideas[178])["solution"].startswith("Removed `actions/checkout` — no full repo clone")


async def test_findings_todos_and_pasted_errors_of_an_investigation(
    settings: Settings, tmp_path: Path
) -> None:
    # "Here's the root cause chain:" above numbered causes (164); "Done. Next time you do a
    # commit/push, check `/tmp/entire-index-debug.log`." (631); "**Post-commit hook changed the
    # index.** … That's the condensation code — somewhere in `PostCommit()` go-git is writing to the
    # worktree index." (640); the person pasting "fatal: unable to read e53647ba…" (660).
    path = tmp_path / "gc.jsonl"
    at = _excerpt(GC_SESSION, path, (160, 166), (625, 662))
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    chain = dict(ideas[at[164]])["conclusion"]
    assert chain.startswith("Go-git's `SetEncodedObject` creates loose objects")
    assert ("todo", "Next time you do a commit/push, check `/tmp/entire-index-debug.log`.") in ideas[at[631]]
    found = dict(ideas[at[640]])["conclusion"]
    assert "That's the condensation code" in found
    pasted = dict(ideas[at[660]])["problem"]
    assert "fatal: unable to read e53647ba1f1e5203bedff558b482f178db045555" in pasted


async def test_an_idea_keeps_the_command_its_lead_in_introduces(settings: Settings, tmp_path: Path) -> None:
    # Issue 29: line 45 says "The fix is to rebuild the worktree's index. The simplest way:" above a code
    # block holding `git read-tree HEAD`; the idea kept the lead-in and lost the command.
    path = tmp_path / "fix.jsonl"
    at = _excerpt(GC_SESSION, path, (40, 46))
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        ideas = await _ideas(store)
    said = " ".join(content for _intent, content in ideas.get(at[45], []))
    assert "rebuild the worktree's index" in said and "git read-tree HEAD" in said, said


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
    path = t.write(tmp_path / "live.jsonl")
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
