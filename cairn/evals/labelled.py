"""Labelled sessions as the offline indexer sees them: each message of a transcript with what a person
labelled at its lines, for training the learned indexer and for measuring it.

A transcript is read and normalised exactly as capture stores it and the batch planner hands it to the
indexer (redacted, tool results clipped, noise left out, compaction summaries as context), then read by
`cairn.agent.offline.reading`, so the features a model is trained on are the ones it meets at indexing
time. A label cites a physical line; a message may span several lines (the blocks of one assistant
reply), so a label belongs to the message whose lines hold it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cairn.agent.offline.reading import SessionView, read_session
from cairn.agent.schema import CONTEXT_ROLE, BatchMessage, SessionUpdate
from cairn.evals.truth import SessionTruth
from cairn.transcripts.discover import is_compaction_file
from cairn.transcripts.normalise import Message, NormaliseOptions, Normaliser
from cairn.transcripts.reader import read_from

#: What a labelled line says, as the learned indexer is trained to tell: the decision itself, a
#: problem (the failure or bug report of a fix pair), the fix (the change that made it pass), a raised
#: item (a question or todo, open or later closed) and a resolution (the line that answered or closed it).
KINDS = ("decision", "problem", "fix", "raised", "resolved")


def label_lines(truth: SessionTruth) -> dict[str, set[int]]:
    """Every labelled line of a session by the kind of statement it holds."""
    return {
        "decision": {d.line for d in truth.decisions},
        "problem": {f.problem_line for f in truth.fixes},
        "fix": {f.fix_line for f in truth.fixes},
        "raised": {c.raised_line for c in truth.closed_items} | {o.line for o in truth.open_items},
        "resolved": {c.resolved_line for c in truth.closed_items},
    }


def _batch_role(message: Message, compaction_file: bool) -> str:
    if compaction_file or message.is_context:
        return CONTEXT_ROLE
    return "tool" if message.kind == "tool_result" else message.role


@dataclass
class LabelledView:
    """One transcript read as the indexer reads it, each message's line span, and its labels."""

    key: str
    view: SessionView
    spans: dict[int, int]  # a message's first line -> its last line
    labels: dict[str, set[int]]

    def kinds_at(self, line: int) -> set[str]:
        """The kinds of label whose line lies in the message starting at `line`."""
        end = self.spans.get(line, line)
        return {kind for kind, lines in self.labels.items() if any(line <= x <= end for x in lines)}


def read_transcript(path: Path, session: str | None = None) -> tuple[SessionView, dict[int, int]]:
    """A whole transcript as one session update, read by the offline indexer; and each message's span."""
    result = read_from(path, 0, settle_seconds=0)
    messages = Normaliser(NormaliseOptions()).normalise(result.entries)
    compaction = is_compaction_file(path)
    batch: list[BatchMessage] = []
    spans: dict[int, int] = {}
    for message in messages:
        if message.is_noise:
            continue
        stamp = message.timestamp.isoformat() if message.timestamp else None
        batch.append(
            BatchMessage(
                line=message.line,
                role=_batch_role(message, compaction),
                content=message.text,
                timestamp=stamp,
            )
        )
        spans[message.line] = max(message.end_line, spans.get(message.line, message.line))
    name = session or path.stem
    return read_session(SessionUpdate(session=name, file_path=str(path), messages=batch)), spans


def labelled_session(key: str, path: Path, truth: SessionTruth) -> LabelledView:
    view, spans = read_transcript(path)
    return LabelledView(key, view, spans, label_lines(truth))
