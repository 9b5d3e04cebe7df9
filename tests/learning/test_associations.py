"""`record_association`: one row per (query, real file), merged on repeats, only for files in the project."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cairn.learning.associations import AssociationOutcome, query_key, record_association
from cairn.store.store import Store
from tests.learning.loop_helpers import LOGIN_BUTTON, make_project, rows


@pytest.fixture
async def project(store: Store, tmp_path: Path) -> tuple[int, Path]:
    root = make_project(tmp_path / "acme-web")
    async with (
        store.db.write() as conn,
        conn.execute(
            "INSERT INTO projects (path, name) VALUES (?, 'acme-web') RETURNING id", (str(root),)
        ) as cursor,
    ):
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0]), root


async def record(store: Store, project: tuple[int, Path], **kwargs: Any) -> AssociationOutcome:
    project_id, root = project
    async with store.db.write() as conn:
        return await record_association(conn, project_id=project_id, project_dir=root, **kwargs)


async def stored(store: Store) -> list[tuple[Any, ...]]:
    return await rows(
        store.db,
        "SELECT query, query_key, rel_path, source, reason, grep_patterns, original_score, times_learned, "
        "learned_at FROM search_associations ORDER BY id",
    )


def test_query_key_folds_case_and_spacing() -> None:
    assert query_key("  Login   BUTTON\tcomponent ") == "login button component"


async def test_a_new_association_then_merges_of_the_same_query_and_file(
    store: Store, project: tuple[int, Path]
) -> None:
    _, root = project
    first = await record(
        store,
        project,
        query="login button component",
        file_path=str(root / LOGIN_BUTTON),
        source="learned",
        grep_patterns=["login.*button"],
        original_score=0.42,
        learned_at=datetime(2025, 9, 3, 10, 0, tzinfo=UTC),
    )
    second = await record(
        store,
        project,
        query="Login Button  Component",
        file_path=LOGIN_BUTTON,  # relative: to the project
        source="agent",
        reason="renders the sign-in button",
        grep_patterns=["LoginButton", "login.*button"],
        original_score=0.5,
        learned_at=datetime(2025, 9, 1, tzinfo=UTC),  # older than the first: learned_at keeps the latest
    )
    third = await record(
        store,
        project,
        query="login button component",
        file_path=str(root / "src" / ".." / LOGIN_BUTTON),
        source="learned",
        original_score=None,
        learned_at=datetime(2025, 9, 5, tzinfo=UTC),
    )

    assert (first, second, third) == ("created", "merged", "merged")
    assert await stored(store) == [
        (
            "login button component",
            "login button component",
            LOGIN_BUTTON,
            "learned",  # the source of whoever learned it first
            "renders the sign-in button",
            json.dumps(["login.*button", "LoginButton"]),
            0.42,
            3,
            "2025-09-05T00:00:00.000Z",
        )
    ]
    requested = await rows(store.db, "SELECT path, reason, status FROM file_requests")
    assert requested == [(str(root / LOGIN_BUTTON), "learned", "pending")]


async def test_a_merge_does_not_reembed_the_query(store: Store, project: tuple[int, Path]) -> None:
    await record(store, project, query="login button", file_path=LOGIN_BUTTON, source="learned")
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM vector_outbox WHERE kind = 'associations'")  # as if embedded

    await record(store, project, query="login button", file_path=LOGIN_BUTTON, source="learned")

    assert await rows(store.db, "SELECT item_id FROM vector_outbox WHERE kind = 'associations'") == []


async def test_other_files_of_a_query_are_other_associations(store: Store, project: tuple[int, Path]) -> None:
    await record(store, project, query="button", file_path=LOGIN_BUTTON, source="learned")
    await record(store, project, query="button", file_path="src/components/Button.tsx", source="learned")
    assert [row[2] for row in await stored(store)] == [LOGIN_BUTTON, "src/components/Button.tsx"]


async def test_files_outside_the_project_missing_or_not_files_are_rejected(
    store: Store, project: tuple[int, Path], tmp_path: Path
) -> None:
    _, root = project
    outside = tmp_path / "outside.ts"
    outside.write_text("x\n")
    (root / "escape.ts").symlink_to(outside)
    for file_path in (str(outside), "../outside.ts", "escape.ts", "src/Missing.tsx", "src", str(root)):
        outcome = await record(store, project, query="anything", file_path=file_path, source="agent")
        assert outcome == "rejected", file_path
    assert await record(store, project, query="   ", file_path=LOGIN_BUTTON, source="agent") == "rejected"
    assert await stored(store) == []
    assert await rows(store.db, "SELECT path FROM file_requests") == []


async def test_a_relative_path_follows_the_given_cwd(store: Store, project: tuple[int, Path]) -> None:
    _, root = project
    outcome = await record(
        store, project, query="login", file_path="auth/LoginButton.tsx", cwd=root / "src" / "features",
        source="learned",
    )  # fmt: skip
    assert outcome == "created"
    assert [row[2] for row in await stored(store)] == [LOGIN_BUTTON]


async def test_secrets_in_queries_and_patterns_are_redacted(store: Store, project: tuple[int, Path]) -> None:
    key = "ghp_" + "a1B2c3D4e5" * 4
    await record(
        store, project, query=f"why does {key} fail", file_path=LOGIN_BUTTON, source="learned",
        grep_patterns=[key],
    )  # fmt: skip
    [row] = await stored(store)
    assert key not in row[0] and key not in row[5]
