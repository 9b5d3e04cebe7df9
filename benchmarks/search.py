"""Search latency at 10K and 100K ideas next to a bare FTS5 query, and retrieval quality per mode.

Usage::

    .venv/bin/python benchmarks/search.py [--sizes 10000,100000] [--cache DIR] [--repeats 5]
                                          [--kind all] [--quick] [--skip-latency] [--skip-quality]
                                          [--json]

Two parts, each printing a figure next to a baseline measured in the same run.

**Latency.** A store of N ideas is generated from templates over a vocabulary of technologies,
files, functions, error messages, decisions, problems and fixes (so FTS5 and the vectors see varied
text, not one sentence repeated), spread over projects and sessions with topic spans and the source
messages the ideas cite (one message per two ideas, so the session and topic joins have rows and the
message collections are searched too). Everything is written with plain SQL in large transactions,
then ideas and spans are embedded through the vector outbox with the packaged offline MiniLM, and
each message gets the normalised mean of its two ideas' vectors (see `derive_message_vectors`).
MiniLM manages ~220 texts/s on an idle 2-core machine, so 100K ideas take 10-30 minutes: pass
``--cache DIR`` and later runs reuse the store. Each of 50 queries (natural language and exact
identifiers) runs ``--repeats`` times after a warm-up pass, and p50/p95 are reported for:

* ``hybrid`` with ``record_usage=False``, so repeats see fixed data (and once more per query with
  ``record_usage=True``: what a real call costs, usage write included). Search keeps the vectors of
  queries it embedded (`VectorIndex.embed`), so repeats of a query find it kept: ``hybrid, new
  query`` forgets them before every call — what a query nobody asked before costs, and the figure the
  target is judged on;
* ``keyword`` and ``semantic`` alone;
* the baseline: a bare ``SELECT rowid FROM ideas_fts WHERE ideas_fts MATCH ? ORDER BY rank LIMIT 10``
  with the query's whole FTS5 expression (`FtsQuery.combined`: phrase, NEAR and every key term),
  through the same read connection. The ratio hybrid/bare is what cairn's fusion, vectors and
  hydration cost on top. For reading it: the same bare query with the expression search draws its
  keyword candidates with (`keyword.candidate_match`: in a large store the query's common terms
  draw no rows of their own), and the term counts that choose it;
* for reading the semantic figures: embedding one query, and a bare top-10 Chroma query on ideas,
  without and with the metadata filter search applies by default (``superseded: False``).

The target (issue 13): hybrid p95 (new query) at most 50 ms at 100K ideas on this 2-core machine,
and at most 3x the bare FTS5 query's p95 in the same run.

**Quality.** ``benchmarks/data/search_queries.json`` holds natural-language questions (worded so
they do not reuse the transcript's words) and exact look-ups (identifiers, file names, error strings)
over the shared fixtures, each labelled with the transcript lines that answer it (see
``benchmarks/data/README.md``). The fixtures are indexed into a temporary store with
``cairn index --model offline``; each query runs in keyword, semantic and hybrid mode (kind=all,
limit 10). A result is relevant when it is a message whose lines include a labelled line, an idea
whose source line is labelled, or a topic span covering one. Reported per mode: recall@5 and
recall@10 (the share of a query's labelled lines that some relevant result in the top k points at,
averaged over queries) and MRR (1 / rank of the first relevant result). Spans can be long enough to
cover most of a session, so the same figures are also given with spans never counted as relevant.
Every query runs with the configured ``search_min_score`` (what users get) and with ``min_score=0``
(the ranking alone, nothing cut), or only with ``--min-score X``. The target is hybrid above both
single modes in recall (judged on the first of those runs, over all queries, spans counted).

Exit status: 0 when every measured target holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.search import keyword
from cairn.search import query as fts_query
from cairn.search.models import Mode, SearchPage, SearchRequest
from cairn.store import outbox
from cairn.store.embeddings import MiniLMInt8Embedding
from cairn.store.store import Store, idea_hash, iso_utc, message_hash
from cairn.store.vectors import VectorIndex, sanitize_metadata

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "transcripts"
QUERIES_FILE = REPO_ROOT / "benchmarks" / "data" / "search_queries.json"

#: Bump when the generator changes, so a cache built by an older one is rebuilt instead of reused.
GENERATOR_VERSION = 2
TARGET_P95_MS = 50.0
TARGET_RATIO = 3.0
TARGET_SIZE = 100_000
QUICK_SIZE = 2_000
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
BARE_FTS = "SELECT rowid FROM ideas_fts WHERE ideas_fts MATCH ? ORDER BY rank LIMIT 10"
#: One transaction per this many sessions while generating: few enough commits to be fast, small
#: enough that a transaction's executemany batches stay a few MB.
SESSIONS_PER_TRANSACTION = 400


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# Vocabulary. Varied on purpose: a corpus of one repeated sentence would make FTS5 posting lists and
# HNSW neighbourhoods unrealistically uniform.

PROJECTS = [
    ("/home/dev/ledger", "ledger"),
    ("/home/dev/webshop", "webshop"),
    ("/home/dev/telemetry-pipeline", "telemetry-pipeline"),
    ("/home/dev/mobile-sync", "mobile-sync"),
    ("/home/dev/infra", "infra"),
    ("/home/dev/search-service", "search-service"),
    ("/home/dev/ml-features", "ml-features"),
    ("/home/dev/docs-site", "docs-site"),
]

TECHS = [
    "SQLite", "Postgres", "Redis", "Kafka", "RabbitMQ", "FastAPI", "Django", "Flask", "React", "Next.js",
    "Tailwind", "TypeScript", "Rust", "tokio", "asyncio", "pytest", "Docker", "Kubernetes", "Terraform",
    "GitHub Actions", "Chroma", "ONNX Runtime", "gRPC", "GraphQL", "Celery", "nginx", "uvicorn",
    "SQLAlchemy", "alembic", "pydantic", "webpack", "Vite", "Jest", "Playwright", "Prometheus", "Grafana",
    "OpenTelemetry", "S3", "AWS Lambda", "DynamoDB", "Elasticsearch", "ClickHouse", "DuckDB", "pandas",
    "polars", "NumPy", "PyTorch", "Node.js", "Express", "Go", "protobuf", "Helm", "Vault", "Sentry",
    "Stripe", "OAuth2", "JWT", "WebSockets", "Cloudflare Workers", "Bazel",
]  # fmt: skip

AREAS = [
    "billing", "auth", "search", "ingest", "sync", "storage", "api", "ui", "jobs", "notifications",
    "reports", "cache", "accounts", "checkout", "metrics", "scheduler", "export", "webhooks",
]  # fmt: skip
MODULES = [
    "service", "client", "handlers", "models", "repository", "worker", "router", "schema", "queue",
    "retry", "config", "middleware", "serializer", "pool", "session", "validator", "migrations", "cli",
]  # fmt: skip
EXTENSIONS = ["py", "py", "py", "ts", "tsx", "rs", "go", "sql", "yaml"]

VERBS = [
    "parse", "load", "flush", "retry", "validate", "serialize", "refresh", "reconcile", "dispatch",
    "encode", "decode", "resolve", "schedule", "merge", "compact", "render", "hydrate", "sign", "verify",
]  # fmt: skip
NOUNS = [
    "header", "invoice", "token", "batch", "cursor", "snapshot", "manifest", "webhook", "session",
    "payload", "offset", "checkpoint", "frame", "ledger_entry", "price_table", "user_profile", "chunk",
]  # fmt: skip

ERRORS = [
    "sqlite3.OperationalError: database is locked",
    "psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "ModuleNotFoundError: No module named 'yaml'",
    "ECONNREFUSED 127.0.0.1:6379",
    "error TS2307: Cannot find module '@/lib/api' or its corresponding type declarations",
    "KeyError: 'customer_id'",
    "RuntimeError: Event loop is closed",
    "asyncio.TimeoutError after 30s waiting for the lock",
    "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value'",
    "OOMKilled: container exceeded its 512Mi memory limit",
    "ssl.SSLCertVerificationError: certificate verify failed",
    "HTTP 429 Too Many Requests from the upstream API",
    "HTTP 502 Bad Gateway from nginx",
    "ValueError: invalid literal for int() with base 10: ''",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1",
    "pydantic_core.ValidationError: 1 validation error for Settings",
    "Hydration failed because the initial UI does not match what was rendered on the server",
    "ERR_REQUIRE_ESM: require() of ES Module not supported",
    "panic: runtime error: invalid memory address or nil pointer dereference",
    "Deadlock found when trying to get lock; try restarting transaction",
    "fatal: refusing to merge unrelated histories",
    "Error: listen EADDRINUSE: address already in use :::3000",
    "AssertionError: expected 200, got 401",
    "RecursionError: maximum recursion depth exceeded",
    "FileNotFoundError: [Errno 2] No such file or directory: 'settings.toml'",
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff",
    "Segmentation fault (core dumped) in the ONNX session",
    "kafka.errors.NoBrokersAvailable",
    "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
]

CONDITIONS = [
    "two workers commit in the same second",
    "the token expires during a long upload",
    "the cache is cold after a deploy",
    "the payload is larger than 10 MB",
    "a user has no billing address",
    "the network drops mid-request",
    "the queue is replayed after a crash",
    "daylight saving time starts",
    "the CSV has a byte order mark",
    "the feature flag is off",
    "the retry budget runs out",
    "two tabs edit the same record",
    "the migration runs on an empty table",
    "the pod is rescheduled during shutdown",
    "the clock on the runner is skewed",
    "the webhook arrives before the order row exists",
    "the locale uses a comma as decimal separator",
    "pagination reaches the last page",
]

REASONS = [
    "it keeps the write path to one transaction",
    "the team already runs it in production",
    "it removes a network hop on every request",
    "its failure modes are easier to reason about",
    "it halves the cold-start time",
    "it needs no extra service to operate",
    "the old approach leaked connections under load",
    "it gives us exactly-once delivery with idempotent keys",
    "benchmarks showed a 3x throughput gain",
    "it keeps the bundle under 200 KB",
]

FIXES = [
    "wrapping the read and the write in one BEGIN IMMEDIATE transaction",
    "adding exponential backoff with jitter",
    "pinning the dependency to the previous minor version",
    "moving the call out of the request path into a background job",
    "adding an idempotency key to the request",
    "raising the pool size and adding a timeout",
    "normalising timestamps to UTC before comparing",
    "streaming the file instead of reading it into memory",
    "invalidating the cache entry on write",
    "adding the missing index on the foreign key",
    "awaiting the task before the loop closes",
    "checking for None before dereferencing",
    "stripping the byte order mark when decoding",
    "regenerating the lockfile from scratch",
]

CAUSES = [
    "a stale offset read before the transaction began",
    "a race between the retry and the original request",
    "a missing await in the shutdown hook",
    "an N+1 query in the serializer",
    "the default timeout being shorter than the slowest upstream",
    "a connection that was never returned to the pool",
    "timezone-naive datetimes from the legacy importer",
    "the CDN caching an error response",
    "a config value read at import time",
    "an off-by-one in the pagination cursor",
]

COMPONENTS = [
    "the payment webhook handler", "the nightly export job", "the login form", "the search indexer",
    "the rate limiter", "the upload service", "the feature flag client", "the session store",
    "the invoice renderer", "the sync worker", "the metrics exporter", "the CLI config loader",
    "the retry queue", "the GraphQL resolver for orders", "the image resizer", "the audit log writer",
]  # fmt: skip

LEADS = [
    "Looking at the logs again,",
    "After reading {file} closely,",
    "I ran the failing test with -x and",
    "Checked the trace from staging:",
    "Summary so far:",
    "Following up on the review comments,",
    "Reproduced locally with the production config.",
    "Note for later:",
]


@dataclass
class Vocabulary:
    """Derived vocabulary: file paths and function names, built once from the lists above."""

    files: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, rng: random.Random) -> Vocabulary:
        files = sorted(
            {f"src/{a}/{m}.{rng.choice(EXTENSIONS)}" for a in AREAS for m in MODULES if rng.random() < 0.6}
        )
        functions = []
        for verb in VERBS:
            for noun in NOUNS:
                if rng.random() < 0.5:
                    snake = f"{verb}_{noun}"
                    if rng.random() < 0.3:  # some camelCase, as in TypeScript code
                        head, *rest = snake.split("_")
                        snake = head + "".join(part.capitalize() for part in rest)
                    functions.append(snake)
        return cls(files=files, functions=sorted(set(functions)))


Template = Callable[[random.Random, Vocabulary], str]


def _pick(rng: random.Random, items: Sequence[str]) -> str:
    return items[rng.randrange(len(items))]


IDEA_TEMPLATES: dict[str, list[Template]] = {
    "decision": [
        lambda r, v: (
            f"Decided to use {_pick(r, TECHS)} for {_pick(r, COMPONENTS)} instead of {_pick(r, TECHS)}, "
            f"because {_pick(r, REASONS)}."
        ),
        lambda r, v: (
            f"We will keep {_pick(r, v.functions)} synchronous in {_pick(r, v.files)}; {_pick(r, REASONS)}."
        ),
        lambda r, v: (
            f"Going with {_pick(r, TECHS)} over {_pick(r, TECHS)} for {_pick(r, AREAS)}: {_pick(r, REASONS)}."
        ),
    ],
    "problem": [
        lambda r, v: (
            f"{_pick(r, v.functions)}() in {_pick(r, v.files)} fails with `{_pick(r, ERRORS)}` "
            f"when {_pick(r, CONDITIONS)}."
        ),
        lambda r, v: f"{_pick(r, COMPONENTS).capitalize()} breaks when {_pick(r, CONDITIONS)}.",
        lambda r, v: f"CI is red: {_pick(r, ERRORS)} in {_pick(r, v.files)}.",
    ],
    "solution": [
        lambda r, v: (
            f"Fixed `{_pick(r, ERRORS)}` in {_pick(r, COMPONENTS)} by {_pick(r, FIXES)} "
            f"({_pick(r, v.files)})."
        ),
        lambda r, v: (
            f"{_pick(r, v.functions)} no longer fails when {_pick(r, CONDITIONS)}: {_pick(r, FIXES)}."
        ),
    ],
    "conclusion": [
        lambda r, v: (
            f"The failures in {_pick(r, COMPONENTS)} were caused by {_pick(r, CAUSES)}, "
            f"not by {_pick(r, TECHS)}."
        ),
        lambda r, v: f"Root cause of `{_pick(r, ERRORS)}`: {_pick(r, CAUSES)}.",
    ],
    "question": [
        lambda r, v: (
            f"Should {_pick(r, COMPONENTS)} move to {_pick(r, TECHS)}, or is {_pick(r, FIXES)} enough?"
        ),
        lambda r, v: f"Why does {_pick(r, v.functions)} take so long when {_pick(r, CONDITIONS)}?",
    ],
    "todo": [
        lambda r, v: (
            f"Add a regression test for {_pick(r, v.functions)} covering the case where "
            f"{_pick(r, CONDITIONS)}."
        ),
        lambda r, v: f"Remove the workaround in {_pick(r, v.files)} once {_pick(r, TECHS)} is upgraded.",
    ],
    "context": [
        lambda r, v: (
            f"{_pick(r, v.files)} owns {_pick(r, COMPONENTS)}; it calls {_pick(r, v.functions)} "
            f"and talks to {_pick(r, TECHS)}."
        ),
        lambda r, v: f"The {_pick(r, AREAS)} area runs on {_pick(r, TECHS)} with {_pick(r, TECHS)} in front.",
    ],
}
INTENT_WEIGHTS = {
    "decision": 14, "problem": 20, "solution": 18, "conclusion": 12, "question": 8, "todo": 10, "context": 18,
}  # fmt: skip

SPAN_TEMPLATES: list[Template] = [
    lambda r, v: f"{_pick(r, COMPONENTS).capitalize()} and {_pick(r, TECHS)}",
    lambda r, v: f"Debugging {_pick(r, v.functions)}",
    lambda r, v: f"Migrating {_pick(r, AREAS)} to {_pick(r, TECHS)}",
    lambda r, v: f"Flaky tests in {_pick(r, v.files)}",
]


@dataclass
class GeneratedSession:
    project_index: int
    session_id: str
    path: str
    started: datetime
    messages: list[tuple[int, str, str, datetime]]  # line, role, text, timestamp
    spans: list[tuple[str, str, int, int]]  # name, summary, start line, end line
    ideas: list[tuple[int, int, str, str, float, datetime]]  # span index, line, intent, content, importance


def generate_sessions(size: int, seed: int = 20250903) -> Iterator[GeneratedSession]:
    """Sessions holding `size` ideas in total, reproducibly from `seed`.

    Each session has 10-40 ideas cited from messages two at a time, the messages a few lines apart
    (the lines in between stand for tool calls and results), and topic spans of 4-10 messages.
    """
    rng = random.Random(seed)
    vocab = Vocabulary.build(random.Random(seed + 1))
    intents = list(INTENT_WEIGHTS)
    weights = [INTENT_WEIGHTS[i] for i in intents]
    now = datetime(2025, 9, 1, tzinfo=UTC)
    made = 0
    while made < size:
        count = min(size - made, rng.randint(10, 40))
        project = rng.randrange(len(PROJECTS))
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        started = now - timedelta(days=rng.uniform(0, 400), seconds=rng.randrange(86_400))
        path = f"/bench/projects/-home-dev-{PROJECTS[project][1]}/{session_id}.jsonl"
        messages: list[tuple[int, str, str, datetime]] = []
        ideas: list[tuple[int, int, str, str, float, datetime]] = []
        spans: list[tuple[str, str, int, int]] = []
        line, at = 1, started
        span_left = 0
        for start in range(0, count, 2):
            if span_left == 0:
                name = _pick(rng, SPAN_TEMPLATES)(rng, vocab)
                summary = (
                    f"{_pick(rng, COMPONENTS).capitalize()}: {_pick(rng, CONDITIONS)}; {_pick(rng, FIXES)}."
                )
                spans.append((name, summary, line, line))
                span_left = rng.randint(4, 10)
            span_left -= 1
            contents = []
            for _ in range(min(2, count - start)):
                intent = rng.choices(intents, weights)[0]
                content = _pick(rng, IDEA_TEMPLATES[intent])(rng, vocab)
                contents.append(content)
                ideas.append((len(spans) - 1, line, intent, content, round(rng.uniform(0.2, 1.0), 2), at))
            lead = _pick(rng, LEADS).format(file=_pick(rng, vocab.files))
            role = "assistant" if rng.random() < 0.8 else "user"
            messages.append((line, role, f"{lead} {' '.join(contents)}", at))
            name, summary, first, _ = spans[-1]
            spans[-1] = (name, summary, first, line)
            line += rng.randint(1, 6)
            at += timedelta(seconds=rng.randint(5, 240))
        made += count
        yield GeneratedSession(project, session_id, path, started, messages, spans, ideas)


async def write_corpus(store: Store, size: int) -> dict[str, int]:
    """Insert the generated corpus with explicit ids (one writer, fresh database), in big transactions."""
    db = store.db
    async with db.write() as conn:
        await conn.executemany(
            "INSERT INTO projects (id, path, name) VALUES (?, ?, ?)",
            [(i + 1, path, name) for i, (path, name) in enumerate(PROJECTS)],
        )
    counts = {"sessions": 0, "messages": 0, "spans": 0, "ideas": 0}
    ids = {"file": 0, "message": 0, "span": 0, "idea": 0}
    batch: list[GeneratedSession] = []

    async def flush() -> None:
        sessions, files, messages, spans, ideas = [], [], [], [], []
        for s in batch:
            ids["file"] += 1
            file_id = ids["file"]
            cwd = PROJECTS[s.project_index][0]
            last = s.messages[-1][3]
            sessions.append(
                (
                    s.session_id,
                    s.project_index + 1,
                    cwd,
                    "main",
                    iso_utc(s.started),
                    iso_utc(last),
                    len(s.messages),
                )
            )
            last_line = s.messages[-1][0]
            files.append(
                (file_id, s.path, s.session_id, last_line * 400, last_line, last_line * 400, last_line)
            )
            for line, role, text, at in s.messages:
                ids["message"] += 1
                messages.append(
                    (ids["message"], s.session_id, file_id, line, line, line * 400, line * 400 + len(text),
                     role, text, message_hash(role, "text", text), iso_utc(at), cwd)
                )  # fmt: skip
            first_span = ids["span"] + 1
            for name, summary, start, end in s.spans:
                ids["span"] += 1
                spans.append((ids["span"], s.session_id, file_id, name, summary, start, end))
            session_ideas: list[int] = []
            for span_index, line, intent, content, importance, at in s.ideas:
                ids["idea"] += 1
                session_ideas.append(ids["idea"])
                ideas.append(
                    [ids["idea"], s.session_id, first_span + span_index, file_id, line, intent, content,
                     idea_hash(content), 0.8, importance, iso_utc(at), None]
                )  # fmt: skip
            # About 2% of ideas are superseded by a later idea of the same session, as real ones are.
            for position in range(len(session_ideas) - 1):
                if (session_ideas[position] * 2654435761) % 100 < 2:
                    ideas[len(ideas) - len(session_ideas) + position][11] = session_ideas[-1]
        async with db.write() as conn:
            await conn.executemany(
                "INSERT INTO sessions (id, project_id, cwd, git_branch, started_at, last_at, message_count) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                sessions,
            )
            await conn.executemany(
                "INSERT INTO transcript_files (id, path, session_id, byte_offset, line, size, indexed_line) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                files,
            )
            await conn.executemany(
                "INSERT INTO messages (id, session_id, file_id, line, end_line, byte_start, byte_end, role, "
                "kind, text, content_hash, timestamp, cwd) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'text', ?, ?, ?, ?)",
                messages,
            )
            await conn.executemany(
                "INSERT INTO topic_spans (id, session_id, file_id, name, summary, start_line, end_line) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                spans,
            )
            # Superseding ideas come later in the same batch: insert without the link, then set it.
            await conn.executemany(
                "INSERT OR IGNORE INTO ideas (id, session_id, span_id, source_file_id, source_line, intent, "
                "content, content_hash, confidence, importance, said_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [row[:11] for row in ideas],
            )
            await conn.executemany(
                "UPDATE ideas SET superseded_by = ? "
                "WHERE id = ? AND EXISTS (SELECT 1 FROM ideas WHERE id = ?)",
                [(row[11], row[0], row[11]) for row in ideas if row[11] is not None],
            )
        counts["sessions"] += len(sessions)
        counts["messages"] += len(messages)
        counts["spans"] += len(spans)
        counts["ideas"] += len(ideas)
        batch.clear()

    for session in generate_sessions(size):
        batch.append(session)
        if len(batch) >= SESSIONS_PER_TRANSACTION:
            await flush()
            log(f"  wrote {counts['ideas']:,}/{size:,} ideas")
    if batch:
        await flush()
    counts["ideas"] = int(await db.scalar("SELECT count(*) FROM ideas"))
    return counts


async def derive_message_vectors(store: Store, chunk: int = 2048) -> None:
    """Give every generated message the normalised mean of its ideas' vectors instead of embedding it.

    A generated message is its two ideas' sentences behind a short lead-in, so the mean of their
    vectors lies close to its own, and HNSW search costs the same either way; embedding the messages
    too would double the build time for no difference in what the latency part measures. Metadata
    comes from the outbox's own query, so the vectors filter exactly like drained ones.
    """
    db, vectors = store.db, store.vectors
    source = outbox.SOURCES["messages"]
    collection = vectors._collection("messages")  # raw Chroma: these vectors are not computed from text
    total = int(await db.scalar("SELECT count(*) FROM messages"))
    last_id = 0
    done = 0
    while True:
        ids = [
            int(row["id"])
            for row in await db.fetchall(
                "SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?", (last_id, chunk)
            )
        ]
        if not ids:
            break
        last_id = ids[-1]
        rows = await db.fetchall(source.load_sql(), (json.dumps(ids),))
        sources = await db.fetchall(
            """
            SELECT m.id AS message, i.id AS idea FROM messages m
            JOIN ideas i ON i.source_file_id = m.file_id AND i.source_line = m.line
            WHERE m.id IN (SELECT value FROM json_each(?))
            """,
            (json.dumps(ids),),
        )
        by_message: dict[int, list[str]] = {}
        for row in sources:
            by_message.setdefault(int(row["message"]), []).append(str(row["idea"]))
        idea_vectors = await asyncio.to_thread(
            vectors.get_embeddings, "ideas", [idea for group in by_message.values() for idea in group]
        )
        out_ids, out_vectors, out_meta = [], [], []
        for row in rows:
            parts = [idea_vectors[i] for i in by_message.get(int(row["id"]), []) if i in idea_vectors]
            if not parts:
                continue
            mean = [sum(values) / len(parts) for values in zip(*parts, strict=True)]
            norm = sum(v * v for v in mean) ** 0.5 or 1.0
            out_ids.append(str(row["id"]))
            out_vectors.append([v / norm for v in mean])
            out_meta.append(sanitize_metadata(outbox._metadata(row, source.flags)))
        for start in range(0, len(out_ids), 1024):
            await asyncio.to_thread(
                collection.upsert,
                ids=out_ids[start : start + 1024],
                embeddings=out_vectors[start : start + 1024],
                metadatas=out_meta[start : start + 1024],  # type: ignore[arg-type]
            )
        done += len(ids)
        log(f"  message vectors derived: {done:,}/{total:,}")


def _embedding() -> MiniLMInt8Embedding:
    return MiniLMInt8Embedding()


async def open_store(home: Path, ef: MiniLMInt8Embedding) -> tuple[Store, Settings]:
    settings = Settings.load(home)
    store = await Store.open(settings, vectors=VectorIndex(settings, ef))
    return store, settings


async def ensure_corpus(home: Path, size: int, ef: MiniLMInt8Embedding) -> dict[str, Any]:
    """The store of `size` ideas at `home`, generated and embedded unless a complete one is there."""
    marker = home / "bench-corpus.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        if info.get("generator") == GENERATOR_VERSION and info.get("size") == size:
            log(f"reusing the {size:,}-idea store at {home}")
            return dict(info)
        log(f"{home} was built by another generator version; rebuilding")
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    log(f"generating {size:,} ideas in {home}")
    started = time.perf_counter()
    store, _ = await open_store(home, ef)
    try:
        counts = await write_corpus(store, size)
        written = time.perf_counter() - started
        async with store.db.write() as conn:
            await conn.execute("DELETE FROM vector_outbox WHERE kind = 'messages'")
        pending = await outbox.pending(store.db)
        log(f"  SQL written in {written:.1f} s; embedding {pending:,} ideas and spans")
        embed_started = time.perf_counter()
        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.perf_counter()
            if now - last[0] >= 15 or done == total:
                last[0] = now
                rate = done / max(now - embed_started, 1e-6)
                log(f"  embedded {done:,}/{total:,} ({rate:.0f}/s)")

        await outbox.drain(store.db, store.vectors, batch=512, progress=progress)
        await derive_message_vectors(store)
        embedded = time.perf_counter() - embed_started
    finally:
        await store.close()
    info = {
        "generator": GENERATOR_VERSION,
        "size": size,
        **counts,
        "write_seconds": round(written, 1),
        "embed_seconds": round(embedded, 1),
    }
    marker.write_text(json.dumps(info, indent=2))
    return info


# ---------------------------------------------------------------------------------------------------
# Latency


def latency_queries() -> list[str]:
    """~50 queries over the generated vocabulary: half natural language, half exact identifiers."""
    vocab = Vocabulary.build(random.Random(20250903 + 1))
    natural = [
        "why is the database locked when two workers write at the same time",
        "how did we fix the flaky retry in the payment webhook",
        "which message broker did we pick for notifications and why",
        "what broke the build in CI last time",
        "memory limit exceeded in the container",
        "decision to move the export job off the request path",
        "timezone bugs in the importer",
        "connection pool exhaustion under load",
        "how do we handle rate limiting from the upstream API",
        "tests that fail only on the runner because of clock skew",
        "why was the cache serving stale data after a deploy",
        "login breaks when the token expires during an upload",
        "what did we decide about exactly-once delivery",
        "slow pagination on the last page",
        "certificate verification failing in staging",
        "the webhook arrives before the order exists",
        "missing await during shutdown",
        "should the rate limiter move to Redis",
        "todo: regression tests for the sync worker",
        "N+1 queries in the serializer",
        "what does the search indexer talk to",
        "CSV import with a byte order mark",
        "upgrade blocked by the lockfile",
        "duplicate key violation on insert",
        "event loop closed error in tests",
    ]
    exact = [
        *vocab.functions[3:60:6],
        *vocab.files[2:80:9],
        "sqlite3.OperationalError",
        "ECONNREFUSED 127.0.0.1:6379",
        "TS2307",
        "EADDRINUSE",
        "KeyError: 'customer_id'",
        "NoCredentialsError",
        "HTTP 429",
    ]
    return natural + exact[:25]


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _load_search() -> Callable[..., Awaitable[SearchPage]]:
    try:
        from cairn.search.hybrid import search
    except ImportError as exc:
        raise SystemExit(f"cairn.search.hybrid.search is not available yet ({exc})") from exc
    return search


async def time_calls(call: Callable[[], Awaitable[Any]], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def measure_latency(
    home: Path, ef: MiniLMInt8Embedding, queries: list[str], repeats: int, kind: str
) -> dict[str, Any]:
    search = _load_search()
    store, settings = await open_store(home, ef)
    names = (
        "hybrid",
        "hybrid_new_query",
        "keyword",
        "semantic",
        "bare_fts",
        "bare_fts_drawn",
        "term_counts",
        "embed_query",
        "bare_chroma",
        "bare_chroma_filtered",
    )
    samples: dict[str, list[float]] = {name: [] for name in names}
    usage: list[float] = []
    try:
        db = store.db
        vectors = store.vectors

        def runner(q: str, mode: Mode, record: bool = False) -> Callable[[], Awaitable[SearchPage]]:
            request = SearchRequest(query=q, mode=mode, kind=kind, limit=10)  # type: ignore[arg-type]
            return lambda: search(db, vectors, settings, request, record_usage=record)

        def new_query(q: str) -> Callable[[], Awaitable[SearchPage]]:
            call = runner(q, "hybrid")

            async def forgetting() -> SearchPage:
                vectors.forget_queries()
                return await call()

            return forgetting

        def bare(q: str) -> Callable[[], Awaitable[Any]]:
            built = fts_query.build(q)
            assert built is not None, q
            return lambda: db.fetchall(BARE_FTS, (built.combined,))

        def counted(q: str) -> Callable[[], Awaitable[Any]]:
            built = fts_query.build(q)
            assert built is not None, q
            return lambda: keyword.term_counts(db, "ideas", "ideas_fts", built)

        drawn: dict[str, str] = {}
        for q in queries:
            built = fts_query.build(q)
            assert built is not None, q
            drawn[q] = keyword.candidate_match(built, (await counted(q)())[1])

        def bare_drawn(q: str) -> Callable[[], Awaitable[Any]]:
            return lambda: db.fetchall(BARE_FTS, (drawn[q],))

        # Reference points for reading the figures: embedding one query, and one bare Chroma query.
        def embed(q: str) -> Callable[[], Awaitable[Any]]:
            return lambda: asyncio.to_thread(vectors.embedding_function, [q])  # never a kept vector

        embeddings = {q: vectors.embed([q])[0] for q in queries}

        def nearest(q: str, where: dict[str, Any] | None = None) -> Callable[[], Awaitable[Any]]:
            return lambda: asyncio.to_thread(vectors.query, "ideas", None, 10, where, embedding=embeddings[q])

        # Warm-up: opens the collections, loads the model, fills SQLite's page cache.
        for q in queries:
            for mode in MODES:
                await runner(q, mode)()
            await bare(q)()
            await nearest(q)()
        for q in queries:
            samples["bare_fts"] += await time_calls(bare(q), repeats)
            samples["bare_fts_drawn"] += await time_calls(bare_drawn(q), repeats)
            samples["term_counts"] += await time_calls(counted(q), repeats)
            samples["embed_query"] += await time_calls(embed(q), repeats)
            samples["bare_chroma"] += await time_calls(nearest(q), repeats)
            # The metadata filter search applies by default (superseded ideas are left out).
            samples["bare_chroma_filtered"] += await time_calls(nearest(q, {"superseded": False}), repeats)
            for mode in MODES:
                samples[mode] += await time_calls(runner(q, mode), repeats)
            samples["hybrid_new_query"] += await time_calls(new_query(q), repeats)
        for q in queries:
            usage += await time_calls(runner(q, "hybrid", record=True), 1)
    finally:
        await store.close()
    results: dict[str, Any] = {name: _summary(values) for name, values in samples.items()}
    results["hybrid_record_usage"] = _summary(usage)
    # Other processes' load skews every figure alike; say how busy the machine was.
    results["load_average_1min"] = round(os.getloadavg()[0], 2)
    return results


def _summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "mean_ms": round(statistics.fmean(values), 2),
        "samples": len(values),
    }


# ---------------------------------------------------------------------------------------------------
# Quality


@dataclass(frozen=True)
class Place:
    """Where a result sits in the transcripts: a file (relative to the fixtures) and a line range."""

    file: str
    first: int
    last: int


def index_fixtures(home: Path, fixtures: Path) -> dict[str, Any]:
    """Index every fixture transcript into the store at `home` with the offline model, as a user would."""
    files = sorted(str(p) for p in fixtures.rglob("*.jsonl"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
    env["CAIRN_HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", "index", *files, "--model", "offline", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"cairn index failed ({proc.returncode}):\n{proc.stderr}")
    return dict(json.loads(proc.stdout))


async def places(store: Store, fixtures: Path) -> dict[str, Place]:
    """The transcript place of every indexed item, by public id. Looked up in SQLite rather than taken
    from results, so the check does not depend on how search fills `source`."""
    db = store.db
    root = str(fixtures.resolve()) + os.sep
    found: dict[str, Place] = {}

    def rel(path: str | None) -> str:
        return (path or "").removeprefix(root)

    for row in await db.fetchall(
        "SELECT m.id, f.path, m.line, m.end_line FROM messages m JOIN transcript_files f ON f.id = m.file_id"
    ):
        found[f"m{row['id']}"] = Place(rel(row["path"]), row["line"], row["end_line"])
    for row in await db.fetchall(
        "SELECT i.id, f.path, i.source_line FROM ideas i JOIN transcript_files f ON f.id = i.source_file_id "
        "WHERE i.source_line IS NOT NULL"
    ):
        found[str(row["id"])] = Place(rel(row["path"]), row["source_line"], row["source_line"])
    # An open span (no end line yet) runs to the last line stored from its file.
    for row in await db.fetchall(
        """
        SELECT s.id, f.path, s.start_line,
               coalesce(s.end_line, (SELECT max(m.end_line) FROM messages m WHERE m.file_id = s.file_id),
                        s.start_line) AS end_line
        FROM topic_spans s JOIN transcript_files f ON f.id = s.file_id
        """
    ):
        found[f"s{row['id']}"] = Place(rel(row["path"]), row["start_line"], row["end_line"])
    return found


def unstored_labels(queries: list[dict[str, Any]], where: dict[str, Place]) -> list[str]:
    """Labelled lines that no stored message covers: a label typo, or a line capture leaves out."""
    messages = [place for key, place in where.items() if key.startswith("m")]
    missing = []
    for item in queries:
        for answer in item["answers"]:
            for line in answer["lines"]:
                if not any(p.file == answer["file"] and p.first <= line <= p.last for p in messages):
                    missing.append(f"{item['id']}:{answer['file']}:{line}")
    return missing


async def measure_quality(
    fixtures: Path, ef: MiniLMInt8Embedding, variants: list[tuple[str, float | None]]
) -> dict[str, Any]:
    """Recall@5/10 and MRR per mode, per `(label, min_score)` variant, over the labelled queries."""
    search = _load_search()
    queries = json.loads(QUERIES_FILE.read_text())["queries"]
    groups = {
        "all": queries,
        **{t: [q for q in queries if q["type"] == t] for t in sorted({q["type"] for q in queries})},
    }
    results: dict[str, Any] = {}
    per_query: dict[str, dict[str, Any]] = {
        q["id"]: {"type": q["type"], "query": q["query"]} for q in queries
    }
    with tempfile.TemporaryDirectory(prefix="cairn-bench-search-") as tmp:
        home = Path(tmp)
        log("indexing the shared fixtures with the offline model")
        indexed = index_fixtures(home, fixtures)
        store, settings = await open_store(home, ef)
        try:
            where = await places(store, fixtures)
            unstored = unstored_labels(queries, where)
            if unstored:
                log(f"labelled lines no stored message covers (no mode can find them): {unstored}")
            for label, min_score in variants:
                # ranked[mode][query id]: per result, the labelled lines it points at, and its kind letter
                ranked: dict[str, dict[str, list[tuple[set[tuple[str, int]], str]]]] = {m: {} for m in MODES}
                for item in queries:
                    for mode in MODES:
                        request = SearchRequest(
                            query=item["query"], mode=mode, kind="all", limit=10, min_score=min_score
                        )
                        page = await search(store.db, store.vectors, settings, request, record_usage=False)
                        wanted = _wanted(item)
                        ranked[mode][item["id"]] = [
                            (_points_at(where.get(r.id), wanted), r.id[0] if r.id[0] in "sm" else "i")
                            for r in page.results
                        ]
                        hits = [hit for hit, _ in ranked[mode][item["id"]]]
                        per_query[item["id"]].setdefault(label, {})[mode] = {
                            "first_relevant_rank": next((i + 1 for i, hit in enumerate(hits) if hit), None),
                            "recall@10": round(_recall(hits, wanted, 10), 3),
                            "top": [r.id for r in page.results[:5]],
                        }
                table: dict[str, Any] = {"min_score": min_score}
                for group, members in groups.items():
                    table[group] = {mode: _means(members, ranked[mode], spans_count=True) for mode in MODES}
                table["all_without_spans"] = {
                    mode: _means(queries, ranked[mode], spans_count=False) for mode in MODES
                }
                results[label] = table
        finally:
            await store.close()
    return {
        "queries": len(queries),
        "by_type": {group: len(members) for group, members in groups.items() if group != "all"},
        "indexed": {
            "messages": indexed.get("messages_added"),
            "ideas": sum((indexed.get("applied") or {}).get("ideas_by_intent", {}).values()),
            "spans": (indexed.get("applied") or {}).get("spans_opened"),
        },
        "variants": results,
        "per_query": per_query,
    }


def _wanted(item: dict[str, Any]) -> set[tuple[str, int]]:
    return {(answer["file"], line) for answer in item["answers"] for line in answer["lines"]}


def _points_at(place: Place | None, wanted: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The labelled lines a result at `place` covers (empty: the result is not relevant)."""
    if place is None:
        return set()
    return {(f, line) for f, line in wanted if f == place.file and place.first <= line <= place.last}


def _recall(hits: list[set[tuple[str, int]]], wanted: set[tuple[str, int]], k: int) -> float:
    found: set[tuple[str, int]] = set().union(*hits[:k])
    return len(found & wanted) / len(wanted)


def _means(
    queries: list[dict[str, Any]],
    ranked: dict[str, list[tuple[set[tuple[str, int]], str]]],
    *,
    spans_count: bool,
) -> dict[str, float]:
    """Mean recall@5, recall@10 and reciprocal rank over `queries`; spans optionally never relevant."""
    r5, r10, rr = [], [], []
    for item in queries:
        wanted = _wanted(item)
        hits = [hit if spans_count or kind != "s" else set() for hit, kind in ranked[item["id"]]]
        r5.append(_recall(hits, wanted, 5))
        r10.append(_recall(hits, wanted, 10))
        rr.append(next((1 / (i + 1) for i, hit in enumerate(hits) if hit), 0.0))
    return {
        "recall@5": round(statistics.fmean(r5), 3),
        "recall@10": round(statistics.fmean(r10), 3),
        "mrr": round(statistics.fmean(rr), 3),
    }


def hybrid_beats_both(table: dict[str, dict[str, float]]) -> bool:
    h = table["hybrid"]
    return all(h[m] > max(table["keyword"][m], table["semantic"][m]) for m in ("recall@5", "recall@10"))


# ---------------------------------------------------------------------------------------------------
# Output


def print_latency(size: int, info: dict[str, Any], figures: dict[str, Any], queries: int) -> bool:
    print(
        f"\n{size:,} ideas ({info['sessions']:,} sessions, {info['messages']:,} messages, "
        f"{info['spans']:,} spans); "
        f"{queries} queries x {figures['hybrid']['samples'] // queries} runs; "
        f"load average {figures['load_average_1min']} on {os.cpu_count()} CPUs"
    )
    print(f"  {'':30} {'p50 ms':>9} {'p95 ms':>9}")
    labels = {
        "bare_fts": "bare FTS5 (ideas_fts)",
        "bare_fts_drawn": "  same, search's expression",
        "term_counts": "  its term counts",
        "embed_query": "  for reference: embed query",
        "bare_chroma": "  bare Chroma top 10 (ideas)",
        "bare_chroma_filtered": "  same, where superseded=False",
        "keyword": "keyword",
        "semantic": "semantic",
        "hybrid": "hybrid (record_usage=False)",
        "hybrid_record_usage": "hybrid (record_usage=True)",
        "hybrid_new_query": "hybrid, new query",
    }
    for key, label in labels.items():
        row = figures[key]
        print(f"  {label:30} {row['p50_ms']:9.2f} {row['p95_ms']:9.2f}")
    bare = figures["bare_fts"]
    for key in ("hybrid", "hybrid_new_query"):
        hybrid = figures[key]
        print(
            f"  ratio {labels[key].split(' (')[0]}/bare FTS5: p50 {hybrid['p50_ms'] / bare['p50_ms']:.1f}x, "
            f"p95 {hybrid['p95_ms'] / bare['p95_ms']:.1f}x"
        )
    held = meets_target(figures)
    verdict = "holds" if held else "MISSED"
    suffix = "" if size >= TARGET_SIZE else f" (the target is stated at {TARGET_SIZE:,} ideas)"
    p95 = figures["hybrid_new_query"]["p95_ms"]
    print(
        f"  hybrid (new query) p95 {p95:.1f} ms vs target <= {TARGET_P95_MS:.0f} ms and <= "
        f"{TARGET_RATIO:.0f}x bare FTS5 ({TARGET_RATIO * bare['p95_ms']:.1f} ms): {verdict}{suffix}"
    )
    return held


def meets_target(figures: dict[str, Any]) -> bool:
    """Hybrid p95 for new queries within `TARGET_P95_MS` and `TARGET_RATIO` x bare FTS5's p95."""
    p95 = figures["hybrid_new_query"]["p95_ms"]
    return p95 <= TARGET_P95_MS and p95 <= TARGET_RATIO * figures["bare_fts"]["p95_ms"]


def print_quality(quality: dict[str, Any]) -> bool:
    """The quality tables; returns whether hybrid beats both single modes in the first variant."""
    indexed = quality["indexed"]
    print(
        f"\nretrieval quality: {quality['queries']} labelled queries {quality['by_type']} over the shared "
        f"fixtures ({indexed['messages']} messages, {indexed['ideas']} ideas, {indexed['spans']} spans "
        "indexed offline; kind=all, limit 10)"
    )
    variants = quality["variants"]
    print(f"  {'':10} {'queries':20}" + "".join(f"  {label:>22}" for label in variants))
    print(f"  {'':10} {'':20}" + f"  {'R@5':>6} {'R@10':>7} {'MRR':>7}" * len(variants))
    groups = ["all", *quality["by_type"], "all_without_spans"]
    for mode in ("keyword", "semantic", "hybrid"):
        for n, group in enumerate(groups):
            name = "all, no span credit" if group == "all_without_spans" else group
            if group in quality["by_type"]:
                name = f"{group} ({quality['by_type'][group]})"
            cells = "".join(
                f"  {row['recall@5']:6.3f} {row['recall@10']:7.3f} {row['mrr']:7.3f}"
                for row in (table[group][mode] for table in variants.values())
            )
            print(f"  {mode if n == 0 else '':10} {name:20}{cells}")
    first = next(iter(variants.values()))
    beats = hybrid_beats_both(first["all"])
    for label, table in variants.items():
        wins = hybrid_beats_both(table["all"])
        print(
            f"  hybrid above both single modes in recall@5 and recall@10 ({label}): {'yes' if wins else 'NO'}"
        )
    for label in variants:
        losses = []
        for qid, entry in quality["per_query"].items():
            row = entry[label]
            if row["hybrid"]["recall@10"] < max(row["keyword"]["recall@10"], row["semantic"]["recall@10"]):
                losses.append((qid, entry["query"], row))
        if losses:
            print(f"  queries where hybrid recall@10 is below a single mode ({label}):")
        for qid, text, row in losses:
            parts = ", ".join(f"{m} {row[m]['recall@10']:.2f}" for m in ("keyword", "semantic", "hybrid"))
            print(f"    [{qid}] {text[:60]!r}: {parts}")
    return beats


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes", default="10000,100000", help="comma-separated idea counts (default %(default)s)"
    )
    parser.add_argument("--cache", type=Path, help="keep generated stores here and reuse them on later runs")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per query and mode (default 5)")
    parser.add_argument("--kind", default="all", choices=["all", "ideas", "spans", "messages"])
    parser.add_argument(
        "--quick", action="store_true", help=f"one small size ({QUICK_SIZE:,}) for smoke runs"
    )
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="shared transcript fixtures")
    parser.add_argument(
        "--min-score",
        type=float,
        default=None,
        help="quality queries' min_score (default: both the configured default and 0, ranking alone)",
    )
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    sizes = [QUICK_SIZE] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    ef = _embedding()
    report: dict[str, Any] = {"latency": {}, "quality": None}
    ok = True
    if not args.skip_latency:
        queries = latency_queries()
        with tempfile.TemporaryDirectory(prefix="cairn-bench-corpus-") as tmp:
            base = args.cache if args.cache is not None else Path(tmp)
            for size in sizes:
                home = base / f"ideas-{size}"
                info = await ensure_corpus(home, size, ef)
                log(f"timing {len(queries)} queries x {args.repeats} runs at {size:,} ideas")
                figures = await measure_latency(home, ef, queries, args.repeats, args.kind)
                report["latency"][str(size)] = {"corpus": info, "queries": len(queries), **figures}
                if not args.json:
                    held = print_latency(size, info, figures, len(queries))
                    ok = ok and (held or size < TARGET_SIZE)
                elif size >= TARGET_SIZE:
                    ok = ok and meets_target(figures)
    if not args.skip_quality:
        variants: list[tuple[str, float | None]] = (
            [("default min_score", None), ("min_score=0", 0.0)]
            if args.min_score is None
            else [(f"min_score={args.min_score:g}", args.min_score)]
        )
        quality = await measure_quality(args.fixtures, ef, variants)
        report["quality"] = quality
        first = next(iter(quality["variants"].values()))
        beats = hybrid_beats_both(first["all"]) if args.json else print_quality(quality)
        ok = ok and beats
    if args.json:
        print(json.dumps(report, indent=2))
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
