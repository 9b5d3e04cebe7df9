"""cairn's exceptions: one tree, so every face answers a failure the same way.

A face (the CLI, the daemon's socket, the MCP server, the viewer) must tell apart three things that
went wrong, because each is answered differently:

- the caller asked for something that cannot be done (`Refusal`): one line that says what to do, exit
  status 2, nothing logged — the user's input was wrong, not cairn;
- the environment failed (`Failure`: disk, lock, store, model, daemon): one line, exit status 1;
- anything else is a bug: its trace is logged (the daemon's log, or `$CAIRN_HOME/logs/cli.log` for a
  command that ran the op itself) and the user sees one "internal error" line naming that log.

A `ValueError` is not a refusal: a face catches `Refusal`, so a `ValueError` some library (or cairn)
raises by mistake is reported as the bug it is. `Refusal` also derives from `ValueError` and `Failure`
from `RuntimeError`, so a caller of the library that catches those builtins meets cairn's errors too.

This module imports nothing of cairn: every layer raises these. The classes stay in the modules that
raise them; this is the map of where they live.

    CairnError
    ├── Refusal (ValueError) — bad input: one line, exit 2
    │   ├── cairn.config.ConfigError
    │   ├── cairn.dates.DateError
    │   ├── cairn.daemon.server.UnknownOpError, BadArgumentsError
    │   ├── cairn.daemon.client.DaemonRefusal (also a DaemonRequestError: see below)
    │   ├── cairn.daemon.install.PurgeRefused
    │   ├── cairn.search.errors.SearchError
    │   │   ├── ItemNotFoundError
    │   │   └── BadContinuationError
    │   ├── cairn.search.models.BadItemIdError
    │   ├── cairn.lifecycle.forget.ForgetError
    │   ├── cairn.lifecycle.importer.ImportFormatError
    │   ├── cairn.lifecycle.import_rules.Refused
    │   ├── cairn.transcripts.reader.TranscriptNotFound (also FileNotFoundError)
    │   ├── cairn.prompts.PromptNotFoundError (also LookupError)
    │   └── cairn.evals: dataset.DatasetError, questions.BenchmarkError, record.RecordingError,
    │       runs.RunFileError
    ├── Failure (RuntimeError) — the environment failed: one line, exit 1
    │   ├── cairn.store.lock.StoreLockedError
    │   ├── cairn.store.db.DatabaseError
    │   ├── cairn.store.failures.StoreReadOnlyError, UnsafeHomeError
    │   ├── cairn.store.migrations.SchemaTooNewError, MigrationError
    │   ├── cairn.store.embeddings.EmbeddingModelError
    │   ├── cairn.store.vectors.VectorStoreError
    │   │   ├── EmbeddingConflictError
    │   │   └── VectorStoreUnavailable
    │   ├── cairn.agent.models.ModelConfigError
    │   │   └── UnknownModelError
    │   ├── cairn.agent.offline.model.OfflineModelError
    │   ├── cairn.agent.offline.classifier.WeightsError
    │   ├── cairn.agent.executor.StaleBatchError
    │   ├── cairn.agent.spend.SpendLimitReached (also pydantic-ai's UsageLimitExceeded)
    │   ├── cairn.agent.claude_code_login.LoginExpired
    │   ├── cairn.agent.claude_code_errors: ClaudeCodeError, ClaudeCodeNotLoggedIn, ClaudeCodeRateLimited,
    │   │   ClaudeCodeExited, ClaudeCodeMalformedReply, ClaudeCodeRejected, ClaudeCodeTooLong,
    │   │   ClaudeCodeAPIError (each also the pydantic-ai model error the agent's retries and pauses read)
    │   ├── cairn.daemon.client.NoDaemon
    │   ├── cairn.daemon.client.DaemonRequestError
    │   │   ├── DaemonFailure
    │   │   └── DaemonRefusal (also a Refusal)
    │   ├── cairn.daemon.process.DaemonError
    │   ├── cairn.daemon.plugin.PluginError
    │   ├── cairn.daemon.install.SettingsFileError
    │   ├── cairn.reindex.swap.SwapConflictError
    │   └── cairn.evals: compare.ChartUnavailableError, indexing.IndexingStoppedError,
    │       record.ReplayMismatchError (also pydantic-ai's ModelAPIError)
    ├── cairn.cli.export_target.ExportTargetError — either branch: its `code` is the exit status
    └── cairn.ui.backend.Refusal — the viewer's one line for an op that failed, whichever branch

`DaemonRefusal` sits on both branches: the daemon refused the request (a refusal, worded as the same op
run directly words it), and callers that catch `DaemonRequestError` for "the daemon said no" rely on it.

Not in the tree, and never seen by a user: exceptions that only carry control flow inside one module and
are caught there — `cairn.daemon.recall.Late`, `cairn.daemon.jobs._StopEmbedding`,
`cairn.store.vector_worker._Stop`, `cairn.backfill._Stop`, `cairn.transcripts.reader._TooDeep`.
"""

from __future__ import annotations

__all__ = ["CairnError", "Failure", "Refusal", "internal_error_line"]


class CairnError(Exception):
    """Anything cairn raises on purpose; a face shows it as one line (a bug is any other exception)."""


class Refusal(CairnError, ValueError):
    """The caller's input or request cannot be done: one line that says what to do instead, exit 2."""


class Failure(CairnError, RuntimeError):
    """The environment failed (disk, lock, store, model, daemon): one line that says what, exit 1."""


def internal_error_line(op: str, exc: BaseException, log: object) -> str:
    """The one line a user sees for a bug in `op`: what was raised, and where its trace was logged."""
    message = " ".join(str(exc).split())
    raised = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"internal error in {op}: {raised}; the trace is in {log}"
