"""The learned part of the offline indexer: which messages state something worth remembering, of what
kind, and which of their sentences says it.

A logistic regression per kind of labelled statement (`KINDS`: a decision, a problem, a fix, a raised
question or todo, its resolution), trained on labelled real sessions by `scripts/train_indexer.py`,
reads each message's features (`cairn.agent.offline.features`) and gives a probability per kind. A
message whose best probability passes the shipped threshold becomes an idea of that kind; the sentence
it is told by is the one whose own words weigh most for that kind in the same model. The weights ship
in `weights.json` beside this module and load with no network; `CAIRN_OFFLINE_WEIGHTS` names another
file (an eval of a model trained without one project uses it).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cairn.agent.offline.features import TALK, SessionFeatures, sentence_words
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import Segment
from cairn.errors import Failure

WEIGHTS_ENV = "CAIRN_OFFLINE_WEIGHTS"
SHIPPED = Path(__file__).with_name("weights.json")
KINDS = ("decision", "problem", "fix", "raised", "resolved")


class WeightsError(Failure):
    """The learned indexer's weights file is missing or not one `scripts/train_indexer.py` wrote."""


@dataclass(frozen=True)
class Weights:
    """A trained model: per feature one weight per kind, an intercept per kind, the selection threshold."""

    kinds: tuple[str, ...]
    intercepts: tuple[float, ...]
    features: dict[str, tuple[float, ...]]
    threshold: float
    answer_threshold: float

    def probabilities(self, features: dict[str, float]) -> list[float]:
        sums = list(self.intercepts)
        for name, value in features.items():
            weights = self.features.get(name)
            if weights is not None:
                for k, w in enumerate(weights):
                    sums[k] += w * value
        return [1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, s)))) for s in sums]

    def kind_index(self, kind: str) -> int:
        return self.kinds.index(kind)


def weights_path() -> Path:
    return Path(os.environ.get(WEIGHTS_ENV) or SHIPPED)


@cache
def _load(path: Path) -> Weights:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Weights(
            kinds=tuple(data["kinds"]),
            intercepts=tuple(data["intercepts"]),
            features={name: tuple(ws) for name, ws in data["features"].items()},
            threshold=float(data["threshold"]),
            answer_threshold=float(data["answer_threshold"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WeightsError(
            f"cannot read the offline indexer's weights {path}: {exc}; rebuild them with "
            "scripts/train_indexer.py or unset " + WEIGHTS_ENV
        ) from exc


def load_weights() -> Weights:
    """The model in use: the shipped one, or the file `CAIRN_OFFLINE_WEIGHTS` names."""
    return _load(weights_path())


@dataclass(frozen=True)
class Scored:
    """One message the model read: its probability per kind."""

    message: Message
    probabilities: tuple[float, ...]

    @property
    def best(self) -> float:
        return max(self.probabilities)


def score_session(view: SessionView, weights: Weights | None = None) -> list[Scored]:
    """Every message of `view` that someone said (the person, the assistant), with its probabilities."""
    weights = weights or load_weights()
    features = SessionFeatures(view)
    return [
        Scored(message, tuple(weights.probabilities(features.of(index))))
        for index, message in enumerate(view.messages)
        if message.role in ("user", "assistant")
    ]


def kind_of(scored: Scored, weights: Weights) -> str:
    best = max(range(len(weights.kinds)), key=lambda k: scored.probabilities[k])
    return weights.kinds[best]


def chosen(scored: list[Scored], weights: Weights | None = None) -> list[Scored]:
    """The messages whose best kind passes the model's threshold."""
    weights = weights or load_weights()
    return [s for s in scored if s.best >= weights.threshold]


def carrying_sentence(
    message: Message, kind: str, weights: Weights | None = None, among: Sequence[Segment] | None = None
) -> Segment | None:
    """The sentence of `message` (or of `among`, some of its sentences) whose own features weigh most
    for `kind`: the one that says it."""
    weights = weights or load_weights()
    sentences = message.prose if among is None else among
    if not sentences:
        return None
    k = weights.kind_index(kind)

    def weight(segment: Segment) -> float:
        return sum(
            v * weights.features[name][k]
            for name, v in sentence_words(segment.text).items()
            if name in weights.features
        )

    return max(sentences, key=weight)


def resolutions(scored: list[Scored], weights: Weights | None = None) -> dict[int, float]:
    """Lines of messages that resolve something (an answer, a confirmation, a fix that held), by
    probability, for linking a question to the message that answers it."""
    weights = weights or load_weights()
    k = weights.kind_index("resolved")
    return {
        s.message.line: s.probabilities[k]
        for s in scored
        if s.message.role in TALK and s.probabilities[k] >= weights.answer_threshold
    }
