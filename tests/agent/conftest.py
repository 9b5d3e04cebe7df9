"""Fixtures of the offline indexer's tests.

Which message of a session states an idea, and of what kind, is the learned model's call: it is tested
on real labelled sessions (`test_offline_learned.py`) and measured by `cairn eval sessions`, not on
three-line batches written here, whose wording it was never trained on. The tests of what the indexer
makes of an idea once found (its sentence, its marks as a guess or a change of plan, relations, answers,
completions, topics, lookups) say which messages the model picks with `model_picks`, and everything
after that runs as in the indexer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from cairn.agent.offline import inbatch, learned
from cairn.agent.offline.classifier import Scored, Weights
from tests.agent.offline_helpers import Picks


@pytest.fixture
def model_picks(monkeypatch: pytest.MonkeyPatch) -> Picks:
    """`model_picks({line: kind}, resolving=(line, …))`: the learned model finds exactly these messages,
    each of its kind (`decision`, `problem`, `fix`, `raised`, `resolved`), and finds the `resolving`
    lines the ones that settle what their turn raised. Its sentence choice is still the real model's."""

    def install(picks: Mapping[int, str], resolving: Iterable[int] = ()) -> None:
        settling = dict.fromkeys(resolving, 0.9)

        def chosen(scored: list[Scored], weights: Weights | None = None) -> list[Scored]:
            return [s for s in scored if s.message.line in picks]

        def kind_of(scored: Scored, weights: Weights) -> str:
            return picks[scored.message.line]

        monkeypatch.setattr(learned, "chosen", chosen)
        monkeypatch.setattr(learned, "kind_of", kind_of)
        monkeypatch.setattr(inbatch, "resolutions", lambda scored, weights=None: settling)

    return install
