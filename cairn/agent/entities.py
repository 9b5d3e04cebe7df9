"""One entity per thing, however the indexing agent spells it: canonical keys, reuse, aliases.

The agent names entities freely (`SQLite`, `sqlite`, `SQLite.`, `sqlite3`), and every spelling that
became its own row would split the ideas about one thing across several entities. So each name is
reduced to a key and matched against the entities of the same type, in this order:

1. **Canonical key.** NFKC, case-folded, everything but letters, digits, `+` and `#` removed (so
   `SQLite`, `sqlite` and `SQLite.` are one key, `Node.js` is `NodeJS`, but `C`, `C++` and `C#` stay
   three). File entities keep their punctuation — in a path it is meaning — and only lose case,
   surrounding quotes/backticks and trailing sentence punctuation.
2. **Aliases** (`entity_aliases`), keyed the same way.
3. **Versions of a technology.** A technology key ending in digits whose rest has at least three
   characters is a stem plus a version (`sqlite3` → `sqlite` + `3`, `Python 3.11` → `python` + `311`;
   `ec2`, `s3`, `es6` are left alone). A versioned name matches the unversioned entity
   (`sqlite3` → `SQLite`), and an unversioned name matches the one entity of that stem if there is
   exactly one — but two different versions never merge (`IPv4` ≠ `IPv6`, `python2` ≠ `python3`).
4. **Embeddings** (optional): see `semantic_matches`.

A reused entity gains the surface form as an alias only when the alias adds matching power — when
its key differs from the canonical name's (`sqlite3` for `SQLite` yes, `SQLite.` no): aliases that
normalise to the canonical key would only clutter the entity's vector document. A new entity keeps
the name as first given (whitespace collapsed); first seen wins, later spellings become aliases.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import aiosqlite
import numpy as np

from cairn.agent.schema import EntityRef
from cairn.store.db import Database
from cairn.transcripts.redact import is_label

Embed = Callable[[list[str]], list[list[float]]]

# Cosine similarity at or above which two names of the same type are taken to be one entity.
SEMANTIC_THRESHOLD = 0.9
# How many same-type entities (most recently used first) an unmatched name is compared with: the
# embedding check must stay cheap however large the store grows.
SEMANTIC_CANDIDATES = 300

_KEPT_SYMBOLS = frozenset("+#")
_VERSION_STEM_MIN = 3
_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

INDEX_SQL = """
    SELECT e.id, e.canonical_name AS name, 1 AS canonical FROM entities AS e WHERE e.type = ?
    UNION ALL
    SELECT a.entity_id, a.alias, 0 FROM entity_aliases AS a
    JOIN entities AS e ON e.id = a.entity_id WHERE e.type = ?
"""


@dataclass(frozen=True)
class EntityKey:
    """What two names of one type must share to be one entity; `version` only for technologies."""

    stem: str
    version: str = ""


def clean_name(name: str) -> str:
    """The name as stored: NFKC-normalised, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).split())


def entity_key(name: str, entity_type: str) -> EntityKey:
    """The matching key of `name` (an empty stem means the name has nothing to match on)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    if entity_type == "file":
        return EntityKey(" ".join(text.split()).strip("`'\"").rstrip(".,;:"))
    stem = "".join(ch for ch in text if ch.isalnum() or ch in _KEPT_SYMBOLS)
    if entity_type == "technology":
        base = stem.rstrip("0123456789")
        if base != stem and len(base) >= _VERSION_STEM_MIN:
            return EntityKey(base, stem[len(base) :])
    return EntityKey(stem)


# Directories every machine has: as a name on their own they are where a path passed, not a thing.
_SYSTEM_DIRS = frozenset({"Users", "home", "usr", "tmp", "var", "etc", "opt", "mnt", "Volumes"})
# Tool directories under a home or a project (`~/.claude/projects`).
_DOT_DIRS = frozenset({".claude", ".config", ".cache", ".local", ".ssh", ".npm", ".venv", ".vscode", ".idea"})
_FILE_NAME = re.compile(r"^(?:.+\.[A-Za-z0-9]{1,12}|\.[\w.-]+|[A-Z][A-Za-z]*file)$")
_PATH_WORD = re.compile(r"^[a-z0-9_.@~-]+$")


def path_fragment(name: str, entity_type: str) -> bool:
    """Whether `name` is a piece of a path rather than a thing: a directory (`src/`, `/Users`), a path cut
    short or one with no file at its end (`.claude/proj`, `src/components` as a file), a system or tool
    directory on its own (`Users`, `.claude`). A file's whole path (`app/page.tsx`) and a slashed name
    of capitals (`CI/CD`, `I/O`) are no fragments."""
    text = name.strip().strip("`'\"").replace("\\", "/")
    if text in _SYSTEM_DIRS or text in _DOT_DIRS or text in ("/", "~", ".", ".."):
        return True
    if "/" not in text:
        return False
    parts = [part for part in text.split("/") if part]
    if text.endswith("/") or not parts:
        return True
    if entity_type == "file":
        return parts[-1] in _DOT_DIRS or not _FILE_NAME.match(parts[-1])
    if text.startswith(("/", "~", "./", "../")) or any(part.startswith(".") for part in parts):
        return True
    return all(_PATH_WORD.match(part) for part in parts)


def refused(name: str, entity_type: str, label_kinds: frozenset[str] = frozenset()) -> str | None:
    """Why `name` can never be an entity, or None: a redaction marker, the kind of one its text only
    writes inside markers (`label_kinds`, `cairn.transcripts.redact.label_only_kinds`), or a piece of a
    path. The executor rejects these from any model; the offline indexer never proposes them."""
    if is_label(name) or name.strip().strip("[]") in label_kinds:
        return "entity name is a redaction label: it stands for a removed secret, not a thing"
    if path_fragment(name, entity_type):
        return "entity name is a piece of a path, not a thing: a file is named by its path in the project"
    return None


@dataclass
class EntityIndex:
    """Lexical lookup over the entities of one type: canonical names first, then aliases."""

    canonical: dict[EntityKey, int] = field(default_factory=dict)
    aliases: dict[EntityKey, int] = field(default_factory=dict)
    keys_of: dict[int, EntityKey] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[sqlite3.Row], entity_type: str) -> EntityIndex:
        index = cls()
        for row in rows:
            index.add(row["id"], row["name"], entity_type, canonical=bool(row["canonical"]))
        return index

    def add(self, entity_id: int, name: str, entity_type: str, *, canonical: bool) -> None:
        key = entity_key(name, entity_type)
        if not key.stem:
            return
        if canonical:
            self.canonical.setdefault(key, entity_id)
            self.keys_of[entity_id] = key
        else:
            self.aliases.setdefault(key, entity_id)

    def find(self, key: EntityKey) -> int | None:
        for table in (self.canonical, self.aliases):
            if key in table:
                return table[key]
        for table in (self.canonical, self.aliases):
            if key.version:
                found = table.get(EntityKey(key.stem))
                if found is not None:
                    return found
            else:
                versions = {eid for k, eid in table.items() if k.stem == key.stem}
                if len(versions) == 1:
                    return versions.pop()
        return None


async def semantic_matches(
    db: Database, refs: Iterable[EntityRef], embed: Embed
) -> dict[tuple[str, EntityKey], int]:
    """Existing entities that names without a lexical match mean, by embedding similarity.

    Runs before the write transaction, on committed data, so the embedding work never holds the
    store's write lock; the executor re-checks inside the transaction that a match still exists.
    Each unmatched name is compared with the `SEMANTIC_CANDIDATES` most recently used entities of
    its type, one `embed` call per type. Entities new in the same result are not compared with each
    other (`Postgres` and `PostgreSQL` both new in one result stay two) — the lexical rules and the
    agent's `search_entities` tool cover that case well enough to not pay for it here.
    """
    wanted: dict[str, dict[EntityKey, str]] = {}
    for ref in refs:
        key = entity_key(ref.name, ref.type)
        if key.stem:
            wanted.setdefault(ref.type, {}).setdefault(key, clean_name(ref.name))
    matches: dict[tuple[str, EntityKey], int] = {}
    for entity_type, names in wanted.items():
        index = EntityIndex.from_rows(await db.fetchall(INDEX_SQL, (entity_type, entity_type)), entity_type)
        unmatched = {key: name for key, name in names.items() if index.find(key) is None}
        if not unmatched:
            continue
        rows = await db.fetchall(
            "SELECT id, canonical_name FROM entities WHERE type = ? "
            "ORDER BY updated_at DESC, id DESC LIMIT ?",
            (entity_type, SEMANTIC_CANDIDATES),
        )
        if not rows:
            continue
        queries = list(unmatched.values())
        vectors = await asyncio.to_thread(embed, queries + [row["canonical_name"] for row in rows])
        best = _best_matches(vectors[: len(queries)], vectors[len(queries) :])
        for key, (position, score) in zip(unmatched, best, strict=True):
            if score >= SEMANTIC_THRESHOLD:
                matches[(entity_type, key)] = rows[position]["id"]
    return matches


def _best_matches(
    queries: Sequence[Sequence[float]], candidates: Sequence[Sequence[float]]
) -> list[tuple[int, float]]:
    """For each query vector, the closest candidate's position and its cosine similarity."""
    q = _unit(np.asarray(queries, dtype=np.float64))
    c = _unit(np.asarray(candidates, dtype=np.float64))
    similarity = q @ c.T
    positions = similarity.argmax(axis=1)
    return [(int(p), float(similarity[i, p])) for i, p in enumerate(positions)]


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.clip(norms, 1e-12, None)


class EntityResolver:
    """Finds or creates the entity for each name, inside the executor's write transaction.

    Loads the lexical index of a type once per transaction (a few thousand short rows at most is a
    cheap read next to a model call) and keeps it current with what it creates, so one result that
    says `SQLite` in five ideas creates one entity.
    """

    def __init__(
        self, conn: aiosqlite.Connection, semantic: Mapping[tuple[str, EntityKey], int] | None = None
    ) -> None:
        self._conn = conn
        self._semantic = dict(semantic or {})
        self._indexes: dict[str, EntityIndex] = {}
        self.created: set[int] = set()
        self.reused: set[int] = set()

    async def resolve(self, ref: EntityRef) -> int | None:
        """The entity id for `ref`, created if none matches; None when the name has no key."""
        key = entity_key(ref.name, ref.type)
        if not key.stem:
            return None
        index = await self._index(ref.type)
        entity_id = index.find(key)
        if entity_id is None:
            entity_id = await self._semantic_match(ref.type, key)
        if entity_id is None:
            entity_id = await self._create(clean_name(ref.name), ref.type)
            if entity_id is not None:
                index.add(entity_id, clean_name(ref.name), ref.type, canonical=True)
                self.created.add(entity_id)
                return entity_id
            entity_id = await self._same_name(clean_name(ref.name), ref.type)
        await self.touch(entity_id)
        if key != index.keys_of.get(entity_id) and index.aliases.get(key) != entity_id:
            await self._conn.execute(
                "INSERT INTO entity_aliases (entity_id, alias) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (entity_id, clean_name(ref.name)),
            )
            index.add(entity_id, clean_name(ref.name), ref.type, canonical=False)
        return entity_id

    async def touch(self, entity_id: int) -> None:
        """Mark an existing entity as used now (it ranks first among the semantic candidates)."""
        if entity_id in self.created:
            return
        self.reused.add(entity_id)
        await self._conn.execute(f"UPDATE entities SET updated_at = {_NOW} WHERE id = ?", (entity_id,))

    async def _index(self, entity_type: str) -> EntityIndex:
        index = self._indexes.get(entity_type)
        if index is None:
            async with self._conn.execute(INDEX_SQL, (entity_type, entity_type)) as cursor:
                rows = await cursor.fetchall()
            index = self._indexes[entity_type] = EntityIndex.from_rows(rows, entity_type)
        return index

    async def _semantic_match(self, entity_type: str, key: EntityKey) -> int | None:
        candidate = self._semantic.get((entity_type, key))
        if candidate is None:
            return None
        async with self._conn.execute(
            "SELECT id FROM entities WHERE id = ? AND type = ?", (candidate, entity_type)
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else candidate

    async def _create(self, name: str, entity_type: str) -> int | None:
        """Insert a new entity; None if one of that name (in any case) exists already."""
        async with self._conn.execute(
            "INSERT INTO entities (canonical_name, type) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING id",
            (name, entity_type),
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else int(row["id"])

    async def _same_name(self, name: str, entity_type: str) -> int:
        """The stored entity whose name blocked `_create`.

        A guard, not a path taken today: names equal under NOCASE have equal keys and the index is
        read inside this transaction, so `find` would have returned the entity. Should the key rules
        and the UNIQUE constraint ever disagree, reusing the entity beats failing the whole apply.
        """
        async with self._conn.execute(
            "SELECT id FROM entities WHERE canonical_name = ? COLLATE NOCASE AND type = ?",
            (name, entity_type),
        ) as cursor:
            row = await cursor.fetchone()
        assert row is not None
        return int(row["id"])
