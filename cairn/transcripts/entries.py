"""Typed models of the lines Claude Code writes to a session's JSONL transcript.

Claude Code's transcript format is undocumented and changes between releases, so the models are
deliberately lenient: every field is optional unless the entry is meaningless without it, extra fields
are kept (``extra="allow"``) so nothing a later release adds is lost, and an entry whose ``type`` is
unknown or absent becomes an :class:`UnknownEntry` holding the raw fields instead of being rejected.

Parsing is the hot path of the indexer, so :func:`parse_entry` hands the raw bytes straight to
pydantic-core (``validate_json`` with jiter) rather than building Python dicts with ``json.loads``
first. The entry union is dispatched on the ``type`` key by pydantic-core itself (a string
discriminator is a plain key lookup in Rust); only when that fails does the slow fallback to
:class:`UnknownEntry` run. A callable ``Discriminator`` would look cleaner but pydantic-core has to
convert the whole JSON value to Python objects to call it, which doubles the cost of every line.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
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
    "parse_entry_object",
]


class _Block(BaseModel):
    """Content blocks use the Anthropic API's snake_case keys, so no aliases are needed."""

    model_config = ConfigDict(extra="allow")


class TextBlock(_Block):
    type: Literal["text"]
    text: str = ""


class ThinkingBlock(_Block):
    type: Literal["thinking"]
    thinking: str = ""
    signature: str | None = None


class ImageBlock(_Block):
    type: Literal["image"]
    source: Any = None


class UnknownBlock(_Block):
    """Any block type this module does not model (``redacted_thinking``, ``document``, ...), kept raw."""

    type: Any = None

    @model_validator(mode="before")
    @classmethod
    def _only_unknown_types(cls, data: Any) -> Any:
        # Reached only when the tagged union failed. A known type that failed validation must stay an
        # error rather than silently turning into an opaque block.
        if isinstance(data, dict) and data.get("type") in _KNOWN_BLOCK_TYPES:
            raise ValueError(f"invalid {data['type']!r} block")
        return data


_InnerKnownBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]
ToolResultContentBlock = Annotated[_InnerKnownBlock | UnknownBlock, Field(union_mode="left_to_right")]
"""What a ``tool_result`` may contain besides a plain string: text, images, anything else kept raw."""


class ToolUseBlock(_Block):
    type: Literal["tool_use"]
    id: str
    name: str
    input: Any = None


class ToolResultBlock(_Block):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ToolResultContentBlock] | None = None
    is_error: bool | None = None


_KnownBlock = Annotated[
    TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock, Field(discriminator="type")
]
ContentBlock = Annotated[_KnownBlock | UnknownBlock, Field(union_mode="left_to_right")]
"""One block of ``message.content``; unknown block types become :class:`UnknownBlock`."""

_KNOWN_BLOCK_TYPES = frozenset({"text", "thinking", "tool_use", "tool_result", "image"})


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str | None = None
    content: str | list[ContentBlock] = ""


class UserMessage(_Message):
    """``message`` of a user line: a prompt string, or blocks (text, images, tool results)."""


class AssistantMessage(_Message):
    """``message`` of an assistant line: the API response, usually one content block per line."""

    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


class BaseEntry(BaseModel):
    """Fields shared by every typed entry (most are absent on some types); Claude Code writes camelCase."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)

    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    session_id: str | None = None
    timestamp: datetime | None = None
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    user_type: str | None = None
    is_sidechain: bool = False
    is_meta: bool = False
    agent_id: str | None = None


class UserEntry(BaseEntry):
    type: Literal["user"]
    message: UserMessage
    is_compact_summary: bool = False
    is_visible_in_transcript_only: bool = False
    tool_use_result: Any = None
    """The tool's structured result, shape varies per tool (and is sometimes a bare string)."""


class AssistantEntry(BaseEntry):
    type: Literal["assistant"]
    message: AssistantMessage
    request_id: str | None = None


class SystemEntry(BaseEntry):
    """``compact_boundary``, ``stop_hook_summary``, ``turn_duration``, ...: subtype kept as a plain str."""

    type: Literal["system"]
    subtype: str | None = None
    content: str | None = None
    level: str | None = None
    compact_metadata: dict[str, Any] | None = None
    tool_use_id: str | None = Field(default=None, alias="toolUseID")


class SummaryEntry(BaseEntry):
    """A session title written by older Claude Code releases; it points at the leaf it summarises."""

    type: Literal["summary"]
    summary: str = ""
    leaf_uuid: str | None = None


class ProgressEntry(BaseEntry):
    type: Literal["progress"]
    data: Any = None
    tool_use_id: str | None = Field(default=None, alias="toolUseID")
    parent_tool_use_id: str | None = Field(default=None, alias="parentToolUseID")


class FileHistorySnapshotEntry(BaseEntry):
    type: Literal["file-history-snapshot"]
    message_id: str | None = None
    snapshot: Any = None
    is_snapshot_update: bool = False


class QueueOperationEntry(BaseEntry):
    type: Literal["queue-operation"]
    operation: str | None = None
    content: Any = None


class AttachmentEntry(BaseEntry):
    type: Literal["attachment"]
    attachment: Any = None


class UnknownEntry(BaseModel):
    """A line with an unknown or absent ``type`` (a newer Claude Code, or not a transcript at all).

    Every field is kept raw in ``model_extra``; ``type`` holds whatever the line had, or None.
    """

    model_config = ConfigDict(extra="allow")

    type: Any = None

    @model_validator(mode="before")
    @classmethod
    def _only_unknown_types(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("type") in KNOWN_ENTRY_TYPES:
            raise ValueError(f"invalid {data['type']!r} entry")
        return data


_KnownEntry = Annotated[
    UserEntry
    | AssistantEntry
    | SystemEntry
    | SummaryEntry
    | ProgressEntry
    | FileHistorySnapshotEntry
    | QueueOperationEntry
    | AttachmentEntry,
    Field(discriminator="type"),
]
Entry = Annotated[_KnownEntry | UnknownEntry, Field(union_mode="left_to_right")]
"""Any transcript line: one of the typed entries, or :class:`UnknownEntry`."""

KNOWN_ENTRY_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "attachment",
    }
)

_ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry)
_validate_json = _ENTRY_ADAPTER.validate_json


def parse_entry_object(value: object) -> Entry:
    """An entry from a line already parsed by ``json.loads`` (the reader's path for very long lines,
    whose strings it cuts first); raises ``pydantic.ValidationError`` as :func:`parse_entry` does."""
    return _ENTRY_ADAPTER.validate_python(value)


def parse_entry(raw: bytes | str) -> Entry:
    """Parse one JSONL line into an entry.

    Raises ``pydantic.ValidationError`` for invalid JSON, invalid UTF-8, JSON that is not an object,
    or a known entry type whose fields have the wrong shape.
    """
    return _validate_json(raw)
