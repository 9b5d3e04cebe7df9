"""The `cairn` command line end to end, as a user runs it: real processes, real SQLite and Chroma."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.cli import cairn, cairn_json
from tests.helpers.paths import REAL_TRANSCRIPTS, real_transcripts


def tool_use_counts(path: Path) -> dict[str, int]:
    """Tool calls in a transcript, counted independently of cairn with plain json.loads."""
    counts: dict[str, int] = {}
    for raw in path.read_text().splitlines():
        if not raw.strip():
            continue
        message = json.loads(raw).get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    counts[block["name"]] = counts.get(block["name"], 0) + 1
    return counts


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: p.name)
def test_inspect_every_shared_fixture(cairn_home: Path, path: Path) -> None:
    report = cairn_json("inspect", str(path))
    total = report["total"]
    assert total["malformed_lines"] == 0
    assert total["tool_calls_by_name"] == tool_use_counts(path)


@pytest.mark.slow
def test_sync_shared_fixtures_is_idempotent_and_counts_match(cairn_home: Path) -> None:
    # Every fixture captured and embedded: minutes on two busy cores (it timed out at 240 s under load).
    first = cairn_json("sync", str(REAL_TRANSCRIPTS), timeout=900)
    files = first["sync"]["files"]
    # The hook-payload log beside the transcripts is not a Claude Code transcript and is not read.
    assert sorted(Path(f["path"]).name for f in files) == sorted(
        p.name for p in real_transcripts() if p.name != "sample_hook_logs.jsonl"
    )
    added = first["sync"]["messages_added"]
    assert added > 300
    assert all(f["malformed"] == 0 and f["error"] is None for f in files)
    stats = first["stats"]
    assert stats["messages"] == added
    assert stats["pending_vectors"] == 0
    assert stats["vectors"]["messages"] > 0
    assert stats["sessions"] >= 4

    second = cairn_json("sync", str(REAL_TRANSCRIPTS))
    assert second["sync"]["messages_added"] == 0
    assert second["stats"]["messages"] == added
    assert cairn_json("stats")["messages"] == added


def test_sync_without_transcripts_uses_the_demo_session(cairn_home: Path) -> None:
    out = cairn("sync")
    assert "demo session" in out.stdout
    stats = cairn_json("stats")
    assert stats["sessions"] == 1
    assert stats["messages"] > 10


def test_demo_secret_is_redacted_before_storage(cairn_home: Path) -> None:
    cairn("sync", "--demo")
    db = Path(cairn_json("config")["db_path"])
    import sqlite3

    with sqlite3.connect(db) as conn:
        texts = [row[0] for row in conn.execute("SELECT text FROM messages")]
    joined = "\n".join(texts)
    assert "sk-ant-api03-DEMO" not in joined
    assert "[REDACTED" in joined


def test_half_written_line_is_left_then_picked_up(cairn_home: Path, tmp_path: Path) -> None:
    source = (REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl").read_bytes()
    lines = source.splitlines(keepends=True)
    live = tmp_path / "projects" / "live-session.jsonl"
    live.parent.mkdir()
    last = lines[-1]
    live.write_bytes(
        b"".join(lines[:10])
        + b"{not json\n"
        + b"\x00\xff garbage\n"
        + b"".join(lines[10:-1])
        + last[: len(last) // 2]
    )

    report = cairn_json("inspect", str(live))["total"]
    assert report["malformed_lines"] == 2
    assert report["partial_bytes"] == len(last) // 2

    first = cairn_json("sync", str(live))["sync"]["files"][0]
    assert first["malformed"] == 2
    assert first["partial_bytes"] == len(last) // 2
    before = cairn_json("stats")["messages"]

    with live.open("ab") as fh:  # the writer finishes its line
        fh.write(last[len(last) // 2 :])
    second = cairn_json("sync", str(live))["sync"]["files"][0]
    assert second["partial_bytes"] == 0
    assert second["entries"] == 1
    assert second["malformed"] == 0
    assert cairn_json("stats")["messages"] == before + second["messages_added"]


@pytest.mark.process
def test_doctor_reports_every_component_ok_offline(cairn_home: Path, tmp_path: Path, demo_home: Path) -> None:
    user = {"HOME": str(tmp_path / "user-home")}  # `cairn install` edits ~/.claude: never the real one
    shutil.copytree(demo_home, cairn_home, symlinks=True)  # what `cairn sync --demo` makes
    cairn("install", env=user)
    report = cairn_json("doctor", env=user)
    assert report["ok"] is True, report
    assert {c["name"] for c in report["checks"]} == {
        "home",
        "sqlite",
        "store",
        "chroma",
        "embedding",
        "tokenizer",
        "model",
        "claude-code",
        "budget",
        "git",
        "claude-hooks",
        "claude-mcp",
        "launcher",
        "daemon",
    }
    model = next(c for c in report["checks"] if c["name"] == "model")
    assert model["detail"].startswith("offline")


@pytest.mark.process
def test_doctor_on_a_new_home_creates_no_vector_store(cairn_home: Path) -> None:
    """A check reports what is there: doctor before the first sync leaves no Chroma files behind."""
    report = json.loads(cairn("doctor", "--json", check=False).stdout)  # not installed yet: exit 1
    chroma = next(c for c in report["checks"] if c["name"] == "chroma")
    assert chroma["ok"] is True and "not created yet" in chroma["detail"], chroma
    assert not (cairn_home / "chroma").exists()


@pytest.mark.process
def test_doctor_fails_with_a_fix_when_the_key_is_missing(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_MODEL", "anthropic:claude-haiku-4-5")
    proc = cairn("doctor", "--json", check=False)
    assert proc.returncode == 1
    model = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "model")
    assert model["ok"] is False and "ANTHROPIC_API_KEY" in model["fix"]


def test_reindex_vectors_rebuilds_a_deleted_chroma(cairn_home: Path, demo_home: Path) -> None:
    shutil.copytree(demo_home, cairn_home, symlinks=True)  # what `cairn sync --demo` makes
    before = cairn_json("stats")["vectors"]
    shutil.rmtree(cairn_json("config")["chroma_dir"])
    assert cairn_json("stats")["vectors"]["messages"] == 0
    cairn("reindex-vectors")
    assert cairn_json("stats")["vectors"] == before


def test_reindex_vectors_moves_a_damaged_chroma_aside_and_rebuilds(cairn_home: Path, demo_home: Path) -> None:
    """A local vector store too damaged to open ("file is not a database") was a traceback; SQLite holds
    everything it needs, so the rebuild moves it aside (kept, and said where) and makes a new one."""
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    before = cairn_json("stats")["vectors"]
    chroma = Path(cairn_json("config")["chroma_dir"])
    (chroma / "chroma.sqlite3").write_bytes(b"not a database")
    proc = cairn("reindex-vectors")
    assert "Traceback" not in proc.stderr + proc.stdout
    [aside] = [p for p in chroma.parent.iterdir() if p.name.startswith(f"{chroma.name}.damaged-")]
    assert str(aside) in " ".join(proc.stdout.split()) and "file is not a database" in proc.stdout
    assert (aside / "chroma.sqlite3").read_bytes() == b"not a database"
    assert cairn_json("stats")["vectors"] == before


@pytest.mark.process
def test_a_second_process_gets_a_clear_error(cairn_home: Path, demo_home: Path) -> None:
    shutil.copytree(demo_home, cairn_home, symlinks=True)  # what `cairn sync --demo` makes
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
            import asyncio, sys
            from cairn.config import Settings
            from cairn.store.store import Store
            async def main():
                store = await Store.open(Settings.load())
                print("ready", flush=True)
                sys.stdin.readline()
                await store.close()
            asyncio.run(main())
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        proc = cairn("sync", "--demo", check=False)  # a writing command waits for the owner
        assert proc.returncode == 1
        assert f"process {holder.pid}" in proc.stderr
        assert "Traceback" not in proc.stderr
        reading = cairn("stats", check=False)  # a reading one answers from SQLite, read-only
        assert reading.returncode == 0, reading.stderr
        assert "Traceback" not in reading.stderr
    finally:
        holder.communicate("\n", timeout=30)
    assert cairn_json("stats")["sessions"] == 1


def test_bad_setting_is_one_clear_line(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_EMBEDDING", "word2vec")
    proc = cairn("stats", check=False)
    assert proc.returncode == 2  # a configuration error, as for a malformed config.toml
    assert "embedding" in proc.stderr and "$CAIRN_EMBEDDING" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_sync_with_an_unreachable_chroma_server_is_one_line_and_keeps_what_it_captured(
    cairn_home: Path, tmp_path: Path
) -> None:
    # Issue 30: `cairn sync` with a dead chroma_url ended in a VectorStoreUnavailable traceback.
    source = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
    proc = cairn(
        "sync", "--no-index", str(source), check=False, env={"CAIRN_CHROMA_URL": "http://127.0.0.1:9"}
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "cannot reach the Chroma server at http://127.0.0.1:9" in line and "captured is stored" in line
    stats = cairn_json("stats", env={"CAIRN_CHROMA_URL": "http://127.0.0.1:9"})
    assert stats["messages"] > 0, "SQLite, the truth, kept the capture"


@pytest.mark.process
def test_search_with_an_unreachable_chroma_server_answers_from_keywords_in_one_line(cairn_home: Path) -> None:
    # `cairn search` with a dead chroma_url printed a traceback (four chained
    # exceptions, through a logged warning) before falling back to keyword matches.
    # The search that opens the vector store without a daemon (by default it answers by keywords first).
    dead = {"CAIRN_CHROMA_URL": "http://127.0.0.1:9", "CAIRN_SEARCH_WITHOUT_DAEMON": "hybrid"}
    cairn(
        "sync",
        "--no-index",
        str(REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"),
        check=False,
        env=dead,
    )
    proc = cairn("search", "ls -la", env={**dead, "COLUMNS": "400"}, real_process=True)
    assert proc.stderr == "", proc.stderr
    [note] = [line for line in proc.stdout.splitlines() if line.startswith("note:")]
    assert "semantic search is unavailable, keyword matches only" in note
    assert "http://127.0.0.1:9" in note and "start the Chroma server, or unset chroma_url" in note
    assert "ls -la" in proc.stdout, "the keyword matches are the answer"
    page = json.loads(cairn("search", "ls -la", "--json", env=dead, real_process=True).stdout)
    assert page["results"] and page["notices"] == [note.removeprefix("note: ")]


def test_vectors_made_by_another_embedding_are_one_line_that_says_what_to_do(cairn_home: Path) -> None:
    # Issue 30: the conflict's message was untested, and it repeated Chroma's advice for its own users.
    cairn("sync", "--no-index", str(REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"))
    other = {  # an OpenAI-compatible endpoint nobody listens on: nothing leaves the machine
        "CAIRN_EMBEDDING": "openai",
        "CAIRN_EMBEDDING_URL": "http://127.0.0.1:9",
        "OPENAI_API_KEY": "sk-test",
    }
    source = REAL_TRANSCRIPTS / "entireio-cli" / "5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl"
    proc = cairn("sync", "--no-index", str(source), check=False, env=other)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "its vectors were made with cairn-minilm-int8" in line and "configured 'cairn-openai'" in line
    assert "Run `cairn reindex-vectors`" in line and "set `embedding` back" in line
    assert "If this is intentional" not in line, "Chroma's advice to its own users is left out"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc, where nothing can be created")
@pytest.mark.parametrize("home", ["/proc", "/proc/cairn-home"])
def test_a_home_cairn_cannot_use_is_one_line(cairn_home: Path, home: str) -> None:
    # Issue 30: CAIRN_HOME=/proc ended in a FileNotFoundError traceback.
    source = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
    for args in (("stats",), ("sync", "--no-index", str(source))):
        proc = cairn(*args, check=False, env={"CAIRN_HOME": home})
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        [line] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert f"cannot use CAIRN_HOME {home}" in line and "set CAIRN_HOME" in line


def test_inspect_missing_path_is_a_clear_error(cairn_home: Path) -> None:
    proc = cairn("inspect", "/nonexistent/x.jsonl", check=False)
    assert proc.returncode == 1 and "no such file" in proc.stderr


@pytest.mark.process
def test_doctor_says_what_to_do_without_git(cairn_home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with python but no git
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    proc = cairn("doctor", "--json", check=False, env={"PATH": str(bin_dir)})
    git = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "git")
    assert proc.returncode == 1 and git["ok"] is False and "CAIRN_FILES_INDEX=false" in git["fix"]
    off = cairn("doctor", "--json", check=False, env={"PATH": str(bin_dir), "CAIRN_FILES_INDEX": "false"})
    assert next(c for c in json.loads(off.stdout)["checks"] if c["name"] == "git")["ok"] is True
