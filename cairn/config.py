"""cairn's settings: `CAIRN_*` environment variables over `$CAIRN_HOME/config.toml` over defaults.

Every piece of state lives under one directory, `CAIRN_HOME` (default `~/.cairn`), and every path is
derived from it, so two stores (a user's and a test's, say) never touch each other.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from cairn import config_checks
from cairn.errors import Refusal

# Re-exported: the home is found without the settings (`cairn.home`), and imported from here as well.
from cairn.home import DEFAULT_HOME as DEFAULT_HOME
from cairn.home import PIDFILE_NAME, SOCKET_NAME, resolve_home

ENV_PREFIX = "CAIRN_"

#: `CAIRN_*` variables that are not settings but are read elsewhere (the hooks, their launcher, the
#: recall hook's deadline, tests); anything else with the prefix that names no setting is a typo.
OTHER_ENV = frozenset(
    {
        "CAIRN_HOME",
        "CAIRN_PYTHON",
        "CAIRN_SQLITE3",
        "CAIRN_HOOK_NO_SPAWN",
        "CAIRN_RECALL_DEADLINE_MS",
        "CAIRN_LAUNCHER",
    }
)
OTHER_ENV_PREFIXES = ("CAIRN_TEST_",)

_TOML_POSITION = re.compile(r"^(?P<what>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)\s*$")


class ConfigError(Refusal):
    """`config.toml` cannot be read as TOML; the message is one line: file, line, column, what to do."""


def read_config_file(path: Path) -> dict[str, Any]:
    """The table `config.toml` holds, `{}` when there is no file; raises `ConfigError` on bad TOML.

    Read here rather than by pydantic-settings' TOML source, whose `TOMLDecodeError` surfaces as a
    traceback far from the file; this one names the file, line and column and says what to do.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror or exc})") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POSITION.match(str(exc))
        if match:
            where, what = f"{path}:{match['line']}:{match['col']}", match["what"]
        else:
            where, what = str(path), str(exc)
        raise ConfigError(
            f"{where}: invalid TOML ({what.rstrip('.')}); fix that line (settings look like "
            f"`recall_enabled = false`) or move the file aside"
        ) from None


_TABLE_HEADER = re.compile(r"^\s*\[")
_KEY_LINE = r"^\s*{name}\s*=.*$"


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(value: Any) -> str:
    """`value` as TOML writes it: `true`/`false`, JSON's escapes for a basic string and its numbers
    (they are TOML's), `[a, b]` for a list and `{ k = v }` for a mapping, so what `cairn config` shows
    can be copied into config.toml as it is. TOML has no null: the caller says what an unset value is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = [f"{_toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()]
        return "{ " + ", ".join(pairs) + " }" if pairs else "{}"
    return json.dumps(value)


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def write_setting(path: Path, name: str, value: str | int | bool) -> bool:
    """Set the top-level setting `name` in the config file at `path`, keeping every other byte of it.

    `cairn install` writes the user's answer (`model = "claude-code"`) here; the file is theirs, often
    with comments, so it is edited rather than rewritten: an existing `name = ...` line is replaced, else
    the line goes before the first table (`[prices]`), where top-level keys must be. The result is
    parsed before it is written, and must differ from the old file by this one setting alone, else
    `ConfigError` (a value spread over lines, say) and the file is untouched. Written atomically, 0600.
    Returns whether the file changed.
    """
    if path.is_symlink():  # a dotfile setup's link stays a link: its target is edited
        path = path.resolve()
    old = read_config_file(path)
    if old.get(name) == value and type(old.get(name)) is type(value):
        return False
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    line = f"{name} = {toml_value(value)}"
    lines = text.splitlines(keepends=True)
    key = re.compile(_KEY_LINE.format(name=re.escape(name)))
    top = next((i for i, raw in enumerate(lines) if _TABLE_HEADER.match(raw)), len(lines))
    at = next((i for i in range(top) if key.match(lines[i])), None)
    if at is not None:
        ending = lines[at][len(lines[at].rstrip("\r\n")) :] or "\n"
        lines[at] = line + ending
    else:
        if top == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines.insert(top, line + "\n")
    new_text = "".join(lines)
    try:
        parsed = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        parsed = None
    if parsed != {**old, name: value}:
        raise ConfigError(f"{path}: cannot set {name} here without changing more; add `{line}` by hand")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".config.", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new_text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


EmbeddingName = Literal["minilm-int8", "chroma-onnx", "openai"]


class Settings(BaseSettings):
    """All of cairn's knobs. Construct with `Settings.load()` so `config.toml` is found.

    Every number has a range and none may be infinite or NaN (`inf` parses as a TOML float and once
    killed the daemon): an upper bound is far above any useful value, below what overflows a time or
    SQLite. Paths, URLs and the embedding's key are checked at load too (`cairn.config_checks`).
    """

    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore", frozen=True, allow_inf_nan=False)

    home: Path = Field(default_factory=resolve_home, description="Directory holding all of cairn's state.")
    claude_projects_dir: Path = Field(
        default=Path("~/.claude/projects"), description="Where Claude Code writes session transcripts."
    )

    # Storage
    chroma_url: str | None = Field(
        default=None,
        description="Use a Chroma server (e.g. http://127.0.0.1:8000) instead of the embedded client.",
    )
    sqlite_busy_timeout_ms: int = Field(default=10_000, ge=0, le=86_400_000)

    # Embeddings
    embedding: EmbeddingName = Field(
        default="minilm-int8",
        description="minilm-int8 (packaged, offline), chroma-onnx (Chroma's stock model, downloads on "
        "first use) or openai (an OpenAI-compatible embeddings endpoint).",
    )
    embedding_url: str | None = Field(default=None, description="Base URL of the OpenAI-compatible endpoint.")
    embedding_model: str = Field(default="text-embedding-3-small")
    embedding_api_key_env: str = Field(
        default="OPENAI_API_KEY", description="Environment variable holding the embeddings endpoint's key."
    )
    embedding_batch_size: int = Field(default=64, ge=1, le=1024)
    embedding_threads: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Threads of the offline embedding model (minilm-int8). Unset: every CPU cairn may use "
        "(affinity and cgroup quota) for the commands you wait on (backfill, index, reindex, "
        "reindex-vectors, sync, import), min(4, half of them) for the daemon's background work.",
    )

    # Language model (used from the indexing-agent issue on).
    model: str | None = Field(default=None, description="pydantic-ai model string, or 'offline'.")
    model_base_url: str | None = Field(
        default=None,
        description="Base URL of the model API: an Anthropic-compatible proxy, or the OpenAI-compatible "
        "server (Ollama, llama.cpp, vLLM) for openai-chat:, openai: and ollama: models.",
    )
    model_max_tokens: int = Field(
        default=8192,
        ge=256,
        le=1_000_000,
        description="Output tokens per model request (a backfill batch can need ~5K).",
    )
    max_tool_calls: int = Field(
        default=15,
        ge=0,
        le=1_000,
        description="Tool calls per indexing run before the agent is told to answer.",
    )
    run_token_budget: int = Field(
        default=60_000,
        ge=1_000,
        le=100_000_000,
        description="Input plus output tokens an indexing run may use besides re-reading its batch: the "
        "run's limit is this plus four times the batch's own tokens, since every request re-sends it.",
    )
    daily_token_budget: int = Field(
        default=2_000_000,
        ge=0,
        le=10**12,
        description="Tokens (input, cached input and output, as the model reports them) indexing may use per "
        "local day with any model but offline; when spent, indexing waits for midnight and says so. "
        "0: no limit.",
    )
    claude_code_model: str = Field(
        default="claude-haiku-4-5",
        description="The model Claude Code indexes with when CAIRN_MODEL=claude-code "
        "(claude-code:NAME overrides it).",
    )
    claude_code_effort: Literal["low", "medium", "high", "max"] | None = Field(
        default="low", description="Claude Code's effort level for indexing runs (None: the CLI's default)."
    )
    claude_code_cli: Path | None = Field(
        default=None,
        description="The Claude Code CLI to run; unset: the one claude-agent-sdk bundles, else `claude` "
        "on PATH.",
    )
    model_retries: int = Field(
        default=4,
        ge=1,
        le=20,
        description="HTTP attempts per model request on 429/5xx/529 and connection errors.",
    )

    # Transcript reading and normalisation
    max_line_bytes: int = Field(
        default=32 * 1024 * 1024, ge=1024, le=2**30, description="Longer JSONL lines are skipped and counted."
    )
    tool_result_head_chars: int = Field(default=1500, ge=0, le=1_000_000)
    tool_result_tail_chars: int = Field(default=500, ge=0, le=1_000_000)
    tool_input_max_chars: int = Field(default=300, ge=20, le=1_000_000)
    include_thinking: bool = Field(default=False, description="Show thinking blocks to the indexer.")

    # Passages: long messages (tool results in full) cut into pieces search can find (README "Search")
    passages: bool = Field(
        default=True,
        description="Cut messages longer than one passage into passages, searched by keywords (and "
        "vectors, see passage_vectors); off, messages are stored as before passages existed.",
    )
    passage_tokens: int = Field(
        default=200, ge=32, le=256, description="Target MiniLM word pieces per passage (the model reads 256)."
    )
    message_vectors: Literal["prose", "all"] = Field(
        default="prose",
        description="Which messages get a vector: 'prose' (all but tool output, whose vectors only crowded "
        "semantic search in the evals: README \"Search\"), 'all' (tool output too: three times the "
        "embedding work). Keywords find every message either way. Takes effect for new messages; "
        "`cairn reindex-vectors` applies it to all.",
    )
    passage_vectors: Literal["none", "text", "prose", "all"] = Field(
        default="text",
        description="Which passages get a vector besides their message's own one (which reads the first "
        "passage): 'text' (user and assistant text), 'prose' (compaction summaries too), 'all' (tool "
        "output too: costly), 'none' (keywords only). Takes effect for new passages; `cairn "
        "reindex-vectors` applies it to all.",
    )

    embed_alongside: bool = Field(
        default=True,
        description="Embed while `backfill` and `index` capture and index (the Python work and ONNX "
        "Runtime then share the cores) instead of after capture; off, one after the other.",
    )

    # Daemon (continuous indexing)
    batch_window_seconds: float = Field(
        default=2.5,
        ge=0,
        le=60,
        description="After a hook notification, how long the daemon collects more before one indexing run.",
    )
    idle_exit_seconds: float = Field(
        default=300,
        ge=0,
        le=31_536_000,
        description="The daemon exits after this long with an empty queue and no request; the next hook "
        "starts it again. At most a year (31536000).",
    )
    queue_max_attempts: int = Field(
        default=5,
        ge=1,
        le=1_000,
        description="Failed runs of a queue item before it is parked for `cairn status`.",
    )
    pause_backoff_seconds: float = Field(
        default=60,
        gt=0,
        le=1800,
        description="After a failure of the model itself (unreachable, logged out, rate limited without a "
        "reset time) the daemon pauses indexing this long, doubling per failure up to 30 minutes, then "
        "tries one run; capture goes on meanwhile.",
    )
    continuous_token_budget: int = Field(
        default=10_000,
        ge=1_000,
        le=10_000_000,
        description="Tokens one continuous run aims at; half of it goes to the new messages, "
        "the rest to the prompt, tool results and output. What does not fit goes to the next run.",
    )

    # Search (README "Search ranking" gives each default and its reason)
    search_keyword_share: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="Weight of the keyword part in relevance (the vector part gets the rest); above 0.5 an "
        "item holding the query's words outranks a vector neighbour holding none of them.",
    )
    search_bm25_share: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="How much bm25 (relative to the kind's best row) scales the keyword tier strength.",
    )
    search_vector_floor_rank: int = Field(
        default=20,
        ge=2,
        le=1000,
        description="The vector part spreads cosines between the query's best and this rank's cosine.",
    )
    search_decisive_top: float = Field(
        default=0.85, ge=0, le=1, description="Skip vectors when the best keyword score reaches this..."
    )
    search_decisive_gap: float = Field(
        default=0.15, ge=0, le=1, description="...and leads the second by at least this much."
    )
    search_vector_floor: float = Field(
        default=0.2, ge=-1, le=1, description="Cosine similarity at or below which a vector hit is noise."
    )
    search_vector_ceiling: float = Field(
        default=0.7, ge=-1, le=1, description="Cosine similarity that counts as a perfect semantic match."
    )
    search_half_life_days: float = Field(
        default=30.0, gt=0, le=36_500, description="Age at which the recency signal halves (no hard cut-off)."
    )
    search_recency_weight: float = Field(default=0.2, ge=0, le=1)
    search_importance_weight: float = Field(default=0.3, ge=0, le=1)
    search_usage_weight: float = Field(default=0.05, ge=0, le=1)
    search_superseded_penalty: float = Field(
        default=0.5, ge=0, le=1, description="Score factor of a superseded idea when it is asked for."
    )
    search_boosts: dict[str, float] = Field(
        default_factory=lambda: {
            "decision": 0.75,
            "conclusion": 0.75,
            "solution": 0.75,
            "problem": 0.7,
            "question": 0.7,
            "todo": 0.7,
            "context": 0.65,
            "span": 0.3,
            "prompt": 1.1,
            "reply": 1.1,
            "tool_call": 0.2,
            "tool_result": 0.8,
            "tool_result:Bash": 1.0,
            "summary": 0.5,
            "message": 1.0,
            "compact_summary": 0.5,
        },
        description="Score factor per idea intent, for topic spans, and per message origin (prompt, reply, "
        "tool_call, tool_result, subagent, summary, system) or origin and tool ('tool_result:Read' before "
        "'tool_result'); 'message' and 'compact_summary' for messages stored without an origin.",
    )
    search_min_score: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Results scoring below this are left out unless asked. A match by meaning alone scores "
        "at most (1 - search_keyword_share) of relevance: keep this below that, or hybrid search drops it.",
    )
    search_context_weight: float = Field(
        default=0.15,
        ge=0,
        le=1,
        description="A message's relevance gains this share of the best relevance among the candidate "
        "text messages within search_context_lines lines of it (0: off).",
    )
    search_answer_weight: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="A message also gains this share of the best relevance among the candidate text "
        "messages that ask a question (a '?' near their end) within search_context_lines lines before "
        "it: the answer follows the turn that asks what the query asks (0: off).",
    )
    search_exchange_weight: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="The reply that closes a turn gains this share of the best relevance among the candidate "
        "messages of its turn (its prompt, tool calls and output) further than search_context_lines lines "
        "from it: the reply says what came of them (0: off).",
    )
    search_context_lines: int = Field(
        default=2, ge=1, le=50, description="How many transcript lines away a message's context reaches."
    )
    search_date_weight: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description='Relevance an item said on a date the query names gains ("on 7 July, 2023", '
        '"in May 2023"); the date\'s words leave the keyword query (0: dates are plain words).',
    )
    search_term_window: int = Field(
        default=60,
        ge=0,
        le=10_000,
        description="A keyword match holding only some of the query's terms counts those within its best "
        "window of this many words (0: anywhere in the text).",
    )
    search_tool_call_weight: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="A message whose keyword match holds the query's words only in its tool calls' "
        "arguments (paths, code, commands) rather than its prose counts at this share (1: no difference).",
    )
    search_candidates: int = Field(
        default=100, ge=10, le=1000, description="Candidates per ranking (one per kind and signal)."
    )
    search_without_daemon: Literal["keywords", "hybrid"] = Field(
        default="keywords",
        description="How `cairn search` answers when no daemon runs: 'keywords' at once, by words alone "
        "unless they are decisive (then the answer is hybrid search's own), saying so on stderr; "
        "'hybrid' after loading Chroma and the embedding model itself (seconds). --mode semantic "
        "always loads them.",
    )
    search_starts_daemon: bool = Field(
        default=True,
        description="When `cairn search` at a terminal finds no daemon and the indexing model is offline "
        "(the daemon then spends nothing), it starts one in the background, so the next search is hybrid "
        "and fast; off, only `cairn daemon start` and the capture hook start it.",
    )
    content_exact_boost: float = Field(
        default=1.5, ge=1, le=100, description="search_content's score factor per matched exact term."
    )
    content_min_score: float = Field(default=0.5, ge=0, le=1)

    # Recall: memory brought into the coding agent by the SessionStart and UserPromptSubmit hooks
    recall_enabled: bool = Field(
        default=True, description="Inject memory into Claude Code sessions (capture is not affected)."
    )
    recall_session_tokens: int = Field(
        default=1500, ge=100, le=20_000, description="Token budget of the SessionStart context."
    )
    recall_prompt_lines: int = Field(
        default=3, ge=1, le=20, description="At most this many ideas are injected per prompt."
    )
    recall_min_score: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Search-score floor for per-prompt recall (the score of `cairn search --kind ideas`).",
    )
    recall_candidates: int = Field(
        default=30,
        ge=10,
        le=1000,
        description="Candidates per ranking for per-prompt recall (search_candidates for recall's search).",
    )
    recall_min_specificity: float = Field(
        default=5.0,
        ge=0,
        le=100,
        description="Per-prompt recall injects an idea only when it holds prompt words this rare: the summed "
        "ln(N/df) of the prompt's terms it shares, over the stored messages (README, Recall).",
    )

    # The MCP server's tools
    mcp_learner_stats: bool = Field(
        default=False,
        description="Offer the learner_stats tool (learning counters, ~1,000 characters of tool list) to "
        "the coding agent; off, `cairn learn stats` still shows them.",
    )

    # The on-demand file index: project files the coding agent touched, chunked for search_content
    files_index: bool = Field(
        default=True,
        description="Index the project files the agent reads, edits or finds (CAIRN_FILES_INDEX).",
    )
    files_max_bytes: int = Field(
        default=512_000, ge=1_000, le=2**30, description="Files larger than this are not indexed (bytes)."
    )
    files_chunk_tokens: int = Field(
        default=900, ge=100, le=8_000, description="Target tokens per file chunk."
    )
    files_chunk_overlap: float = Field(
        default=0.15, ge=0, le=0.5, description="Share of a chunk repeated at the start of the next one."
    )
    files_per_result: int = Field(
        default=20,
        ge=0,
        le=500,
        description="At most this many paths are taken from one Grep or Glob result.",
    )

    # Learning from failed searches: weak searches followed by fallback reads
    learn_from_search: bool = Field(
        default=True,
        description="Learn search associations from weak searches and the reads that followed "
        "(CAIRN_LEARN_FROM_SEARCH; capture and indexing are not affected).",
    )
    learn_threshold: float = Field(
        default=0.65,
        ge=0,
        le=1,
        description="A search whose best score is below this opens a learning session.",
    )
    learn_timeout: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description="Seconds of transcript time after a weak search in which reads count as its fallback.",
    )
    learn_tools: list[str] = Field(
        default_factory=list,
        description="More search tool names to learn from, besides mcp__cairn__search and "
        "mcp__cairn__search_content.",
    )
    learn_boost: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="How far a fully matching, fresh association lifts a result toward 1.",
    )
    learn_half_life_days: float = Field(
        default=60.0,
        gt=0,
        le=36_500,
        description="An association's boost halves over this many days without use.",
    )
    learn_min_similarity: float = Field(
        default=0.65,
        ge=0,
        le=1,
        description="Cosine similarity a query needs to an association's query for the association to apply "
        "(MiniLM: 'user deletion endpoint' vs 'user creation endpoint' is 0.64, so it stays out).",
    )
    learn_full_similarity: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="Cosine similarity at which an association applies in full; between the minimum and this "
        "its weight rises linearly from 0 (MiniLM: 'login button' vs 'login button component' is 0.82).",
    )

    _no_nul = field_validator("*", mode="before")(config_checks.no_nul)
    _projects_dir_text = field_validator("claude_projects_dir", mode="before")(
        config_checks.projects_dir_text
    )
    _projects_dir = field_validator("claude_projects_dir")(config_checks.projects_dir)

    @field_validator("chroma_url")
    @classmethod
    def _chroma_url(cls, url: str | None) -> str | None:
        if url is not None:
            config_checks.parse_chroma_url(url)
        return url

    @model_validator(mode="after")
    def _embedding_key(self) -> Settings:
        config_checks.embedding_key(self.embedding, self.embedding_url, self.embedding_api_key_env)
        return self

    @classmethod
    def load(cls, home: str | os.PathLike[str] | None = None, **overrides: object) -> Settings:
        """Read settings for the store at `home` (default: `$CAIRN_HOME` or `~/.cairn`).

        Raises `ConfigError` for a `config.toml` that is not TOML, pydantic's `ValidationError` for a
        value that does not fit its setting.
        """
        resolved = resolve_home(home)
        file_values = known_only(read_config_file(resolved / "config.toml"))

        class _Located(cls):  # type: ignore[valid-type, misc]
            @classmethod
            def settings_customise_sources(
                cls,
                settings_cls: type[BaseSettings],
                init_settings: PydanticBaseSettingsSource,
                env_settings: PydanticBaseSettingsSource,
                dotenv_settings: PydanticBaseSettingsSource,
                file_secret_settings: PydanticBaseSettingsSource,
            ) -> tuple[PydanticBaseSettingsSource, ...]:
                return (init_settings, env_settings, InitSettingsSource(settings_cls, file_values))

        loaded = _Located(**{"home": resolved, **overrides})
        return cls.model_validate(loaded.model_dump())

    # Derived paths: every file cairn writes lives under `home`.
    @property
    def db_path(self) -> Path:
        return self.home / "cairn.db"

    @property
    def chroma_dir(self) -> Path:
        return self.home / "chroma"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def lock_path(self) -> Path:
        return self.home / "store.lock"

    @property
    def pid_path(self) -> Path:
        return self.home / PIDFILE_NAME

    @property
    def socket_path(self) -> Path:
        return self.home / SOCKET_NAME

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"

    @property
    def projects_dir(self) -> Path:
        return self.claude_projects_dir.expanduser()


def setting_names() -> list[str]:
    """Every setting's name as `config.toml` spells it (`CAIRN_` plus its upper case is the variable)."""
    return list(Settings.model_fields)


def known_only(values: dict[str, Any]) -> dict[str, Any]:
    """`values` without the keys that name no setting (those are warned about, never fatal)."""
    names = set(Settings.model_fields)
    return {key: value for key, value in values.items() if key in names}


def _closest(name: str, names: list[str]) -> str:
    match = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else "; `cairn config` lists the settings"


def unknown_setting_warnings(
    home: Path | None = None, env: dict[str, str] | os._Environ[str] = os.environ
) -> list[str]:
    """One line per `config.toml` key and `CAIRN_*` variable that names no setting, with the closest one.

    A misspelled key (`recal_enabled = false`) would otherwise be ignored without a word and the user
    left wondering why the setting has no effect. Never raises: a broken file is `ConfigError`'s job.
    """
    names = setting_names()
    path = resolve_home(home) / "config.toml"
    warnings: list[str] = []
    try:
        keys = list(read_config_file(path))
    except ConfigError:
        keys = []
    for key in keys:
        if key not in Settings.model_fields:
            warnings.append(f"{path}: unknown setting {key!r} is ignored{_closest(key, names)}")
    env_names = [ENV_PREFIX + name.upper() for name in names]
    for variable in sorted(env):
        upper = variable.upper()
        if (
            not upper.startswith(ENV_PREFIX)
            or upper in env_names
            or upper in OTHER_ENV
            or upper.startswith(OTHER_ENV_PREFIXES)
        ):
            continue
        close = difflib.get_close_matches(upper, env_names, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; `cairn config` lists the settings"
        warnings.append(f"unknown environment variable {variable} is ignored{hint}")
    return warnings


def setting_sources(
    home: Path | None = None, env: dict[str, str] | os._Environ[str] = os.environ
) -> dict[str, str]:
    """Where each setting's value comes from: `environment` (`CAIRN_*`), `file` (`config.toml`) or
    `default`, in that order of precedence, as `Settings.load` applies them."""
    resolved = resolve_home(home)
    try:
        in_file = set(read_config_file(resolved / "config.toml"))
    except ConfigError:
        in_file = set()
    env_upper = {variable.upper() for variable in env}
    sources: dict[str, str] = {}
    for name in setting_names():
        if ENV_PREFIX + name.upper() in env_upper:
            sources[name] = "environment"
        elif name in in_file:
            sources[name] = "file"
        else:
            sources[name] = "default"
    return sources
