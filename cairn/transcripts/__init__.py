"""Reading Claude Code JSONL transcripts: typed entries, incremental reads, normalised messages.

This package depends on nothing else in cairn; options are passed as arguments.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.transcripts.entries import (
        AssistantEntry,
        AssistantMessage,
        AttachmentEntry,
        BaseEntry,
        ContentBlock,
        Entry,
        FileHistorySnapshotEntry,
        ImageBlock,
        ProgressEntry,
        QueueOperationEntry,
        SummaryEntry,
        SystemEntry,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
        UnknownBlock,
        UnknownEntry,
        UserEntry,
        UserMessage,
        parse_entry,
    )
    from cairn.transcripts.inspect import FileReport, InspectReport, SessionReport, Totals, inspect_files
    from cairn.transcripts.normalise import (
        Message,
        MessageKind,
        MessageRole,
        NormaliseOptions,
        Normaliser,
        ToolCall,
        ToolResultRef,
        normalise,
    )
    from cairn.transcripts.reader import (
        EntryStream,
        ReadEntry,
        ReadResult,
        TranscriptNotFound,
        iter_entries,
        read_from,
    )
    from cairn.transcripts.redact import redact, redact_with_count

__all__ = [
    "AssistantEntry",
    "AssistantMessage",
    "AttachmentEntry",
    "BaseEntry",
    "ContentBlock",
    "Entry",
    "EntryStream",
    "FileHistorySnapshotEntry",
    "FileReport",
    "ImageBlock",
    "InspectReport",
    "Message",
    "MessageKind",
    "MessageRole",
    "NormaliseOptions",
    "Normaliser",
    "ProgressEntry",
    "QueueOperationEntry",
    "ReadEntry",
    "ReadResult",
    "SessionReport",
    "SummaryEntry",
    "SystemEntry",
    "TextBlock",
    "ThinkingBlock",
    "ToolCall",
    "ToolResultBlock",
    "ToolResultRef",
    "ToolUseBlock",
    "Totals",
    "TranscriptNotFound",
    "UnknownBlock",
    "UnknownEntry",
    "UserEntry",
    "UserMessage",
    "inspect_files",
    "iter_entries",
    "normalise",
    "parse_entry",
    "read_from",
    "redact",
    "redact_with_count",
]

#: The module each name of `__all__` comes from. A name is imported at its first use: `cairn search`
#: needs `cairn.transcripts.origin` alone, and importing the package must not load the reader, the
#: normaliser and the redaction patterns for it (a tenth of a second or more of a search's start-up).
_HOMES = {
    **dict.fromkeys(
        (
            "AssistantEntry",
            "AssistantMessage",
            "AttachmentEntry",
            "BaseEntry",
            "ContentBlock",
            "Entry",
            "FileHistorySnapshotEntry",
            "ImageBlock",
            "ProgressEntry",
            "QueueOperationEntry",
            "SummaryEntry",
            "SystemEntry",
            "TextBlock",
            "ThinkingBlock",
            "ToolResultBlock",
            "ToolUseBlock",
            "UnknownBlock",
            "UnknownEntry",
            "UserEntry",
            "UserMessage",
            "parse_entry",
        ),
        "entries",
    ),
    **dict.fromkeys(("FileReport", "InspectReport", "SessionReport", "Totals", "inspect_files"), "inspect"),
    **dict.fromkeys(
        (
            "Message",
            "MessageKind",
            "MessageRole",
            "NormaliseOptions",
            "Normaliser",
            "ToolCall",
            "ToolResultRef",
            "normalise",
        ),
        "normalise",
    ),
    **dict.fromkeys(
        ("EntryStream", "ReadEntry", "ReadResult", "TranscriptNotFound", "iter_entries", "read_from"),
        "reader",
    ),
    **dict.fromkeys(("redact", "redact_with_count"), "redact"),
}

#: Names that are both a submodule and the function the package exports: `cairn.transcripts.redact` is
#: the function, as `from cairn.transcripts import redact` expects, whichever was imported first.
_FUNCTIONS_OVER_MODULES = frozenset({"normalise", "redact"})


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


class _Package(ModuleType):
    """The package, keeping its exported functions when the import system binds the submodules of the
    same names to it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FUNCTIONS_OVER_MODULES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
