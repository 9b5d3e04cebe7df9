"""`cairn export` and `cairn import`: a round trip into a fresh home, merging, and bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.lifecycle.importer import MAX_LINE_CHARS, ImportFormatError, open_export
from cairn.lifecycle.ops import import_op
from cairn.lifecycle.tables import FORMAT_VERSION
from cairn.store.store import Store
from tests.helpers.builders import Transcript
from tests.helpers.cli import cairn, cairn_json
from tests.lifecycle.helpers import found_in_files

QUERIES = ("database is locked", "should we move orders to postgres", "Next.js version", "CLAUDE.md file")


def env_for(home: Path) -> dict[str, str]:
    return {**os.environ, "CAIRN_HOME": str(home)}


def comparable_stats(home: Path) -> dict[str, Any]:
    """`cairn stats --json` minus what names or measures the file itself."""
    data = cairn_json("stats", env=env_for(home))
    return {k: v for k, v in data.items() if k not in {"db_path", "db_size_bytes"}}


def results(home: Path) -> list[list[tuple[Any, ...]]]:
    """Each query's page: kind, snippet, session and score of every result, in order."""
    pages = [cairn_json("search", q, "--limit", "8", env=env_for(home))["results"] for q in QUERIES]
    return [[(r["kind"], r["snippet"], r["session"]["id"], r["score"]) for r in page] for page in pages]


def assert_same_pages(got: list[list[tuple[Any, ...]]], want: list[list[tuple[Any, ...]]]) -> None:
    """The same results with the same scores to 0.001, in the same order wherever the order means
    something: a score holds recency, which moves as the clock does (the demo session is a week old, so
    the minute an import takes moves a score by ~1e-6), and an import embeds its texts in other batches
    than the sync did, so a vector can differ in its sixth decimal. Results whose scores lie within 0.001
    of each other (a tie, to the page's eye) may therefore come in either order; each such band must
    hold the same results, and the bands must come in the same order."""
    assert [len(page) for page in got] == [len(page) for page in want]
    for got_page, want_page in zip(got, want, strict=True):
        assert [r[-1] for r in got_page] == pytest.approx([r[-1] for r in want_page], abs=1e-3)
        assert _bands(got_page, want_page) == _bands(want_page, want_page)


def _bands(page: list[tuple[Any, ...]], reference: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """`page` cut where `reference`'s scores step by more than 0.001, each band sorted."""
    bands: list[list[tuple[Any, ...]]] = []
    for i, row in enumerate(page):
        if i == 0 or abs(reference[i][-1] - reference[i - 1][-1]) > 1e-3:
            bands.append([])
        bands[-1].append(row[:-1])
    return [sorted(band, key=repr) for band in bands]


def test_round_trip_into_a_fresh_home_gives_the_same_stats_and_search(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "memory.jsonl"
    cairn("export", "--out", str(export))
    assert export.stat().st_mode & 0o777 == 0o600
    header = json.loads(export.read_text().splitlines()[0])
    assert header["format"] == "cairn-export" and header["version"] == FORMAT_VERSION and header["cairn"]
    expected_stats, expected_results = comparable_stats(home), results(home)

    fresh = tmp_path / "fresh-home"
    report = cairn_json("import", str(export), env=env_for(fresh))
    assert report["bad_lines"] == 0 and report["total_added"] == len(export.read_text().splitlines()) - 1
    assert report["vectors_written"] > 0
    assert comparable_stats(fresh) == expected_stats
    assert report["vectors_written"] == sum(expected_stats["vectors"].values()), "what the store holds"
    assert_same_pages(results(fresh), expected_results)
    assert any(page for page in expected_results)

    again = cairn_json("import", str(export), env=env_for(fresh))
    assert again["total_added"] == 0 and sum(again["already_present"].values()) == report["total_added"]
    assert comparable_stats(fresh) == expected_stats, "importing the same file twice changes nothing"


@pytest.mark.process
def test_export_piped_into_import_on_stdin(home: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "piped-home"
    exported = subprocess.run(
        [sys.executable, "-m", "cairn", "export", "--project", "acme-api"],
        capture_output=True,
        check=True,
        env=env_for(home),
        timeout=240,
    )
    imported = subprocess.run(
        [sys.executable, "-m", "cairn", "import", "-", "--json"],
        input=exported.stdout,
        capture_output=True,
        check=True,
        env=env_for(fresh),
        timeout=240,
    )
    assert json.loads(imported.stdout)["added"]["projects"] == 1
    projects = cairn_json("projects", env=env_for(fresh))
    assert [p["name"] for p in projects] == ["acme-api"]
    assert not list(fresh.glob("import-*")), "stdin's temporary copy is removed"


def test_import_into_a_store_that_forgot_part_merges_it_back(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "all.jsonl"
    cairn("export", "--out", str(export))
    whole = comparable_stats(home)
    cairn("forget", "--project", "acme-api", "--yes")
    assert comparable_stats(home)["projects"] == whole["projects"] - 1
    report = cairn_json("import", str(export))
    assert report["added"]["projects"] == 1 and report["already_present"]["projects"] == 1
    merged = comparable_stats(home)
    for key in (
        "projects",
        "sessions",
        "messages",
        "ideas",
        "relations",
        "topic_spans",
        "entities",
        "vectors",
    ):
        assert merged[key] == whole[key], key


def test_bad_lines_are_counted_and_the_rest_imported(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "good.jsonl"
    cairn("export", "--project", "acme-api", "--out", str(export))
    lines = export.read_text().splitlines()
    damaged = [
        lines[0],
        "not json at all",
        json.dumps({"type": "no_such_table", "row": {}}),
        json.dumps({"type": "ideas", "row": {"bogus_column": 1}}),
        *lines[1:],
        '{"type": "messages", "row": {"id": 1, "file_id"',  # a line cut short
    ]
    bad = tmp_path / "damaged.jsonl"
    bad.write_text("\n".join(damaged) + "\n")
    fresh = tmp_path / "fresh"
    report = cairn_json("import", str(bad), env=env_for(fresh))
    assert report["bad_lines"] == 4 and len(report["bad_examples"]) == 4
    assert report["total_added"] == len(lines) - 1
    assert "line 2" in report["bad_examples"][0]


def test_unknown_or_newer_format_is_refused_in_one_line(home: Path, tmp_path: Path) -> None:
    before = comparable_stats(home)
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"format": "cairn-export", "version": 99, "cairn": "9.0"}) + "\n")
    refused = cairn("import", str(newer), check=False)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "version 99" in refused.stderr and "upgrade cairn" in refused.stderr
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": "world"}\n')
    not_export = cairn("import", str(other), check=False)
    assert not_export.returncode == 2 and "not a cairn export" in not_export.stderr
    missing = cairn("import", str(tmp_path / "absent.jsonl"), check=False)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert comparable_stats(home) == before


def test_export_over_an_existing_file_or_link_writes_a_new_private_file(home: Path, tmp_path: Path) -> None:
    """Issue 30: `--out` onto a 0644 file kept its mode (the whole memory world-readable), and onto a
    symlink wrote through it. The export is a new 0600 file put in place; the link's target is untouched."""
    out = tmp_path / "out"
    out.mkdir()
    shared = out / "shared.jsonl"
    shared.write_text("old contents\n")
    shared.chmod(0o644)
    cairn("export", "--out", str(shared))
    assert shared.stat().st_mode & 0o777 == 0o600
    assert json.loads(shared.read_text().splitlines()[0])["format"] == "cairn-export"

    victim = out / "victim.txt"
    victim.write_text("not yours\n")
    link = out / "link.jsonl"
    link.symlink_to(victim)
    cairn("export", "--out", str(link))
    assert victim.read_text() == "not yours\n"
    assert not link.is_symlink() and link.stat().st_mode & 0o777 == 0o600
    assert link.read_text().splitlines()[1:] == shared.read_text().splitlines()[1:]  # the header has the time
    left = sorted(p.name for p in out.iterdir())
    assert left == ["link.jsonl", "shared.jsonl", "victim.txt"], "no temporary file is left"


def test_an_export_escapes_what_would_drive_a_terminal_and_reads_back_the_same(
    cairn_home: Path, tmp_path: Path
) -> None:
    """Issue 30: `cairn export` to stdout passed a raw U+009B (a CSI: `\\x9b2J` clears a screen) and a raw
    U+202E (reverses what is read) from transcript text; JSON escapes only C0 controls itself."""
    said = "run \u009b2J then open \u202etxt.exe and ‎done"
    transcript = Transcript("/home/dev/tricky")
    transcript.user(said)
    transcript.say("Noted, née café.")
    path = tmp_path / f"{transcript.session_id}.jsonl"
    path.write_text(transcript.text())
    cairn("sync", "--no-index", "--no-vectors", str(path))
    printed = cairn("export").stdout
    assert not any(c in printed for c in "\u009b\u202e\u200e") and "\\u009b" in printed and "née" in printed
    texts = [json.loads(line)["row"].get("text") for line in printed.splitlines()[1:]]
    assert said in texts, "a JSON reader gets the stored text back exactly"


#: Secrets a crafted or old export may carry raw, in the text of a message and of an idea.
RAW_SECRETS = (
    "ghp_" + "a1B2c3D4e5" * 4,
    "AKIA" + "QWERTYUIOP123456",
    "mysql -u root -pS3cretPass99",
    "password=hunter2hunter2",
)


def test_import_redacts_what_capture_would_have(home: Path, tmp_path: Path) -> None:
    """Issue 30: `cairn import` stored a crafted export's raw tokens, keys and passwords."""
    export = tmp_path / "clean.jsonl"
    cairn("export", "--project", "acme-api", "--out", str(export))
    lines = export.read_text().splitlines()
    records = [json.loads(line) for line in lines[1:]]
    message = next(r for r in records if r["type"] == "messages" and r["row"].get("text"))
    idea = next(r for r in records if r["type"] == "ideas")
    message["row"]["text"] += " then run: " + " && ".join(RAW_SECRETS)
    idea["row"]["content"] += " (token: " + RAW_SECRETS[0] + ")"
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text("\n".join([lines[0], *(json.dumps(r) for r in records)]) + "\n")

    fresh = tmp_path / "fresh"
    report = cairn_json("import", str(crafted), env=env_for(fresh))
    assert report["bad_lines"] == 0 and report["total_added"] == len(records)
    assert report["secrets_redacted"] >= len(RAW_SECRETS) + 1
    for secret in ("a1B2c3D4e5", "QWERTYUIOP123456", "S3cretPass99", "hunter2hunter2"):
        assert found_in_files(fresh, secret.encode()) == [], f"{secret} is stored"
    with contextlib.closing(sqlite3.connect(fresh / "cairn.db")) as conn:
        [(stored,)] = conn.execute("SELECT text FROM messages WHERE text LIKE '% then run: %'").fetchall()
    assert stored.count("[REDACTED:") == len(RAW_SECRETS), stored[-300:]


def test_hostile_lines_are_skipped_and_counted_not_fatal(home: Path, tmp_path: Path) -> None:
    """Issue 30: 100,000-deep nesting (RecursionError) or an integer past SQLite's (OverflowError)
    aborted the whole import with a traceback; a newline-less line is read no further than the limit."""
    export = tmp_path / "good.jsonl"
    cairn("export", "--project", "acme-api", "--out", str(export))
    lines = export.read_text().splitlines()
    hostile = [
        lines[0],
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"type": "projects", "row": {"path": "/x", "id": 2**70}}),
        '{"type": "projects", "row": {"path": "' + "y" * (MAX_LINE_CHARS + 10) + '"}}',
        *lines[1:],
    ]
    bad = tmp_path / "hostile.jsonl"
    bad.write_text("\n".join(hostile) + "\n")
    report = cairn_json("import", str(bad), env=env_for(tmp_path / "fresh"))
    assert report["bad_lines"] == 3, report["bad_examples"]
    assert report["total_added"] == len(lines) - 1
    assert "nested too deep" in report["bad_examples"][0] and "longer than" in report["bad_examples"][2]


@pytest.mark.process
def test_a_fifo_is_refused_unread_by_the_command_and_the_daemon(home: Path, tmp_path: Path) -> None:
    """Issue 30: the daemon's `import` op opened a FIFO and blocked its event loop: every request hung."""
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    refused = cairn("import", str(fifo), check=False, real_process=True, timeout=60)
    assert refused.returncode == 2 and "not a regular file" in refused.stderr
    settings = Settings.load(home)
    with pytest.raises(ImportFormatError, match="not a regular file"):
        open_export(str(fifo))
    assert asyncio.run(_import_op_refuses(settings, fifo)) == "refused"


async def _import_op_refuses(settings: Settings, fifo: Path) -> str:
    store = await Store.open(settings)
    try:
        await import_op(store, path=str(fifo))
    except ImportFormatError:
        return "refused"
    finally:
        await store.close()
    return "imported"


def _ideas_at(home: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    """Every idea by (transcript path, line, content hash): its place, as an export keys it."""
    with contextlib.closing(sqlite3.connect(home / "cairn.db")) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(
            "SELECT f.path, i.* FROM ideas i JOIN transcript_files f ON f.id = i.source_file_id"
        ).fetchall()
    return {(r["path"], r["source_line"], r["content_hash"]): dict(r) for r in rows}


def test_corrections_round_trip_and_a_forgotten_idea_is_not_merged_back(home: Path, tmp_path: Path) -> None:
    """Issue 32: the corrections and `declined_at` travel with an export; importing an older export into
    a store that forgot an idea as wrong leaves that idea out (counted), and merges the rest."""
    ideas = cairn_json("ideas", "--project", "acme-api", "--limit", "100")
    declined, weighed, wrong = ideas[0], ideas[1], ideas[2]
    before_forget = tmp_path / "before.jsonl"
    cairn("export", "--out", str(before_forget))
    cairn("correct", str(declined["id"]), "--declined")
    cairn("correct", str(weighed["id"]), "--importance", "0.97")
    cairn("forget", "--idea", str(wrong["id"]), "--yes")
    after_forget = tmp_path / "after.jsonl"
    cairn("export", "--out", str(after_forget))
    assert '"type": "idea_corrections"' in after_forget.read_text()

    fresh = tmp_path / "fresh"
    report = cairn_json("import", str(after_forget), env=env_for(fresh))
    assert report["bad_lines"] == 0 and report["added"]["idea_corrections"] == 3
    want, got = _ideas_at(home), _ideas_at(fresh)
    assert set(got) == set(want)
    for key, row in want.items():
        assert (got[key]["declined_at"], got[key]["importance"]) == (row["declined_at"], row["importance"])
    assert sum(1 for row in got.values() if row["declined_at"]) == 1

    merged = cairn_json("import", str(before_forget))
    assert merged["forgotten_skipped"] == 1 and merged["bad_lines"] == 0
    assert wrong["id"] not in {i["id"] for i in cairn_json("ideas", "--limit", "1000")}
    assert set(_ideas_at(home)) == set(want), "the wrong idea stayed out, nothing else changed"
