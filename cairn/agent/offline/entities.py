"""Entity extraction for the offline indexer: files, code identifiers and technologies, canonically named.

Files are named by their path inside the project ("app/routers/transactions.py"), which is how people
write them. The batch does not carry the project directory, so it is inferred per session from the
paths themselves (`project_root`): an absolute path that ends in a relative path the conversation
writes, else the common directory of the absolute paths. A path outside any known root keeps its last
two components ("tests/conftest.py"), since a bare basename collides across projects ("page.tsx"). A
bare or partial file name in prose takes the fuller form of a path with that basename seen in the
same session, so one batch names a file one way; across batches the executor's aliasing (a name meets
the longer one that ends in it) joins the forms.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from cairn.agent.offline.gazetteer import canonical, find_technologies
from cairn.agent.schema import EntityType
from cairn.transcripts.redact import LABEL

MAX_ENTITIES_PER_IDEA = 6

_EXTENSION_TEXT = (
    "py pyi ipynb js jsx mjs cjs ts tsx json jsonl md mdx txt toml yaml yml ini cfg conf sh bash zsh sql "
    "go rs java kt kts gradle rb php c h cc cpp hpp cs swift css scss html vue svelte lock env xml csv db "
    "sqlite tf tfvars hcl properties proto ex exs heex erl lua dart scala"
)
_EXTENSIONS = _EXTENSION_TEXT.split()
# Build and tool files that by convention have no extension.
_BARE_FILES = "Dockerfile|Containerfile|Makefile|GNUmakefile|Justfile|Procfile|Gemfile|Rakefile|Jenkinsfile"
_PATH = re.compile(
    r"(?<![\w@])((?:~|\.{1,2})?/?(?:[\w.@-]+/)*(?:[\w@-][\w.@-]*\.(?:"
    + "|".join(_EXTENSIONS)
    + r")|(?:"
    + _BARE_FILES
    + r")))(?![\w/]|\.\w)"
)
_FILE_ARG = re.compile(r'\b(?:file_path|notebook_path|path)="([^"]+)"')
_COMMAND_ARG = re.compile(r'\bcommand="((?:[^"\\]|\\.)*)"')
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_CAMEL = re.compile(
    r"(?<![\w./-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]{2,}(?:[A-Z][a-z0-9]*)+)(?![\w/-]|\.\w)"
)
_SNAKE_CALL = re.compile(r"(?<![\w.])([a-z_][a-z0-9_]*_[a-z0-9_]+|[a-z][a-z0-9]{2,})\(\)")
_SNAKE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/(-]|\.\w)")
_DOTTED = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){1,4})(?![\w/-])")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")
# Camel-case words that are brand spellings or prose, not code.
_NOT_CODE = frozenset(
    {"GitHub", "JavaScript", "TypeScript", "PostgreSQL", "MySQL", "YouTube", "iPhone", "macOS"}
)


_HOME_PROJECT = re.compile(r"^(?:/(?:home|Users)/[^/]+/[^/]+|/root/[^/]+)(?=/)")
# Binary size units are CamelCase-shaped ("GiB") but no code.
_UNITS = frozenset({"KiB", "MiB", "GiB", "TiB", "PiB"})


@dataclass(frozen=True)
class Entity:
    name: str
    type: EntityType


def _clean(path: str) -> str:
    return path.strip().strip("\"'`").replace("\\", "/")


def file_name(path: str, root: str | None = None) -> str:
    """The canonical name of a file entity: its path inside the project `root` when it lies there, a
    relative path as written, else its last two path components (or its name alone)."""
    cleaned = _clean(path)
    if root and cleaned.startswith(root + "/"):
        return cleaned[len(root) + 1 :]
    parts = [p for p in cleaned.split("/") if p and p not in (".", "~")]
    if not parts:
        return path.strip()
    if not cleaned.startswith(("/", "~")) and ".." not in parts:
        return "/".join(parts)
    return "/".join(parts[-2:]) if len(parts) > 1 and parts[-2] != ".." else parts[-1]


def project_root(paths: Iterable[str]) -> str | None:
    """The project directory a session's file paths sit in, or None when they do not say.

    An absolute path that ends in a relative path the same session writes ("/home/dev/app/src/a.ts"
    and "src/a.ts") gives it directly; otherwise it is the deepest directory, at least three levels
    deep (`/home/dev/project`, not `/home/dev`), that holds three in five of the absolute paths (and
    two or more): one look outside the project does not move it. A directory right inside a home
    directory that holds three in five of them comes first, even for a single path.
    """
    cleaned = {_clean(p) for p in paths}
    absolute = sorted(p for p in cleaned if p.startswith("/"))
    relative = sorted(
        (p.removeprefix("./") for p in cleaned if not p.startswith(("/", "~", ".."))),
        key=lambda p: (-p.count("/"), p),  # ties by name: a set iterates in a per-process order
    )
    for rel in relative:
        if "/" not in rel:
            continue
        for full in absolute:
            if full.endswith("/" + rel):
                return full[: -len(rel) - 1]
    # A directory right inside a home directory (`/home/dev/pricing-svc`) is where projects live: it
    # wins over a deeper one most files happen to share (`…/internal/cache`).
    homes = Counter(match.group(0) for full in absolute if (match := _HOME_PROJECT.match(full)))
    if homes:
        home, count = homes.most_common(1)[0]
        if count >= math.ceil(len(absolute) * 0.6):
            return home
    holding: Counter[str] = Counter()
    for full in absolute:
        parts = full.split("/")[:-1]
        holding.update("/".join(parts[:depth]) for depth in range(4, len(parts) + 1))
    least = max(2, math.ceil(len(absolute) * 0.6))
    shared = [d for d, n in holding.items() if n >= least]
    return max(shared, key=lambda d: d.count("/")) if shared else None


def resolve_file(path: str, known_files: dict[str, str], root: str | None = None) -> str:
    """`path`'s entity name, taking the fuller form seen in this session when it ends in this one."""
    name = file_name(path, root)
    full = known_files.get(name.rsplit("/", 1)[-1])
    return full if full and (full == name or full.endswith("/" + name)) else name


def paths_in(text: str) -> list[str]:
    """Every file path `text` writes (prose or tool calls)."""
    return [p for p in _PATH.findall(text) if is_file_like(p)]


def is_file_like(token: str) -> bool:
    """A path or file name, not a technology spelled with a dot ("Next.js", "Node.js")."""
    token = token.strip()
    return bool(_PATH.fullmatch(token)) and canonical(token) is None


def tool_files(text: str) -> list[str]:
    """Paths that tool calls in `text` touch: `file_path=`/`path=` arguments and paths in shell commands."""
    found: dict[str, None] = {}
    for match in _FILE_ARG.finditer(text):
        if is_file_like(match.group(1)):
            found.setdefault(match.group(1), None)
    for match in _COMMAND_ARG.finditer(text):
        for path in _PATH.findall(match.group(1)):
            if is_file_like(path):
                found.setdefault(path, None)
    return list(found)


def written_files(text: str) -> list[str]:
    """Paths that Write/Edit/MultiEdit/NotebookEdit calls in `text` change."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        if re.match(r"\[tool_use (?:Write|Edit|MultiEdit|NotebookEdit)\]", line):
            for match in _FILE_ARG.finditer(line):
                found.setdefault(match.group(1), None)
    return list(found)


def _identifier_ok(name: str) -> bool:
    core = name.removesuffix("()")
    if len(core) < 3 or core in _NOT_CODE or core in _UNITS or canonical(core) or is_file_like(core):
        return False
    if "." in core:  # a dotted module or attribute: at least one part must look like code
        parts = core.split(".")
        return all(parts) and any("_" in p or p[:1].isupper() or len(p) > 3 for p in parts[1:])
    return "_" in core or any(c.isupper() for c in core[1:]) or name.endswith("()")


def identifiers(text: str) -> list[str]:
    """Code identifiers in prose: backticked names, CamelCase, snake_case calls, dotted modules."""
    found: dict[str, None] = {}
    for match in _BACKTICK.finditer(text):
        token = match.group(1).strip()
        if _IDENTIFIER.match(token) and _identifier_ok(token):
            found.setdefault(token, None)
    for pattern in (_CAMEL, _SNAKE_CALL, _SNAKE, _DOTTED):
        for match in pattern.finditer(text):
            token = match.group(1) + ("()" if pattern is _SNAKE_CALL else "")
            if _identifier_ok(token):
                found.setdefault(token, None)
    # A dotted name already covers its last part ("sqlite3.OperationalError" covers "OperationalError").
    names = list(found)
    return [n for n in names if not any(o != n and o.endswith("." + n.removesuffix("()")) for o in names)]


def extract(text: str, known_files: dict[str, str] | None = None) -> list[Entity]:
    """Entities named in `text`: technologies, files and code identifiers, deduplicated, in that order;
    never a redaction marker's kind (`anthropic_api_key` of `[REDACTED:anthropic_api_key]`).

    `known_files` maps a basename to the fullest name it was seen with in this session.
    """
    known_files = known_files or {}
    found: dict[tuple[str, str], Entity] = {}
    text = LABEL.sub(" ", text)  # `[REDACTED:github_token]` stands for a removed secret, not a name

    def add(name: str, kind: EntityType) -> None:
        key = (name.lower(), kind)
        if name and key not in found:
            found[key] = Entity(name, kind)

    for tech in find_technologies(text):
        add(tech, "technology")
    for path in _PATH.findall(text):
        if not is_file_like(path):
            continue
        add(resolve_file(path, known_files), "file")
    for ident in identifiers(text):
        if ident.split(".")[0].lower() in {"www", "http", "https"}:
            continue
        dotted_tech = canonical(ident.split(".")[0])
        if dotted_tech and "." in ident:
            add(dotted_tech, "technology")
            ident = ident.split(".", 1)[1]
            if not _identifier_ok(ident):
                continue
        add(ident, "concept")
    return list(found.values())[:MAX_ENTITIES_PER_IDEA]


def entity_key(name: str) -> str:
    """Case- and punctuation-insensitive key, with a technology's spellings folded together."""
    tech = canonical(name)
    base = tech or name
    return re.sub(r"[^a-z0-9+#]", "", base.lower())


def is_identifier(name: str) -> bool:
    """Whether `name` reads as one code identifier (`useTodos`, `busy_timeout`, `db.connect()`), not prose."""
    token = name.strip()
    return bool(_IDENTIFIER.match(token)) and _identifier_ok(token)


def same_entity(name: str, kind: str, other: str, other_kind: str, aliases: tuple[str, ...] = ()) -> bool:
    """Whether two entity names (the second with aliases) name one thing, case, punctuation, spelling aside.

    A technology stored as a concept (or the reverse) is the same thing; a bare file name meets the
    two-component name that ends in it ("page.tsx" and "app/page.tsx").
    """
    key = entity_key(name)
    if key in {entity_key(other), *(entity_key(a) for a in aliases)}:
        return kind == other_kind or {kind, other_kind} <= {"technology", "concept"}
    if kind == "file" and other_kind == "file":
        mine, theirs = name.lower(), other.lower()
        return mine.endswith("/" + theirs) or theirs.endswith("/" + mine)
    return False
