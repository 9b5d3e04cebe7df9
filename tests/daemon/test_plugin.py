"""The Claude Code plugin: validated by the real `claude` CLI, installed with it, and its hook and MCP
commands run the way Claude Code runs them, with Claude Code's JSON payloads.

The CLI is the one the `claude-code` extra bundles, always with a temporary HOME (never the user's
~/.claude) and no non-essential traffic; without it these tests skip, except under CI=true, where they
fail. Every command runs as a real process against a real store in a temporary CAIRN_HOME.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cairn.config import Settings
from cairn.daemon import install as installer
from cairn.store.store import Store
from tests.agent.claude_code_helpers import hide_sdk, require_cli
from tests.daemon.helpers import Daemons, query, wait_for
from tests.helpers.cli import cairn
from tests.helpers.paths import DEMO, REAL_TRANSCRIPTS, REPO_ROOT
from tests.helpers.recall_hook import ON_TOPIC, injected, payload

PLUGIN = REPO_ROOT / "plugins" / "cairn"
PLUGIN_ID = "cairn@cairn"
VENV_BIN = Path(sys.executable).parent
# Claude Code's PATH without any cairn on it: the system's programs only.
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
TRANSCRIPT = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
HINT = "cairn plugin: no cairn found"


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME: Claude Code's settings and plugins, and the CLI's own state, live in it."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def claude(cli: Path, *args: str) -> Any:
    """`claude ARGS --json` in the test's HOME: its JSON answer (the last line of stdout)."""
    proc = subprocess.run(
        [str(cli), *args, "--json"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    try:
        return json.loads(proc.stdout)  # `plugin list` and `validate`: one document
    except ValueError:
        return json.loads(proc.stdout.strip().splitlines()[-1])  # the others: a result line, last


def installed_plugin(cli: Path) -> dict[str, Any] | None:
    """The cairn plugin as `claude plugin list` shows it, or None."""
    return next((p for p in claude(cli, "plugin", "list") if p["id"] == PLUGIN_ID), None)


def hook_commands(root: Path) -> dict[str, list[str]]:
    """hooks/hooks.json's commands by event, `${CLAUDE_PLUGIN_ROOT}` replaced as Claude Code does."""
    hooks = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"]
    return {
        event: [h["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(root)) for g in groups for h in g["hooks"]]
        for event, groups in hooks.items()
    }


def run_plugin(
    root: Path, command: str, data: dict[str, Any], *, path: str, home: Path
) -> subprocess.CompletedProcess[bytes]:
    """One plugin hook command through a shell, with the payload on stdin, as Claude Code runs it."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")},
        "PATH": path,
        "CAIRN_HOME": str(home),
        "CLAUDE_PLUGIN_ROOT": str(root),
        "CAIRN_HOOK_NO_SPAWN": "1",
        "CAIRN_RECALL_DEADLINE_MS": "20000",  # what is injected is tested here, not how fast
    }
    return subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(data).encode(), capture_output=True, env=env, timeout=120
    )


def make_store(home: Path) -> None:
    async def create() -> None:
        store = await Store.open(Settings.load(home))
        await store.close()

    asyncio.run(create())


def copied_transcript(tmp_path: Path) -> tuple[Path, str]:
    """A real transcript copied where Claude Code would keep a session's file, and the session's id."""
    session = str(uuid.uuid4())
    path = tmp_path / "projects" / "-workspace" / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(TRANSCRIPT, path)
    return path, session


def transcript_session(transcript: Path) -> str:
    """The session id the transcript's own lines carry (the file's name is the test's)."""
    for line in transcript.read_text().splitlines():
        if session := json.loads(line).get("sessionId"):
            return str(session)
    raise AssertionError(f"no sessionId in {transcript}")


def queued(home: Path, path: Path) -> list[tuple[object, ...]]:
    return query(home, "SELECT event, status FROM work_queue WHERE path = ?", (str(path),))


@pytest.mark.parametrize("target", [PLUGIN, REPO_ROOT], ids=["plugin", "marketplace"])
def test_claude_plugin_validate_passes_strictly(target: Path, user_home: Path) -> None:
    report = claude(require_cli(), "plugin", "validate", "--strict", str(target))
    assert report["success"] is True, report
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == [], report


def test_the_plugins_hooks_are_the_ones_cairn_install_writes() -> None:
    """Same events, matchers and timeouts as the settings.json hooks, so the two capture alike."""
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    wanted: dict[str, list[tuple[str, int]]] = {}
    for event in dict.fromkeys([*installer.HOOK_EVENTS, *installer.RECALL_EVENTS]):
        if event in installer.HOOK_EVENTS:
            wanted.setdefault(event, []).append(("capture", installer.HOOK_TIMEOUT_S))
        if event in installer.RECALL_EVENTS:
            wanted.setdefault(event, []).append(("recall", installer.RECALL_TIMEOUT_S))
    found = {
        event: [(h["command"].split()[1], h["timeout"]) for g in groups for h in g["hooks"]]
        for event, groups in hooks.items()
    }
    assert found == wanted
    for event, groups in hooks.items():
        assert [g.get("matcher") for g in groups] == ["" if event in installer.MATCHER_EVENTS else None]
    mcp = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    assert mcp == {"cairn": {"command": "${CLAUDE_PLUGIN_ROOT}/scripts/cairn-plugin", "args": ["mcp"]}}


def test_installed_plugin_hooks_capture_and_recall_like_the_settings_hooks(
    cairn_home: Path, user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = require_cli()
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.2")
    report = json.loads(cairn("index", str(DEMO), "--json").stdout)
    assert report["runs_failed"] == 0 and report["messages_added"] > 20
    install = cairn("install", "--plugin", "--no-ask", "--json", real_process=True)
    assert json.loads(install.stdout)["plugin"]["action"] == "registered"
    plugin = installed_plugin(cli)
    assert plugin is not None and plugin["enabled"] is True
    root = Path(plugin["installPath"])  # what Claude Code sets CLAUDE_PLUGIN_ROOT to
    commands = hook_commands(root)
    daemons = Daemons(cairn_home)
    try:
        daemons.start()
        transcript, session = copied_transcript(tmp_path)

        def hook(event: str, **fields: str) -> list[subprocess.CompletedProcess[bytes]]:
            data = {**payload(event, session, **fields), "transcript_path": str(transcript)}
            runs = [
                run_plugin(root, c, data, path=f"{VENV_BIN}:{SYSTEM_PATH}", home=cairn_home)
                for c in commands[event]
            ]
            for run in runs:
                assert run.returncode == 0 and run.stderr == b"", run.stderr
            return runs

        start = hook("SessionStart", source="startup")
        context = injected(start[0], "SessionStart")
        assert context is not None and "orders" in context, "the project's memory at session start"
        capture, recall = hook("UserPromptSubmit", prompt=ON_TOPIC)
        assert capture.stdout == b"", "capture prints nothing: it would reach Claude's context"
        assert injected(recall, "UserPromptSubmit") is not None, "memory on the prompt's topic"
        for event in ("Stop", "SubagentStop", "PreCompact", "SessionEnd"):
            assert [run.stdout for run in hook(event)] == [b""]
        # Each notification after the first indexing queues the file again; all of them get done.
        wait_for(
            lambda: {status for _, status in queued(cairn_home, transcript)} == {"done"},
            60,
            "every queued capture of the transcript to be indexed",
        )
        indexed = query(
            cairn_home,
            "SELECT count(*) FROM messages WHERE session_id = ?",
            (transcript_session(transcript),),
        )
        assert indexed[0][0] > 0, "the captured transcript's messages are in the memory"

        async def search() -> Any:
            server = StdioServerParameters(
                command=str(root / "scripts" / "cairn-plugin"),
                args=["mcp"],
                env={"HOME": str(user_home), "PATH": SYSTEM_PATH, "CAIRN_HOME": str(cairn_home)},
            )
            async with Client(server) as connected:
                result = await connected.call_tool("search", {"query": "orders tests database is locked"})
                assert not result.is_error, result.content
                return json.loads(result.content[0].text)

        assert asyncio.run(search())["results"], "the plugin's MCP server answers from the memory"
    finally:
        daemons.cleanup()


def test_without_an_install_the_plugin_runs_cairn_on_path_or_says_it_is_missing(
    cairn_home: Path, user_home: Path, tmp_path: Path
) -> None:
    make_store(cairn_home)  # a store, but no launchers: `cairn install --plugin` never ran
    commands = hook_commands(PLUGIN)
    transcript, session = copied_transcript(tmp_path)
    data = {**payload("Stop", session), "transcript_path": str(transcript)}

    missing = run_plugin(PLUGIN, commands["Stop"][0], data, path=SYSTEM_PATH, home=cairn_home)
    assert (missing.returncode, missing.stdout) == (0, b""), "never blocks, never reaches the context"
    assert missing.stderr.decode().startswith(HINT) and missing.stderr.count(b"\n") == 1
    start = run_plugin(
        PLUGIN,
        commands["SessionStart"][0],
        payload("SessionStart", session),
        path=SYSTEM_PATH,
        home=cairn_home,
    )
    assert start.returncode == 1 and start.stdout == b"" and HINT in start.stderr.decode(), (
        "a non-blocking error Claude Code shows once per session"
    )
    assert queued(cairn_home, transcript) == []

    on_path = run_plugin(PLUGIN, commands["Stop"][0], data, path=f"{VENV_BIN}:{SYSTEM_PATH}", home=cairn_home)
    assert (on_path.returncode, on_path.stdout, on_path.stderr) == (0, b"", b"")
    assert queued(cairn_home, transcript) == [("Stop", "pending")], "`cairn hook` from PATH captured it"


def test_the_plugin_steps_aside_while_the_settings_hooks_are_installed(
    cairn_home: Path, user_home: Path, tmp_path: Path
) -> None:
    cairn("install", "--no-ask")
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    (settings_capture,) = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    transcript, session = copied_transcript(tmp_path)
    data = {**payload("Stop", session), "transcript_path": str(transcript)}
    path = f"{VENV_BIN}:{SYSTEM_PATH}"

    plugin = run_plugin(PLUGIN, hook_commands(PLUGIN)["Stop"][0], data, path=path, home=cairn_home)
    assert (plugin.returncode, plugin.stdout, plugin.stderr) == (0, b"", b"")
    assert queued(cairn_home, transcript) == [], "the settings hook captures; the plugin's would double it"
    run_plugin(PLUGIN, settings_capture, data, path=path, home=cairn_home)
    assert queued(cairn_home, transcript) == [("Stop", "pending")]
    server = subprocess.run(
        [str(PLUGIN / "scripts" / "cairn-plugin"), "mcp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        timeout=60,
    )
    assert server.returncode == 1 and "already registered by 'cairn install'" in server.stderr


USERS_STOP_HOOK = {"hooks": [{"type": "command", "command": "notify-send done"}]}


def test_install_plugin_replaces_the_settings_hooks_and_uninstall_removes_the_plugin(
    cairn_home: Path, user_home: Path
) -> None:
    cli = require_cli()
    settings_file = user_home / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps({"hooks": {"Stop": [USERS_STOP_HOOK]}}))
    config = user_home / ".claude.json"
    cairn("install", "--no-ask")
    assert installer.MCP_SERVER_NAME in json.loads(config.read_text())["mcpServers"]

    for args in (["--plugin"], []):  # then a plain install, which finds the plugin enabled
        out = cairn("install", *args, "--no-ask", real_process=True).stdout
        data = json.loads(settings_file.read_text())
        assert data["hooks"] == {"Stop": [USERS_STOP_HOOK]}, "only the user's own hook is left"
        assert data["enabledPlugins"] == {PLUGIN_ID: True}
        servers = json.loads(config.read_text()).get("mcpServers", {}) if config.exists() else {}
        assert installer.MCP_SERVER_NAME not in servers, (
            "the plugin serves it; two servers would double the tools"
        )
        assert not (cairn_home / "bin" / "hooks-in-settings").exists()
        assert (cairn_home / "bin" / "cairn-hook").exists(), "the plugin runs the launchers"
    assert f"the Claude Code plugin {PLUGIN_ID} is enabled" in " ".join(out.split())
    checks = {c["name"]: c for c in json.loads(cairn("doctor", "--json", check=False).stdout)["checks"]}
    assert checks["claude-hooks"]["ok"] and "plugin" in checks["claude-hooks"]["detail"], checks[
        "claude-hooks"
    ]
    assert checks["claude-mcp"]["ok"] and "plugin" in checks["claude-mcp"]["detail"], checks["claude-mcp"]

    refused = cairn("install", "--no-recall", "--no-ask", check=False)
    assert refused.returncode == 2 and "recall_enabled = false" in " ".join(refused.stderr.split())

    cairn("install", "--uninstall", real_process=True)
    assert installed_plugin(cli) is None
    assert PLUGIN_ID not in json.loads(settings_file.read_text()).get("enabledPlugins", {})
    assert json.loads(settings_file.read_text())["hooks"] == {"Stop": [USERS_STOP_HOOK]}
    assert not (cairn_home / "bin").exists()


def settings_hooks(user_home: Path) -> list[str]:
    """The commands of cairn's hooks in ~/.claude/settings.json."""
    data = json.loads((user_home / ".claude" / "settings.json").read_text())
    return [
        h["command"]
        for groups in data.get("hooks", {}).values()
        for g in groups
        for h in g["hooks"]
        if installer.is_owned_command(h["command"])
    ]


def test_without_a_claude_cli_install_plugin_says_what_to_type_and_capture_goes_on(
    cairn_home: Path, user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cairn("install", "--no-ask")
    hooks = settings_hooks(user_home)
    hide_sdk(monkeypatch)  # no bundled CLI
    monkeypatch.setenv("PATH", f"{VENV_BIN}:{SYSTEM_PATH}")  # and none on PATH
    out = " ".join(cairn("install", "--plugin", "--no-ask").stdout.split())
    assert f"/plugin marketplace add {REPO_ROOT} /plugin install {PLUGIN_ID}" in out
    assert settings_hooks(user_home) == hooks, (
        "until the plugin is enabled, the settings hooks keep capturing"
    )
    assert (cairn_home / "bin" / "hooks-in-settings").exists(), "and the plugin, once enabled, steps aside"


def test_a_failing_claude_cli_is_one_line_exit_1_and_the_settings_hooks_stay(
    cairn_home: Path, user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cairn("install", "--no-ask")
    hooks = settings_hooks(user_home)
    fake = tmp_path / "fake-bin" / "claude"
    fake.parent.mkdir()
    reply = '{"command":"marketplace-add","outcome":"error","message":"blocked by your organization"}'
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' '{reply}'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{VENV_BIN}:{SYSTEM_PATH}")
    failed = cairn("install", "--plugin", "--no-ask", check=False)
    assert failed.returncode == 1
    (line,) = [ln for ln in failed.stderr.splitlines() if ln.startswith("error:")]
    assert "claude plugin marketplace add" in " ".join(failed.stderr.split())
    assert "blocked by your organization" in " ".join(failed.stderr.split()), line
    assert settings_hooks(user_home) == hooks
