"""Entity extraction for the offline indexer: files, code identifiers and technologies, canonically named.

Files are named by their last two path components ("tests/conftest.py", "app/db.py"): a bare basename
collides across projects ("page.tsx", "index.ts") and a project-relative path needs the project root,
which the batch does not carry. A bare file name in prose takes the two-component form of a path with
that basename seen in the same session, so one batch names a file one way; across batches a bare name
that was never seen with its directory stays a basename (the executor's aliasing and `search_entities`
canonicalisation meet it there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.agent.offline.gazetteer import canonical, find_technologies
from cairn.agent.schema import EntityType

MAX_ENTITIES_PER_IDEA = 6

_EXTENSION_TEXT = (
    "py pyi ipynb js jsx mjs cjs ts tsx json jsonl md mdx txt toml yaml yml ini cfg conf sh bash zsh sql "
    "go rs java kt rb php c h cc cpp hpp cs swift css scss html vue svelte lock env xml csv db sqlite"
)
_EXTENSIONS = _EXTENSION_TEXT.split()
_PATH = re.compile(
    r"(?<![\w@])((?:~|\.{1,2})?/?(?:[\w.@-]+/)*[\w@-][\w.@-]*\.(?:" + "|".join(_EXTENSIONS) + r"))(?![\w/])"
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


@dataclass(frozen=True)
class Entity:
    name: str
    type: EntityType


def file_name(path: str) -> str:
    """The canonical name of a file entity: its last two path components (or its name alone)."""
    parts = [p for p in path.strip().strip("\"'`").replace("\\", "/").split("/") if p and p not in (".", "~")]
    if not parts:
        return path.strip()
    return "/".join(parts[-2:]) if len(parts) > 1 and parts[-2] != ".." else parts[-1]


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
    if len(core) < 3 or core in _NOT_CODE or canonical(core) or is_file_like(core):
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
    """Entities named in `text`: technologies, files and code identifiers, deduplicated, in that order.

    `known_files` maps a basename to the two-component name it was seen with in this session.
    """
    known_files = known_files or {}
    found: dict[tuple[str, str], Entity] = {}

    def add(name: str, kind: EntityType) -> None:
        key = (name.lower(), kind)
        if name and key not in found:
            found[key] = Entity(name, kind)

    for tech in find_technologies(text):
        add(tech, "technology")
    for path in _PATH.findall(text):
        if not is_file_like(path):
            continue
        name = file_name(path)
        add(known_files.get(name, name) if "/" not in name else name, "file")
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
