"""Typed entries: every known type, unknown types and blocks kept raw, invalid shapes rejected."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from cairn.transcripts import (
    AssistantEntry,
    AttachmentEntry,
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
    parse_entry,
)


def _parse(obj: object) -> object:
    return parse_entry(json.dumps(obj).encode())


def test_user_entry_fields_and_aliases() -> None:
    entry = _parse(
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": "p1",
            "logicalParentUuid": "lp1",
            "sessionId": "s1",
            "timestamp": "2026-01-02T19:18:31.028Z",
            "cwd": "/work",
            "gitBranch": "main",
            "version": "2.0.76",
            "isSidechain": True,
            "isMeta": True,
            "isCompactSummary": True,
            "agentId": "a1",
            "toolUseResult": {"stdout": "x", "nested": [1, 2]},
            "slug": "kept-as-extra",
            "message": {"role": "user", "content": "hello"},
        }
    )
    assert isinstance(entry, UserEntry)
    assert (entry.uuid, entry.parent_uuid, entry.logical_parent_uuid) == ("u1", "p1", "lp1")
    assert (entry.session_id, entry.cwd, entry.git_branch, entry.version) == ("s1", "/work", "main", "2.0.76")
    assert entry.timestamp == datetime(2026, 1, 2, 19, 18, 31, 28000, tzinfo=UTC)
    assert entry.is_sidechain and entry.is_meta and entry.is_compact_summary
    assert entry.agent_id == "a1"
    assert entry.tool_use_result == {"stdout": "x", "nested": [1, 2]}
    assert entry.message.content == "hello"
    assert entry.model_extra == {"slug": "kept-as-extra"}
    assert entry.model_dump(by_alias=True, exclude_unset=True)["parentUuid"] == "p1"


def test_tool_use_result_may_be_a_bare_string() -> None:
    entry = _parse({"type": "user", "message": {"content": []}, "toolUseResult": "Error: exit 127"})
    assert isinstance(entry, UserEntry)
    assert entry.tool_use_result == "Error: exit 127"


def test_assistant_blocks_of_every_kind() -> None:
    entry = _parse(
        {
            "type": "assistant",
            "requestId": "req_1",
            "message": {
                "id": "msg_1",
                "model": "claude-x",
                "role": "assistant",
                "usage": {"input_tokens": 3, "output_tokens": 5},
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "hi"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "image", "source": {"type": "base64", "data": "AAA"}},
                    {"type": "redacted_thinking", "data": "opaque"},
                ],
            },
        }
    )
    assert isinstance(entry, AssistantEntry)
    message = entry.message
    assert (message.id, message.model, message.role) == ("msg_1", "claude-x", "assistant")
    assert message.usage == {"input_tokens": 3, "output_tokens": 5}
    assert entry.request_id == "req_1"
    thinking, text, tool_use, image, unknown = message.content
    assert isinstance(thinking, ThinkingBlock) and thinking.signature == "sig"
    assert isinstance(text, TextBlock) and text.text == "hi"
    assert isinstance(tool_use, ToolUseBlock) and tool_use.input == {"command": "ls"}
    assert isinstance(image, ImageBlock)
    assert isinstance(unknown, UnknownBlock)
    assert unknown.type == "redacted_thinking" and unknown.model_extra == {"data": "opaque"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("plain output", "plain output"),
        (None, None),
        ([{"type": "text", "text": "a"}, {"type": "image", "source": {}}], [TextBlock, ImageBlock]),
        ([{"type": "tool_reference", "name": "x"}], [UnknownBlock]),
    ],
)
def test_tool_result_content_string_or_blocks(content: object, expected: object) -> None:
    entry = _parse(
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": content, "is_error": True}
                ]
            },
        }
    )
    assert isinstance(entry, UserEntry)
    assert not isinstance(entry.message.content, str)
    (block,) = entry.message.content
    assert isinstance(block, ToolResultBlock)
    assert block.tool_use_id == "t1" and block.is_error is True
    if isinstance(expected, list):
        assert isinstance(block.content, list)
        assert [type(inner) for inner in block.content] == expected
    else:
        assert block.content == expected


@pytest.mark.parametrize(
    ("obj", "cls"),
    [
        ({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"}, SystemEntry),
        ({"type": "system", "subtype": "turn_duration", "durationMs": 12}, SystemEntry),
        ({"type": "summary", "summary": "Title", "leafUuid": "l1"}, SummaryEntry),
        ({"type": "progress", "data": {"type": "hook_progress"}, "toolUseID": "t"}, ProgressEntry),
        ({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}, FileHistorySnapshotEntry),
        ({"type": "queue-operation", "operation": "enqueue", "content": "x"}, QueueOperationEntry),
        ({"type": "attachment", "attachment": {"type": "file"}}, AttachmentEntry),
    ],
)
def test_bookkeeping_types(obj: dict[str, object], cls: type) -> None:
    assert isinstance(_parse(obj), cls)


def test_system_fields() -> None:
    entry = _parse(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": 21558},
            "toolUseID": "x",
        }
    )
    assert isinstance(entry, SystemEntry)
    assert entry.subtype == "compact_boundary"
    assert entry.compact_metadata == {"trigger": "manual", "preTokens": 21558}
    assert entry.tool_use_id == "x"


def test_summary_leaf_uuid() -> None:
    entry = _parse({"type": "summary", "summary": "Title", "leafUuid": "l1"})
    assert isinstance(entry, SummaryEntry)
    assert (entry.summary, entry.leaf_uuid) == ("Title", "l1")


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "brand-new-type", "payload": [1, 2]},
        {"event": "SessionStart", "session_id": "s"},
        {"type": 5, "x": None},
        {},
    ],
)
def test_unknown_or_absent_type_is_kept_raw(obj: dict[str, object]) -> None:
    entry = _parse(obj)
    assert isinstance(entry, UnknownEntry)
    assert entry.model_dump() == {"type": None, **obj}


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b'{"type": "user", "message": ',
        b"[1, 2]",
        b'"a string"',
        b"42",
        b'{"type": "user"}',
        b'{"type": "user", "message": 5}',
        b'{"type": "assistant", "message": {"content": [{"type": "tool_use"}]}}',
        b'{"type": "user", "message": {"content": "x"}, "timestamp": "yesterday"}',
        b'{"type": "user", "message": {"content": "\xff\xfe"}}',
    ],
)
def test_malformed_lines_are_rejected(raw: bytes) -> None:
    with pytest.raises(ValidationError):
        parse_entry(raw)
