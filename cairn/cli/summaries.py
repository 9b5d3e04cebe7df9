"""The figures a long job's summary table shows, out of the JSON it prints with `--json`.

The JSON keeps everything, the per-session list included; a person gets figures instead: how much
was captured, embedded and indexed, what each phase took, and the elapsed time of the whole command
with the rate it makes — the number a user compares with their wait.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cairn.cli.common import key_value_table
from cairn.cli.progress import PHASES, duration


def phase_times(data: dict[str, Any]) -> str:
    """`capture 3.1s, embedding 40.2s, indexing 12.0s` from a job's `<phase>_seconds` keys."""
    return ", ".join(
        f"{label} {duration(float(data[f'{name}_seconds']))}"
        for name, (label, _side) in PHASES.items()
        if f"{name}_seconds" in data
    )


def elapsed_rows(data: dict[str, Any], messages: int) -> dict[str, str]:
    """The phases' times, the whole command's elapsed time, and the messages/s that makes."""
    rows = {"phases": phase_times(data)} if phase_times(data) else {}
    wall = float(data.get("wall_seconds") or 0.0)
    rows["elapsed"] = f"{duration(wall)} (the whole command)"
    if messages and wall > 0:
        rows["rate"] = f"{messages / wall:,.1f} messages/s end to end"
    return rows


def backfill_summary(data: dict[str, Any]) -> Table:
    """The `backfill` table: sessions, messages, vectors, ideas, runs, tokens, times."""
    applied = data.get("applied") or {}
    ideas = sum((applied.get("ideas_by_intent") or {}).values())
    status = f"{data['sessions_done']} of {data['sessions_total']} done"
    if data.get("interrupted"):
        status += ", interrupted"
    captured = int(data.get("messages_added", 0))
    rows = {
        "sessions": status,
        "messages": f"{captured:,} captured, {int(data.get('messages_indexed', 0)):,} indexed",
        "vectors": f"{int(data.get('vectors_written', 0)):,} written",
        "ideas": f"{ideas:,}",
        "runs": f"{data.get('runs_ok', 0)} ok, {data.get('runs_failed', 0)} failed",
        "tokens": f"{int(data.get('input_tokens', 0)):,} in, {int(data.get('output_tokens', 0)):,} out",
        **elapsed_rows(data, captured),
    }
    return key_value_table("backfill", rows)
