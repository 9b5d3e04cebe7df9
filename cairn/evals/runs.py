"""Saved eval runs: one JSON file per run, named so a directory of them sorts by time.

A run is kept whole — scores per field and case, misses, cost, and the retrieval results when the run
has them — because a comparison months later must not depend on the code that produced it: the JSON is
the record. `cairn.evals.compare` reads the plain dicts `load_run` returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cairn.errors import Refusal

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class RunFileError(Refusal):
    """A file is not a readable eval run."""


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-") or "unknown"


def _stamp(created_at: str | None) -> str:
    """`20261126T051147Z` from the run's ISO time (now, when the run has none)."""
    try:
        moment = datetime.fromisoformat(created_at) if created_at else datetime.now(UTC)
    except ValueError:
        moment = datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def run_filename(run: Mapping[str, Any]) -> str:
    """`<timestamp>-<model>-<prompt>.json`, e.g. `20261126T051147Z-offline-indexer-v1.json`; a benchmark
    run (`cairn eval qa`, `cairn eval locomo`) is named after its benchmark too: `...Z-qa-offline-...`."""
    model = _slug(str(run.get("model") or "unknown"))
    prompt = _slug(str(run.get("prompt_version") or "unknown"))
    benchmark = f"{_slug(str(run['benchmark']))}-" if run.get("benchmark") else ""
    return f"{_stamp(run.get('created_at'))}-{benchmark}{model}-{prompt}.json"


def save_run(run: Mapping[str, Any], out_dir: Path) -> Path:
    """Write `run` (the JSON of an `IndexingRun`, or a benchmark run from `cairn.evals.benchmark`) into
    `out_dir`; never overwrites an earlier run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / run_filename(run)
    counter = 2
    while path.exists():
        path = path.with_name(f"{path.stem.rsplit('~', 1)[0]}~{counter}.json")
        counter += 1
    path.write_text(json.dumps(run, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def load_run(path: Path) -> dict[str, Any]:
    """A saved run as a dict; raises `RunFileError` when the file is not one (a run has a model and
    `metrics` — indexing — or `retrieval` — a benchmark run)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunFileError(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise RunFileError(f"{path}: not JSON: {exc}") from exc
    scores = isinstance(data, dict) and any(isinstance(data.get(k), dict) for k in ("metrics", "retrieval"))
    if not scores or "model" not in data:
        raise RunFileError(f"{path}: not an eval run (no model and metrics; write runs with --out)")
    return data
