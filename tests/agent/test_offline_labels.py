"""Sentences their writer labelled are ideas of the label's kind, whatever the learned model picks."""

from __future__ import annotations

from cairn.agent.offline import build_result
from tests.agent.offline_helpers import Picks, batch, fresh


def test_labels_after_a_lead_in_under_a_heading_and_in_prose_are_ideas(model_picks: Picks) -> None:
    model_picks({})  # the model picks nothing: the labels alone make these ideas
    result = build_result(
        batch(
            ("user", "On gzip — decision: read .gz logs through a streaming decoder, never whole."),
            (
                "assistant",
                "Here is the summary.\n\n**Root cause:** the reader validated UTF-8 on every line.\n\n"
                "**Fix (1 file):**\n\n1. `src/main.rs` - match on bytes with regex::bytes\n2. a bench",
            ),
            ("assistant", "TODO: add a criterion benchmark for the scan loop."),
            ("assistant", "Open question though: should we keep the plain-text reader at all?"),
            ("assistant", "Decision:"),
        ),
        fresh(),
    )
    found = [(i.source_line, i.intent, i.content) for i in result.ideas]
    assert (1, "decision", "Read .gz logs through a streaming decoder, never whole.") in found
    assert (2, "conclusion", "The reader validated UTF-8 on every line.") in found
    assert (2, "solution", "`src/main.rs` - match on bytes with regex::bytes") in found
    assert (3, "todo", "Add a criterion benchmark for the scan loop.") in found
    assert (4, "question", "Should we keep the plain-text reader at all?") in found
    assert not [line for line, *_ in found if line == 5], "a label with nothing after it says nothing"


def test_a_label_the_model_also_picked_stands_in_for_its_pick(model_picks: Picks) -> None:
    model_picks({1: "fix"})
    result = build_result(
        batch(
            ("assistant", "Decision: use WAL journal mode and BEGIN IMMEDIATE for every write transaction.")
        ),
        fresh(),
    )
    assert [(i.intent, i.content) for i in result.ideas] == [
        ("decision", "Use WAL journal mode and BEGIN IMMEDIATE for every write transaction.")
    ]
