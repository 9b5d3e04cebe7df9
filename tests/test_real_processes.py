"""One real `cairn` process per command family, answering as the same command run in the test process does.

Most tests run commands in the test process (`tests/helpers/inprocess.py`). These check that nothing is
lost by it: each family's command, started as a user starts it (the console script, a new interpreter, every
import made afresh), exits the same, prints the same and writes nothing to stderr — no traceback, no
warning, no third-party banner at import. The real processes run side by side, so the module costs about
one process's start-up per core.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import inprocess
from tests.helpers.hostile_disks import CAIRN, cairn_env
from tests.helpers.paths import DEMO, REAL_TRANSCRIPTS

pytestmark = pytest.mark.process

#: Per family, a command that reads the indexed demo home; `--json` ones are compared as data.
READING = {
    "help": ["--help"],
    "stats": ["stats", "--json"],
    "memory": ["ideas", "--limit", "5", "--json"],
    "questions": ["questions", "--json"],
    "search": ["search", "database is locked", "--limit", "5", "--json"],
    "content": ["content", "--term", "busy_timeout", "--json"],
    "show": ["show", "1", "--json"],
    "timeline": ["timeline", "1", "--json"],
    "files": ["files", "--json"],
    "learn": ["learn", "stats", "--json"],
    "config": ["config", "--json"],
    "daemon": ["daemon", "status", "--json"],
    "inspect": ["inspect", str(DEMO), "--json"],
    "refusal": ["show", "99999"],
}

#: Per family, a command that writes.
WRITING = {
    "capture": ["sync", "--no-index", "--no-vectors", str(REAL_TRANSCRIPTS / "fasthooks"), "--json"],
    "export": ["export", "--project", "acme-api"],
    "redact": ["redact", "--rescan", "--json"],
}


def _comparable(args: list[str], stdout: str) -> Any:
    """What must be equal: the JSON minus what moves on its own (file size, timings, the clock in scores,
    a page token's signature)."""
    if "--json" not in args:
        return stdout
    data = json.loads(stdout)
    if isinstance(data, dict):
        for key in ("db_size_bytes", "took_ms", "wall_seconds", "next_token", "continuation_token"):
            data.pop(key, None)
        for result in data.get("results", []):
            result.pop("score", None)
            result.pop("scores", None)
    return data


def _shape(text: str) -> str:
    return re.sub(r"\d[\d.,]*", "N", text)


def _start(home: Path, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CAIRN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cairn_env(home)
    )


@pytest.fixture(scope="module")
def home(demo_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("real") / "home"
    shutil.copytree(demo_home, copy, symlinks=True)
    return copy


def test_every_family_answers_in_a_real_process_as_in_this_one(home: Path, tmp_path: Path) -> None:
    homes = {}  # a home per command and way: a process opening the vectors holds the store alone, and a
    for name in READING | WRITING:  # search counts its results' use, which `show` then prints
        for way in ("real", "here"):
            homes[name, way] = tmp_path / f"{name}-{way}"
            shutil.copytree(home, homes[name, way], symlinks=True)
    started = {name: _start(homes[name, "real"], args) for name, args in (READING | WRITING).items()}
    real = {name: (*proc.communicate(timeout=300), proc.returncode) for name, proc in started.items()}

    for name, args in (READING | WRITING).items():
        here_home = homes[name, "here"]
        here = inprocess.run(args, cairn_env(here_home))
        out, err, code = real[name]
        expected_code = 2 if name == "refusal" else 0
        assert code == here.returncode == expected_code, (name, err, here.stderr)
        if name == "refusal":
            assert err == here.stderr and "no idea #99999" in err and "Traceback" not in err
            continue
        if name == "capture":  # its progress lines, whose figures (times, rates) differ run to run
            assert _shape(err) == _shape(here.stderr) and "capture: done, 2/2 files" in err
        else:
            assert err == "", f"{name}: a real process wrote to stderr:\n{err}"
            assert here.stderr == "", f"{name}: the command in this process wrote to stderr:\n{here.stderr}"
        if name == "export":  # its header holds the time of the export
            assert out.splitlines()[1:] == here.stdout.splitlines()[1:] and len(out.splitlines()) > 10
            continue
        real_text, here_text = (
            out.replace(str(homes[name, "real"]), "~"),
            here.stdout.replace(str(here_home), "~"),
        )
        assert _comparable(args, real_text) == _comparable(args, here_text), name


def test_the_test_process_keeps_its_own_umask_and_environment(home: Path) -> None:
    """A command run here sets cairn's umask and reads its environment; the test process gets both back."""
    umask = os.umask(0o022)
    os.umask(umask)
    before = dict(os.environ)
    proc = inprocess.run(["stats", "--json"], {**cairn_env(home), "CAIRN_SEARCH_MIN_SCORE": "0.3"})
    assert proc.returncode == 0, proc.stderr
    assert dict(os.environ) == before
    assert os.umask(umask) == umask
