"""What the learned indexer sees of a message and of a sentence: sparse, named features.

Wording is one part (lower-cased word unigrams and bigrams of the prose, numbers folded to `0`) and
structure the other, since structure travels between projects better than any phrase: who speaks, where
the message sits in its turn and in the session, which tools it calls, whether the tool calls around it
failed or passed, whether the person answers it. The same functions feed training
(`scripts/train_indexer.py`) and indexing (`cairn.agent.offline.classifier`), so the two can never
disagree on what a feature means.

Each message's features are a `dict[str, float]`: word features share one L2-normalised block, every
structural feature is 1.0 (or a small count), so no long message outweighs a short one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from cairn.agent.offline.reading import Message, SessionView

_TOKEN = re.compile(r"[a-z][a-z0-9_']*|[0-9]+|[?!:]")
_NUMBER = re.compile(r"^[0-9]+$")
_TOOL_USE = re.compile(r"^\[tool_use (?P<name>[\w.:-]+)\]", re.MULTILINE)
_FENCE = re.compile(r"```")
# Words this long are identifiers or paths whose exact spelling belongs to one project.
_MAX_WORD = 24
TALK = frozenset({"user", "assistant", "delegate"})


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens with numbers folded to `0`: "retry 3 times?" -> retry 0 times ?"""
    found = []
    for token in _TOKEN.findall(text.lower()):
        if len(token) > _MAX_WORD:
            continue
        found.append("0" if _NUMBER.match(token) else token)
    return found


def _ngrams(words: list[str], prefix: str) -> dict[str, float]:
    counts: dict[str, float] = {}
    for i, word in enumerate(words):
        counts[f"{prefix}{word}"] = counts.get(f"{prefix}{word}", 0.0) + 1.0
        if i + 1 < len(words):
            pair = f"{prefix}{word} {words[i + 1]}"
            counts[pair] = counts.get(pair, 0.0) + 1.0
    return counts


def _normalised(counts: dict[str, float], weight: float = 1.0) -> dict[str, float]:
    """Sub-linear counts scaled to length `weight`: a long message and a short one weigh the same."""
    if not counts:
        return {}
    scaled = {k: 1.0 + math.log(v) for k, v in counts.items()}
    norm = math.sqrt(sum(v * v for v in scaled.values()))
    return {k: weight * v / norm for k, v in scaled.items()}


def _bucket(value: int, edges: Iterable[int]) -> int:
    """The index of the first edge `value` is below: a coarse, stable position or size."""
    for index, edge in enumerate(edges):
        if value < edge:
            return index
    return len(tuple(edges))


def _tool_names(message: Message) -> list[str]:
    return [m["name"].split("__")[-1] for m in _TOOL_USE.finditer(message.text)]


def prose_text(message: Message) -> str:
    return " ".join(s.text for s in message.prose)


class SessionFeatures:
    """Per-message features of one session view, computed once for all its messages."""

    def __init__(self, view: SessionView) -> None:
        self.view = view
        messages = view.messages
        self._turn_talk: dict[int, list[int]] = {}
        for index, message in enumerate(messages):
            if message.role in TALK:
                self._turn_talk.setdefault(message.turn, []).append(index)
        self._last_turn = messages[-1].turn if messages else 0

    def of(self, index: int) -> dict[str, float]:
        """The features of the message at `index` of the view."""
        messages = self.view.messages
        message = messages[index]
        role = message.role
        features: dict[str, float] = {f"role={role}": 1.0, "bias": 1.0}
        words = tokens(prose_text(message)) if role in TALK else []
        features.update(_normalised(_ngrams(words, "w:")))
        features[f"words={_bucket(len(words), (1, 4, 12, 30, 80, 200))}"] = 1.0
        if role in TALK:
            features.update(self._talk(index, message, words))
        elif role == "tool":
            features[f"result={'error' if message.tool_error else 'ok'}"] = 1.0
            features.update(_normalised(_ngrams(tokens(message.tool_output[:300]), "t:"), 0.5))
        turns_left = self._last_turn - message.turn
        features[f"turns_left={_bucket(turns_left, (1, 2, 4, 8))}"] = 1.0
        features[f"at={_bucket(100 * index // max(1, len(messages)), (10, 50, 90, 97))}"] = 1.0
        return features

    def _talk(self, index: int, message: Message, words: list[str]) -> dict[str, float]:
        features: dict[str, float] = {}
        role = message.role
        talk = self._turn_talk.get(message.turn, [])
        place = talk.index(index) if index in talk else 0
        features[f"{role}:turn_first={place == 0}"] = 1.0
        features[f"{role}:turn_last={place == len(talk) - 1}"] = 1.0
        for name in dict.fromkeys(_tool_names(message)):
            features[f"tool={name}"] = 1.0
        if not message.prose:
            features[f"{role}:no_prose"] = 1.0
        if "?" in words:
            features[f"{role}:asks"] = 1.0
        if any(s.bullet for s in message.prose):
            features["bullets"] = 1.0
        if _FENCE.search(message.text):
            features["code"] = 1.0
        if "**" in message.text:
            features["bold"] = 1.0
        before, after = self._results_around(index)
        if before is not None:
            features[f"after_result={before}"] = 1.0
        if after is not None:
            features[f"then_result={after}"] = 1.0
        features.update(self._neighbours(index, role))
        return features

    def _results_around(self, index: int) -> tuple[str | None, str | None]:
        """Whether the tool result just before this message (in its turn) and the one its own call
        gets failed or passed: a message between a failure and a pass is where fixes are made."""
        messages = self.view.messages
        turn = messages[index].turn
        before = after = None
        for other in reversed(messages[max(0, index - 4) : index]):
            if other.turn != turn:
                break
            if other.role == "tool":
                before = "error" if other.tool_error else "ok"
                break
        for other in messages[index + 1 : index + 4]:
            if other.turn != turn:
                break
            if other.role == "tool":
                after = "error" if other.tool_error else "ok"
                break
        return before, after

    def _neighbours(self, index: int, role: str) -> dict[str, float]:
        """Who speaks next and before: a person's reply after an assistant message is how a proposal
        becomes a decision; an assistant reply after a person's question is how it is answered."""
        messages = self.view.messages
        features: dict[str, float] = {}
        nxt = next((m for m in messages[index + 1 :] if m.role in TALK), None)
        prev = next((m for m in reversed(messages[:index]) if m.role in TALK), None)
        features[f"{role}:next={nxt.role if nxt else 'end'}"] = 1.0
        features[f"{role}:prev={prev.role if prev else 'start'}"] = 1.0
        if nxt is not None and nxt.role == "user" and role == "assistant":
            features.update(_normalised(_ngrams(tokens(prose_text(nxt))[:12], "reply:"), 0.5))
        if prev is not None and prev.role == "user" and role == "assistant":
            features.update(_normalised(_ngrams(tokens(prose_text(prev))[:12], "prompt:"), 0.3))
        return features


def sentence_words(text: str) -> dict[str, float]:
    """The word features of one sentence, named as in a message's: which sentence carries a kind is
    read off the same weights."""
    return _normalised(_ngrams(tokens(text), "w:"))
