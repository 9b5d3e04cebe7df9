"""Specificity: which of a prompt's key terms an idea holds (crude stems, the search's prefix rule), how rare
each term is over the stored messages of a real store (`ln((N + PRIOR) / (df + 1))`, nothing for a term in
more than a tenth of them), and their sum."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.recall.specific import COMMON_SHARE, PRIOR, TermRarity, held_terms, prompt_terms, specificity
from cairn.search.query import MIN_PREFIX
from cairn.store.store import Store
from tests.helpers.builders import Transcript

# ---------------------------------------------------------------------------------------------------
# Which terms a text holds


@pytest.mark.parametrize(
    ("term", "text"),
    [
        ("test", "the tests pass"),  # plural in the text
        ("tests", "add a test"),  # plural in the prompt
        ("testing", "the tests pass"),  # "-ing" and plural share the stem "test"
        ("tested", "testing it now"),
        ("fires", "the hook kept firing"),  # "fires" and "firing" both cut to "fir"
        ("firing", "the hook fires twice"),
        ("firing", "fire the hook"),  # the stem "fir" starts "fire"
        ("fire", "the hook kept firing"),  # "fire" loses its final e: "fir", as "firing" does
        ("cache", "caching the index"),
        ("caching", "a cache miss"),
        ("auth", "the authentication middleware"),  # 4+ characters: the start of a word
        ("pendingcheckpointid", "PendingCheckpointID was reused"),  # compared lowercased
        ("api", "list the apis"),  # a short term meets its plural through the stem
        ("ci", "the ci job failed"),  # a short term as a whole word
        ("gc", "run git gc now"),
    ],
)
def test_a_term_is_held(term: str, text: str) -> None:
    assert held_terms([term], text) == [term]


@pytest.mark.parametrize(
    ("term", "text"),
    [
        ("ci", "the circle of life"),  # under MIN_PREFIX: never the start of a longer word
        ("api", "the apikey is set"),
        ("gc", "gcloud login"),
        ("authentication", "auth middleware"),  # a longer term is not held by its own prefix
        ("deploy", "redeploy the app"),  # a start of a word, not the inside of one
        ("rebase", "nothing related here"),
    ],
)
def test_a_term_is_not_held(term: str, text: str) -> None:
    assert held_terms([term], text) == []


def test_the_prefix_rule_starts_at_min_prefix() -> None:
    assert MIN_PREFIX == 4
    assert held_terms(["wor"], "worktree status") == []
    assert held_terms(["work"], "worktree status") == ["work"]


def test_held_terms_keep_the_prompts_order_and_leave_out_the_rest() -> None:
    text = "Switched the lint fix to exec.CommandContext after golangci-lint complained"
    terms = ["golangci", "rebase", "commandcontext", "lint", "ci"]
    assert held_terms(terms, text) == ["golangci", "commandcontext", "lint"]


def test_prompt_terms_are_the_searchs_key_terms() -> None:
    assert prompt_terms("How do we handle the retries?") == ("handle", "retries")
    assert prompt_terms("why is it so?") == ("why", "is", "it", "so")  # nothing but stopwords: all of them
    assert prompt_terms("?!") == ()


# ---------------------------------------------------------------------------------------------------
# Rarity over a real store

MESSAGES = 100
COMMON = 40  # "deploy": more than a tenth of MESSAGES + PRIOR
AT_CAP = 30  # "widget": exactly a tenth, still counted
OVER_CAP = 31  # "gadget": one more, not counted


def transcript() -> Transcript:
    """MESSAGES prompts and replies, each one message; the counts above say which hold which word."""
    t = Transcript("/work/proj")
    for i in range(MESSAGES):
        words = ["message", f"number{i}"]
        words += ["deploy"] * (i < COMMON) + ["widget"] * (i < AT_CAP) + ["gadget"] * (i < OVER_CAP)
        words += ["zanzibar"] * (i in (5, 77)) + ["cat"] * (i == 9) + ["category"] * (i == 10)
        text = "We talked about the " + " ".join(words) + " today."
        if i % 2:
            t.say(text)
        else:
            t.user(text)
    return t


@pytest.fixture
async def captured(settings: Settings, tmp_path: Path) -> AsyncIterator[Store]:
    """A real store holding `transcript()`, captured the way `cairn sync` captures it."""
    path = transcript().write(tmp_path / "proj" / "session.jsonl")
    async with await Store.open(settings) as store:
        report = await sync_paths(store, [path], settings, vectors=False)
        assert not report.errors
        assert await store.db.scalar("SELECT count(*) FROM messages") == MESSAGES
        yield store


def expected(df: int) -> float:
    return math.log((MESSAGES + PRIOR) / (df + 1))


async def test_idf_follows_the_formula_and_drops_common_terms(captured: Store) -> None:
    assert int((MESSAGES + PRIOR) * COMMON_SHARE) == AT_CAP  # the cap the counts were chosen around
    idf = await TermRarity(captured.db).idf(["deploy", "widget", "gadget", "zanzibar", "absent"])
    assert idf["deploy"] == 0.0
    assert idf["gadget"] == 0.0
    assert idf["widget"] == pytest.approx(expected(AT_CAP)) and idf["widget"] > 0
    assert idf["zanzibar"] == pytest.approx(expected(2)) == pytest.approx(math.log(100))
    assert idf["absent"] == pytest.approx(expected(0))
    assert idf["absent"] > idf["zanzibar"] > idf["widget"] > 0


async def test_idf_counts_prefixes_only_for_long_terms(captured: Store) -> None:
    idf = await TermRarity(captured.db).idf(["zanzi", "categ", "cat", "deploying"])
    assert idf["zanzi"] == pytest.approx(expected(2))  # the start of "zanzibar", in two messages
    assert idf["categ"] == pytest.approx(expected(1))  # "category"
    assert idf["cat"] == pytest.approx(expected(1))  # "cat" alone, not "category"
    assert idf["deploying"] == 0.0  # the index's porter stemmer makes it "deploy"


async def test_each_term_is_looked_up_once(captured: Store, settings: Settings, tmp_path: Path) -> None:
    rarity = TermRarity(captured.db)
    before = await rarity.idf(["zanzibar"])
    more = Transcript("/work/proj")
    for i in range(5):
        more.user(f"zanzibar again, take {i}")
    report = await sync_paths(
        captured, [more.write(tmp_path / "proj" / "more.jsonl")], settings, vectors=False
    )
    assert report.messages_added == 5
    assert await rarity.idf(["zanzibar"]) == before  # the same lookup, not a new one
    fresh = await TermRarity(captured.db).idf(["zanzibar"])
    assert fresh["zanzibar"] == pytest.approx(math.log((MESSAGES + 5 + PRIOR) / (7 + 1)))


async def test_specificity_sums_the_rarity_of_the_held_terms_only(captured: Store) -> None:
    rarity = TermRarity(captured.db)
    terms = ("zanzibar", "widget", "deploy", "absent")
    text = "Zanzibar widgets are deployed nightly"  # holds three of them; "absent" is not there
    value = await specificity(rarity, terms, text)
    assert value == round(expected(2) + expected(AT_CAP), 4)
    assert value < round(expected(2) + expected(AT_CAP) + expected(0), 4)  # "absent" was rare: left out
    assert await specificity(rarity, terms, "nothing in common") == 0.0
    assert await specificity(rarity, ("deploy",), "deploy it") == 0.0  # held, but common
    assert await specificity(rarity, (), "Zanzibar") == 0.0
