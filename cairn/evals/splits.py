"""Which labelled session is trained on and which is only measured: `evals/datasets/splits.json`.

Figures reported on the sessions a rule or a model was tuned on say little about the next project, so
every labelled session carries a split — `train` (tune and train on it freely), `validation` (measured,
never tuned on; whole projects held out) or `cross` (sessions of other projects, measured apart) — and
`cairn eval sessions` reports each split on its own (`evals/datasets/SPLITS.md` says why).

The file:

    {"sets": {"<set>": {"truth": "<truth file, relative to the splits file>",
                        "transcripts": "{repo}/tests/fixtures/transcripts"}},
     "sessions": [{"set": "<set>", "key": "<key in its truth file>", "project": "...", "split": "train"}]}

`{repo}` is the cairn repository, `{shared}` the shared folder beside it (`--shared`, `CAIRN_SHARED`,
default `<repo>/../shared`): the larger transcripts live there, not in the repository. Everything is
checked before any work, and each problem is one `BenchmarkError` line that says what to do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.evals.questions import BenchmarkError, read_json
from cairn.evals.truth import SessionTruth, TruthSet, load_truth

SPLITS = ("train", "validation", "cross")
SHARED_ENV = "CAIRN_SHARED"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_SPLITS = REPO / "evals" / "datasets" / "splits.json"


@dataclass(frozen=True)
class Entry:
    """One line of `sessions`: a labelled session, its project and split, not yet read."""

    set: str
    key: str
    project: str
    split: str


@dataclass(frozen=True)
class Splits:
    """A checked splits file: each set's truth file and transcripts directory, resolved, and its entries."""

    path: Path
    repo: Path
    shared: Path
    truth: dict[str, Path]  # set -> truth file
    transcripts: dict[str, Path]  # set -> transcripts directory
    on_shared: frozenset[str]  # the sets whose transcripts sit in the shared folder
    entries: tuple[Entry, ...]

    def present(self) -> list[str]:
        """The splits that have sessions, in `SPLITS` order."""
        return [name for name in SPLITS if any(e.split == name for e in self.entries)]


@dataclass(frozen=True)
class LabelledSession:
    """A labelled session ready to run: where it is from, its split, its transcript and its labels."""

    set: str
    key: str
    project: str
    split: str
    path: Path
    truth: SessionTruth

    @property
    def name(self) -> str:
        """Unique across sets: `<set>/<key>`."""
        return f"{self.set}/{self.key}"


def shared_folder(option: Path | None, repo: Path = REPO, env: Mapping[str, str] | None = None) -> Path:
    """The shared folder: `--shared`, else `CAIRN_SHARED`, else `<repo>/../shared`."""
    env = os.environ if env is None else env
    if option is not None:
        return option.expanduser().resolve()
    if env.get(SHARED_ENV):
        return Path(env[SHARED_ENV]).expanduser().resolve()
    return (repo.parent / "shared").resolve()


def _text(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BenchmarkError(f"{where}: `{field}` must be a non-empty string")
    return value


def _resolve(template: str, repo: Path, shared: Path) -> Path:
    return Path(template.replace("{repo}", str(repo)).replace("{shared}", str(shared))).expanduser()


def load_splits(path: Path | None = None, *, shared: Path | None = None, repo: Path = REPO) -> Splits:
    """Read and check a splits file (default: the repository's); nothing is read from the sets yet."""
    path = DEFAULT_SPLITS if path is None else path
    name = path.name
    if not path.is_file():
        raise BenchmarkError(f"{path}: no such splits file (pass --splits PATH)")
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("sets"), dict) or not data["sets"]:
        raise BenchmarkError(f"{name}: expected an object with `sets` (name -> truth, transcripts)")
    if not isinstance(data.get("sessions"), list) or not data["sessions"]:
        raise BenchmarkError(f"{name}: expected a non-empty `sessions` list")
    shared = shared_folder(shared, repo) if shared is None else shared.expanduser().resolve()
    truth: dict[str, Path] = {}
    transcripts: dict[str, Path] = {}
    on_shared: set[str] = set()
    for set_name, spec in data["sets"].items():
        where = f"{name}: set {set_name}"
        if not isinstance(spec, dict):
            raise BenchmarkError(f"{where}: expected {{truth, transcripts}}")
        truth[set_name] = _resolve(_text(spec.get("truth"), where, "truth"), repo, shared)
        if not truth[set_name].is_absolute():
            truth[set_name] = path.parent / truth[set_name]
        template = _text(spec.get("transcripts"), where, "transcripts")
        transcripts[set_name] = _resolve(template, repo, shared)
        if "{shared}" in template:
            on_shared.add(set_name)
    entries: list[Entry] = []
    seen: set[tuple[str, str]] = set()
    for index, raw in enumerate(data["sessions"], start=1):
        where = f"{name}: session {index}"
        if not isinstance(raw, dict):
            raise BenchmarkError(f"{where}: expected {{set, key, project, split}}")
        entry = Entry(*(_text(raw.get(f), where, f) for f in ("set", "key", "project", "split")))
        where = f"{name}: session {entry.key}"
        if entry.set not in truth:
            raise BenchmarkError(f"{where}: unknown set {entry.set!r} (the file's sets: {', '.join(truth)})")
        if entry.split not in SPLITS:
            raise BenchmarkError(f"{where}: unknown split {entry.split!r} (use {', '.join(SPLITS)})")
        if (entry.set, entry.key) in seen:
            raise BenchmarkError(f"{where}: listed twice")
        seen.add((entry.set, entry.key))
        entries.append(entry)
    return Splits(path, repo, shared, truth, transcripts, frozenset(on_shared), tuple(entries))


def select(splits: Splits, names: Sequence[str] | None = None, project: str | None = None) -> list[Entry]:
    """The entries of the splits `names` (default: every split present) and of `project` if given.

    An unknown split name, or a choice that holds no session, is refused."""
    chosen = list(dict.fromkeys(names)) if names else splits.present()
    if unknown := [n for n in chosen if n not in SPLITS]:
        raise BenchmarkError(f"unknown split {', '.join(unknown)}: use {', '.join(SPLITS)}")
    entries = [e for e in splits.entries if e.split in chosen and (project is None or e.project == project)]
    if not entries:
        projects = sorted({e.project for e in splits.entries if e.split in chosen})
        what = f"split {', '.join(chosen)}" + (f" and project {project}" if project else "")
        hint = f" (its projects: {', '.join(projects)})" if project and projects else ""
        raise BenchmarkError(f"{splits.path.name}: no labelled session in {what}{hint}")
    return entries


def _missing_shared(splits: Splits, set_name: str) -> str:
    return (
        f"set {set_name}: its transcripts are in the shared folder, and {splits.transcripts[set_name]} does "
        f"not exist (shared folder: {splits.shared}): pass --shared PATH or set {SHARED_ENV}"
    )


def load_sessions(splits: Splits, entries: Iterable[Entry]) -> list[LabelledSession]:
    """Read the truth file of every set the entries use (`load_truth` checks each label against its
    transcript) and return the entries as labelled sessions, in order."""
    entries = list(entries)
    sets: dict[str, TruthSet] = {}
    for set_name in dict.fromkeys(e.set for e in entries):
        folder = splits.transcripts[set_name]
        if not folder.is_dir():
            if set_name in splits.on_shared:
                raise BenchmarkError(_missing_shared(splits, set_name))
            raise BenchmarkError(f"set {set_name}: no such transcripts directory {folder}")
        if not splits.truth[set_name].is_file():
            raise BenchmarkError(f"set {set_name}: no such truth file {splits.truth[set_name]}")
        try:
            sets[set_name] = load_truth(splits.truth[set_name], folder)
        except BenchmarkError as exc:
            hint = f" (shared folder {splits.shared}: --shared PATH or {SHARED_ENV})"
            raise BenchmarkError(
                f"set {set_name}: {exc}" + (hint if set_name in splits.on_shared else "")
            ) from exc
    sessions = []
    for entry in entries:
        truth_set = sets[entry.set]
        if entry.key not in truth_set.sessions:
            raise BenchmarkError(
                f"{splits.path.name}: session {entry.key}: not in set {entry.set}'s {truth_set.path.name}"
            )
        sessions.append(
            LabelledSession(
                entry.set,
                entry.key,
                entry.project,
                entry.split,
                truth_set.files[entry.key],
                truth_set.sessions[entry.key],
            )
        )
    return sessions


def as_truth_set(splits: Splits, sessions: Sequence[LabelledSession]) -> TruthSet:
    """The sessions as one `TruthSet` keyed by `<set>/<key>`, for code that scores a single truth file
    (`cairn eval recall --split`)."""
    return TruthSet(
        path=splits.path,
        transcripts=splits.path.parent,
        sessions={s.name: s.truth for s in sessions},
        files={s.name: s.path for s in sessions},
    )
