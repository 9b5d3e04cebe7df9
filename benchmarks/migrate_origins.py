"""How long migration 14 takes to give every stored message its origin, next to a plain pass over
the same table measured in the same run.

Usage::

    .venv/bin/python benchmarks/migrate_origins.py [--messages 100000] [--json]

A schema-13 store is filled with `--messages` messages in sessions of 400 lines, laid out as Claude
Code sessions are: a prompt, then replies, tool calls (Bash, Read, Edit, TodoWrite) each answered by
its result, some failed — so every origin rule and the call lookup for results run on realistic rows.
Then `migrate()` brings it to the latest schema and the time is printed beside the baseline: one
`UPDATE messages SET is_noise = is_noise` over every row in one transaction, the least any migration
that writes each row costs. The target (issue 42): under a minute at 100K messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import aiosqlite

from cairn.store.migrations import migrate

TOOLS = (
    ("Bash", 'command="go test ./... -run TestResume" description="Run the resume tests"'),
    ("Read", 'file_path="/work/app/cmd/entire/cli/strategy/manual_commit.go"'),
    ("Edit", 'file_path="/work/app/README.md" old_string="a" new_string="b"'),
    ("TodoWrite", 'todos=[{"content":"Fix the lock","status":"completed"}]'),
)


def rows(count: int) -> list[tuple[object, ...]]:
    """`count` messages: per session of 400 lines, a prompt every 40 lines, then reply, call, result."""
    out: list[tuple[object, ...]] = []
    for n in range(count):
        session, line = divmod(n, 400)
        file_id = session + 1
        step = line % 4
        call_id = f"t{session}-{line - line % 4}"
        tool, rendered = TOOLS[(line // 4) % len(TOOLS)]
        if line % 40 == 0:
            out.append((file_id, line, "user", "text", f"please fix the failing test {n}", "[]", "[]"))
        elif step == 1:
            out.append((file_id, line, "assistant", "text", f"Looking at the failure {n} now.", "[]", "[]"))
        elif step == 2:
            calls = json.dumps([{"id": call_id, "name": tool, "input": rendered}])
            out.append((file_id, line, "assistant", "text", f"[tool_use {tool}] {rendered}", calls, "[]"))
        else:
            results = json.dumps([{"tool_use_id": call_id, "tool_name": tool, "is_error": n % 7 == 0}])
            text = f"[tool_result {tool}] --- FAIL: TestResume {n}\nexit status 1"
            out.append((file_id, line, "user", "tool_result", text, "[]", results))
    return out


async def fill(path: Path, count: int) -> None:
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        await migrate(conn, target=13)
        await conn.execute("BEGIN IMMEDIATE")
        files = count // 400 + 1
        await conn.executemany(
            "INSERT INTO transcript_files (id, path) VALUES (?, ?)",
            [(i, f"/t/{i}.jsonl") for i in range(1, files + 1)],
        )
        await conn.executemany(
            "INSERT INTO messages (file_id, line, end_line, byte_start, byte_end, role, kind, text, "
            "content_hash, tool_calls, tool_results) VALUES (?, ?, ?, 0, 1, ?, ?, ?, ?, ?, ?)",
            [
                (file_id, line, line, role, kind, text, f"h{i}", calls, results)
                for i, (file_id, line, role, kind, text, calls, results) in enumerate(rows(count))
            ],
        )
        await conn.execute("COMMIT")


async def measure(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cairn.db"
        await fill(path, count)
        async with aiosqlite.connect(path, isolation_level=None) as conn:
            started = time.perf_counter()
            await conn.execute("BEGIN IMMEDIATE")
            await conn.execute("UPDATE messages SET is_noise = is_noise")
            await conn.execute("COMMIT")
            baseline = time.perf_counter() - started
            started = time.perf_counter()
            await migrate(conn)
            migration = time.perf_counter() - started
            async with conn.execute("SELECT count(*) FROM messages WHERE origin IS NULL") as cursor:
                row = await cursor.fetchone()
            assert row is not None and row[0] == 0, "every message has its origin"
    return {"messages": count, "migration_s": round(migration, 2), "baseline_s": round(baseline, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(measure(args.messages))
    result["ratio"] = round(result["migration_s"] / max(result["baseline_s"], 1e-6), 1)
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"migration 14 over {result['messages']:,} messages: {result['migration_s']:.2f} s "
        f"(a plain UPDATE of every row: {result['baseline_s']:.2f} s, ratio {result['ratio']}x; "
        "target < 60 s)"
    )


if __name__ == "__main__":
    main()
