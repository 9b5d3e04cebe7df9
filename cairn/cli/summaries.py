"""The figures a long job's summary table shows, out of the JSON it prints with `--json`.

The JSON keeps everything, the per-session list and the indexer's bookkeeping included; a person gets
figures instead: how much was captured, embedded and indexed, what the memory gained, what each phase
took, and the elapsed time of the whole command with the rate it makes — the number a user compares
with their wait. Token counts appear only for a model that is paid per token: the offline indexer's
count is an estimate of what a model would have been sent, and next to a run it reads like spend.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from cairn.cli.common import console, counts, err, key_value_table, plural
from cairn.cli.progress import PHASES, duration
from cairn.cli.safe import plain_text
from cairn.config import Settings


def is_billed(model: Any, settings: Settings) -> bool:
    """Whether `model` (a job JSON's `model`) is paid per token; a JSON without one (an older daemon's)
    counts as paid, so its tokens are shown rather than hidden."""
    from cairn.pricing import billed

    return billed(str(model or ""), settings.model_base_url)


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


def memory_rows(data: dict[str, Any], *, ideas: bool = True) -> dict[str, str]:
    """What indexing added to the memory, from the job's `applied` counts: ideas by intent, topics,
    entities, and the links between them (`ideas=False` when the caller has its own ideas row)."""
    applied = data.get("applied") or {}

    def n(key: str) -> int:
        return int(applied.get(key) or 0)

    by_intent = applied.get("ideas_by_intent") or {}
    rows: dict[str, str] = {}
    if ideas:
        total = sum(by_intent.values())
        rows["ideas"] = f"{total:,}" + (f" ({counts(by_intent)})" if total else "")
    rows["topics"] = f"{n('spans_opened'):,} new, {n('spans_updated'):,} updated"
    rows["entities"] = f"{n('entities_created'):,} new, {n('entities_reused'):,} reused"
    relations = sum((applied.get("relations_by_type") or {}).values())
    rows["links"] = (
        f"{plural(relations, 'relation')}, {plural(n('questions_answered'), 'question')} answered, "
        f"{plural(n('todos_completed'), 'todo')} completed"
    )
    return rows


def run_rows(data: dict[str, Any], billed: bool) -> dict[str, str]:
    """The indexing runs: how many went well, why the job stopped early if it did, what validation
    refused, and (for a paid model) the tokens sent and received."""
    runs = f"{data.get('runs_ok', 0)} ok, {data.get('runs_failed', 0)} failed"
    if data.get("skipped_batches"):
        runs += f", {plural(int(data['skipped_batches']), 'batch', 'batches')} skipped"
    if data.get("paused_until"):
        runs += "; stopped early: the daily token budget is spent (the line below says until when)"
    elif data.get("stopped"):
        runs += f"; stopped early: {data['stopped']}"
    rows = {"runs": runs}
    if data.get("rejected"):
        rows["rejected"] = f"{plural(int(data['rejected']), 'proposed item')} refused by validation"
    if billed:
        rows["tokens"] = f"{int(data.get('input_tokens', 0)):,} in, {int(data.get('output_tokens', 0)):,} out"
    return rows


def print_failures(data: dict[str, Any]) -> None:
    """Each failed run on stderr, one line with its id and error; then, when the daily token budget
    stopped the job, that line on its own, whole (the table's cell may wrap it)."""
    for failure in data.get("failures") or []:
        err.print(
            Text(f"run {failure['run_id']} {failure['outcome']}", style="yellow")
            + plain_text(f": {failure['error']}")
        )
    if data.get("paused_until") and data.get("stopped"):
        err.print(
            Text("indexing paused: ", style="yellow") + plain_text(str(data["stopped"])), soft_wrap=True
        )


def render_index(data: dict[str, Any], billed: bool) -> None:
    """The `indexed` table of `sync` and `index`: what the memory gained and how the runs went (the
    JSON of `cairn.daemon.jobs.index_json`; the rest of a job's JSON is left to `--json`)."""
    console.print(key_value_table("indexed", {**memory_rows(data), **run_rows(data, billed)}))
    print_failures(data)


def backfill_summary(data: dict[str, Any], billed: bool) -> Table:
    """The `backfill` table: sessions, messages, vectors, what the memory gained, runs, times."""
    status = f"{data['sessions_done']} of {data['sessions_total']} done"
    if data.get("interrupted"):
        status += ", interrupted"
    captured = int(data.get("messages_added", 0))
    rows = {
        "sessions": status,
        "messages": f"{captured:,} captured, {int(data.get('messages_indexed', 0)):,} indexed",
        # The job's embedder writes the messages' vectors; those of ideas, topics and entities are
        # written as each run makes them, and `cairn stats` counts them all.
        "message vectors": f"{int(data.get('vectors_written', 0)):,} written",
        **memory_rows(data),
        **run_rows(data, billed),
        **elapsed_rows(data, captured),
    }
    return key_value_table("backfill", rows)
