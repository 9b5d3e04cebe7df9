"""cairn as a Claude Code plugin: where its marketplace is, whether Claude Code has it on, and
registering it through the `claude` CLI.

The plugin (`plugins/cairn` in a checkout, listed by the checkout's `.claude-plugin/marketplace.json`)
holds no copy of cairn: its hooks and MCP server run the launchers `cairn install --plugin` writes in
`CAIRN_HOME/bin`, else `cairn` on PATH (see `plugins/cairn/scripts/cairn-plugin`). So the plugin and
the settings.json hooks of a plain `cairn install` are two ways of wiring up the same commands, and
only one may be active at a time, or every prompt would be captured and recalled twice:
- `cairn install --plugin` (and a plain `cairn install` that finds the plugin enabled) takes cairn's
  hooks and MCP server out of Claude Code's settings files;
- a plain `cairn install` that puts them in leaves `CAIRN_HOME/bin/hooks-in-settings`, and the plugin,
  should it be enabled too, steps aside while that marker exists.

Claude Code keeps its plugins in its own files (`enabledPlugins` and `extraKnownMarketplaces` in
`~/.claude/settings.json`, the rest under `~/.claude/plugins`), whose format is its own business, so
cairn never writes them: it runs `claude plugin marketplace add` and `claude plugin install` (the CLI on
PATH, else the one the `claude-code` extra bundles) and only reads `enabledPlugins` to know the state.
Without a CLI it prints the two `/plugin` commands to type into Claude Code instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cairn.daemon import launcher
from cairn.errors import Failure

PLUGIN_NAME = "cairn"
MARKETPLACE_NAME = "cairn"
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE_NAME}"
# Where the repository keeps the marketplace and the plugin, relative to a checkout's root.
MARKETPLACE_FILE = Path(".claude-plugin") / "marketplace.json"
PLUGIN_DIR = Path("plugins") / PLUGIN_NAME
# `claude plugin …` reads and writes local files only for a directory marketplace; generous for a cold start.
CLI_TIMEOUT_S = 120.0


class PluginError(Failure):
    """The `claude` CLI refused or failed a plugin command; the message says which and why."""


@dataclass
class PluginReport:
    """What `cairn install` did about the plugin."""

    action: Literal["registered", "already", "manual", "removed", "absent"]
    plugin_id: str = PLUGIN_ID
    marketplace: str | None = None  # the marketplace's source: a checkout's path
    cli: str | None = None  # the `claude` CLI that did it
    commands: list[str] = field(default_factory=list)  # for "manual": what to type into Claude Code


def marketplace_root() -> Path | None:
    """The checkout this cairn runs from, when it holds the marketplace and the plugin; else None (an
    install from a wheel carries neither)."""
    root = Path(__file__).resolve().parents[2]
    plugin_manifest = root / PLUGIN_DIR / ".claude-plugin" / "plugin.json"
    return root if (root / MARKETPLACE_FILE).is_file() and plugin_manifest.is_file() else None


def user_settings_path() -> Path:
    """Claude Code's user settings, where `enabledPlugins` lives (`CLAUDE_CONFIG_DIR` moves it)."""
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(config_dir).expanduser() if config_dir else Path("~/.claude").expanduser()
    return base / "settings.json"


def enabled_plugin(settings_path: Path | None = None) -> str | None:
    """The id (`cairn@<marketplace>`) of a cairn plugin Claude Code has enabled for the user, or None.

    An unreadable or malformed settings file counts as none: this only decides whether a plain install
    would double the plugin's hooks, and `cairn install` reports that file's problems itself.
    """
    path = settings_path or user_settings_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
    if not isinstance(enabled, dict):
        return None
    for plugin_id, on in enabled.items():
        if on is True and isinstance(plugin_id, str) and plugin_id.split("@", 1)[0] == PLUGIN_NAME:
            return plugin_id
    return None


def claude_cli() -> str | None:
    """The `claude` CLI to register the plugin with: PATH's (the user's own Claude Code), else the
    bundled one."""
    from cairn.agent.claude_code_cli import bundled_cli

    found = shutil.which("claude")
    if found is not None:
        return found
    bundled = bundled_cli()
    return str(bundled) if bundled is not None else None


def manual_commands(root: Path | None) -> list[str]:
    """The two commands a user types into Claude Code to install the plugin from `root` (a checkout)."""
    source = str(root) if root is not None else "/path/to/your/cairn/checkout"
    return [f"/plugin marketplace add {source}", f"/plugin install {PLUGIN_ID}"]


def _run(cli: str, *args: str) -> dict[str, object]:
    """`claude plugin ARGS --json`: its one result line, or `PluginError` when it did not succeed."""
    env = {**os.environ, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    what = " ".join(["claude", "plugin", *args])
    try:
        proc = subprocess.run(
            [cli, "plugin", *args, "--json"],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise PluginError(f"`{what}` could not be run ({exc})") from exc
    lines = proc.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else {}
    except ValueError:
        result = {}
    if proc.returncode != 0 or not isinstance(result, dict) or result.get("outcome") != "ok":
        said = (
            (result.get("message") if isinstance(result, dict) else None)
            or proc.stderr.strip()
            or proc.stdout
        )
        raise PluginError(f"`{what}` failed (exit {proc.returncode}): {' '.join(str(said).split())[:500]}")
    return result


def register(cli: str | None = None, root: Path | None = None) -> PluginReport:
    """Make sure Claude Code has the cairn plugin enabled: add the checkout's marketplace and install
    the plugin through the `claude` CLI, or say what to type when there is no CLI or no checkout."""
    if (already := enabled_plugin()) is not None:
        return PluginReport("already", already)
    root = root or marketplace_root()
    cli = cli or claude_cli()
    if root is None or cli is None:
        return PluginReport("manual", marketplace=str(root) if root else None, commands=manual_commands(root))
    _run(cli, "marketplace", "add", str(root))
    _run(cli, "install", PLUGIN_ID, "--scope", "user")
    return PluginReport("registered", marketplace=str(root), cli=cli)


def unregister(cli: str | None = None) -> PluginReport:
    """Take the cairn plugin out of Claude Code (and the `cairn` marketplace it came from), through the
    `claude` CLI; without one, say what to type."""
    plugin_id = enabled_plugin()
    if plugin_id is None:
        return PluginReport("absent")
    cli = cli or claude_cli()
    if cli is None:
        return PluginReport("manual", plugin_id, commands=[f"/plugin uninstall {plugin_id}"])
    _run(cli, "uninstall", plugin_id)
    marketplace = plugin_id.split("@", 1)[1] if "@" in plugin_id else None
    if marketplace == MARKETPLACE_NAME:
        _run(cli, "marketplace", "remove", marketplace)
    return PluginReport("removed", plugin_id, cli=cli)


def default_bin() -> Path:
    """Where the plugin looks for the launchers when Claude Code's environment has no CAIRN_HOME."""
    return launcher.bin_dir(Path("~/.cairn").expanduser())


def plugin_sees(home: Path) -> bool:
    """Whether the plugin finds `home`'s launchers: `home` is the default `~/.cairn`, or `CAIRN_HOME` is
    set here, so a Claude Code started from this environment passes it on to the plugin's commands."""
    home = home.expanduser().resolve()
    return "CAIRN_HOME" in os.environ or home == Path("~/.cairn").expanduser().resolve()


def marker_path(home: Path) -> Path:
    return launcher.bin_dir(home) / launcher.SETTINGS_MARKER


def mark_hooks_in_settings(home: Path, settings_file: Path) -> None:
    """Leave the marker that tells the plugin cairn's hooks run from `settings_file`, so it steps aside."""
    path = marker_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(f"{settings_file.expanduser().absolute()}\n", encoding="utf-8")


def unmark_hooks_in_settings(home: Path) -> None:
    marker_path(home).unlink(missing_ok=True)
