"""What is conversation (issue 15, part 1): only what the person and the assistant said becomes ideas.

Compact summaries and a compaction subagent's transcript are context for the indexer; compaction
instructions, system reminders, hook output and command wrappers are harness text, skipped and
counted; a failed tool call is a problem only when the conversation takes it up, with its escapes
decoded and its message cut to the cause. Every rule runs here through the real pipeline (capture,
batch planning, the offline model, the executor) on the shared real transcripts and on team-written
ones modelled on what Claude Code writes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cairn.agent.batches import plan_batches
from cairn.agent.executor import apply
from cairn.agent.models import resolve_model
from cairn.agent.schema import CONTEXT_ROLE, Idea, IndexResult
from cairn.backfill import discover_sessions, run_backfill
from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.store import Store
from cairn.transcripts.normalise import normalise
from cairn.transcripts.reader import read_from
from tests.agent.executor_helpers import run_record
from tests.helpers.builders import Transcript
from tests.helpers.paths import REAL_TRANSCRIPTS

MAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
MAIN_SESSION = "c45af7b1-cb7c-4e51-93db-8cbb250a877a"
COMPACT_AGENT = "acompact-5e1d2c"

# Claude Code's instructions to its compaction subagent (abridged from the real template: the same
# headings, the same <example> of custom instructions) — the text the issue found filed as ideas.
COMPACTION_TEMPLATE = """Your task is to create a detailed summary of the conversation so far, paying close \
attention to the user's explicit requests and your previous actions.
This summary should be thorough in capturing technical details, code patterns, and architectural \
decisions that would be essential for continuing development work without losing context.

Your summary should include the following sections:

1. Primary Request and Intent: Capture all of the user's explicit requests and intents in detail
2. Key Technical Concepts: List all important technical concepts, technologies, and frameworks discussed.
3. Files and Code Sections: Enumerate specific files and code sections examined, modified, or created.
4. Errors and fixes: List all errors that you ran into, and how you fixed them.
5. Problem Solving: Document problems solved and any ongoing troubleshooting efforts.
6. All user messages: List ALL user messages that are not tool results.
7. Pending Tasks: Outline any pending tasks that you have explicitly been asked to work on.
8. Current Work: Describe in detail precisely what was being worked on immediately before this \
summary request.
9. Optional Next Step: List the next step that you will take that is related to the most recent work \
you were doing.

There may be additional summarization instructions provided in the included context. If so, remember \
to follow these instructions when creating the above summary. Examples of instructions include:
<example>
## Compact Instructions
When summarizing the conversation focus on typescript code changes and also remember the mistakes you \
made and how you fixed them.
</example>
"""
COMPACTION_SUMMARY = """<analysis>
The user asked for `ls -la` and then for the hooks sample to be explained.
</analysis>

<summary>
1. Primary Request and Intent: The user asked to run `ls -la` in /workspace and explain the output.
2. Key Technical Concepts: fasthooks, Claude Code hooks, PreToolUse.
4. Errors and fixes: We decided to keep the PreToolUse hook read-only.
7. Pending Tasks: TODO: document the PostToolUse hook.
9. Optional Next Step: Run the hook test suite again.
</summary>"""
REMINDER = (
    "<system-reminder>\nWhenever you read a file, you should consider whether it looks malicious.\n"
    "</system-reminder>"
)
HOOK_FAILURE = (
    'PreToolUse:Bash hook error: [mix precommit]: {"decision":"block","reason":"Pre-commit validation '
    "failed:\\n\\n[CREDO] lib/beads/spotter.ex:12 Modules should have a @moduledoc tag.\\n"
    '[CREDO] lib/beads/spotter.ex:40 Pipe chain should start with a raw value.\\n"}'
)

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_TEMPLATE_TEXT = re.compile(
    r"optional next step|detailed summary of the conversation|when summarizing the conversation|"
    r"<example>|system-reminder|consider whether it looks malicious|caveat: the messages below|"
    r"local-command|command-name|hook error",
    re.IGNORECASE,
)


def compaction_agent(cwd: str) -> Transcript:
    """A compaction subagent's transcript as Claude Code writes it: the template prompt, the summary."""
    t = Transcript(cwd, session_id=MAIN_SESSION)
    extra = {"isSidechain": True, "agentId": COMPACT_AGENT}
    t._line("user", {"role": "user", "content": COMPACTION_TEMPLATE}, **extra)
    t._line(
        "assistant",
        {
            "id": "msg_compact01",
            "role": "assistant",
            "content": [{"type": "text", "text": COMPACTION_SUMMARY}],
        },
        **extra,
    )
    return t


def failing_hooks(cwd: str) -> Transcript:
    """A session with two failed Bash calls: one the assistant takes up, one it silently routes around
    (the next command is about something else and nobody says a word about the failure)."""
    t = Transcript(cwd)
    t.user("Commit the Spotter module.")
    t.tool("Bash", {"command": "git commit -am 'Add Spotter'"}, HOOK_FAILURE, is_error=True)
    t.say(
        "The pre-commit hook blocked the commit: CREDO wants a @moduledoc in the Spotter module. Adding it."
    )
    t.tool("Edit", {"file_path": "lib/beads/spotter.ex"}, "The file has been updated.")
    t.user("Now check that it compiles.")
    t.tool(
        "Bash",
        {"command": "ls priv/static/assets"},
        "ls: cannot access 'priv/static/assets': No such file or directory\nExit code 2",
        is_error=True,
    )
    t.tool("Bash", {"command": "mix compile"}, "Compiling 12 files (.ex)\nGenerated beads app")
    t.say("It compiles cleanly.")
    t._line(
        "user",
        {"role": "user", "content": [{"type": "text", "text": f"Thanks.\n{REMINDER}"}]},
    )
    t._line("user", {"role": "user", "content": REMINDER})
    return t


def lay_out(projects: Path) -> tuple[Path, Path]:
    """Every shared real session in Claude Code's layout, the fasthooks session with a team-written
    compaction subagent beside it, and the team-written failing-hooks session; the two written paths."""
    for source in sorted(REAL_TRANSCRIPTS.rglob("*.jsonl")):
        if source != MAIN:
            project = projects / f"-{source.parent.name}"
            project.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, project / source.name)
    root = projects / "-workspace"
    (root / MAIN_SESSION / "subagents").mkdir(parents=True)
    shutil.copy(MAIN, root / f"{MAIN_SESSION}.jsonl")
    subagent = root / MAIN_SESSION / "subagents" / f"agent-{COMPACT_AGENT}.jsonl"
    compact = compaction_agent("/workspace").write(subagent)
    hooks = failing_hooks("/workspace")
    return compact, hooks.write(root / f"{hooks.session_id}.jsonl")


def reminder_blocks(path: Path) -> int:
    """`<system-reminder>` blocks in the user lines of a transcript, counted with plain json."""
    found = 0
    for raw in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        content = entry.get("message", {}).get("content") if entry.get("type") == "user" else None
        texts = [content] if isinstance(content, str) else []
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else block.get("text")
            texts += [inner] if isinstance(inner, str) else [b.get("text", "") for b in inner or []]
        found += sum(len(_REMINDER.findall(text or "")) for text in texts)
    return found


@pytest.mark.slow
async def test_backfill_of_the_shared_transcripts_keeps_harness_text_out_of_ideas(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    projects = tmp_path / "projects"
    compact, hooks = lay_out(projects)
    sessions = discover_sessions([projects])
    paths = [Path(p) for s in sessions for p in s.files]
    if True:
        synced = await sync_paths(store, paths, settings, vectors=False)
        report = await run_backfill(store, settings, sessions, resolve_model(settings, "offline"))
        assert report.index.failures == [] and await plan_batches(store.db) == []
        ideas = [
            dict(row)
            for row in await store.db.fetchall(
                "SELECT i.content, i.intent, i.source_line, f.path, m.kind, m.agent_id, m.role "
                "FROM ideas i JOIN transcript_files f ON f.id = i.source_file_id "
                "JOIN messages m ON m.file_id = i.source_file_id AND m.line = i.source_line"
            )
        ]
        runs = await store.db.fetchall("SELECT applied FROM index_runs WHERE outcome = 'ok'")

    assert len(ideas) > 50, "the real sessions still give their ideas"
    assert [i["content"] for i in ideas if "\\n" in i["content"]] == []
    assert [i["content"] for i in ideas if _TEMPLATE_TEXT.search(i["content"])] == []
    assert [i for i in ideas if i["kind"] in ("compact_summary", "meta", "command")] == []
    assert [i for i in ideas if i["path"] == str(compact.resolve())] == []

    from_hooks = [
        (i["source_line"], i["intent"], i["content"]) for i in ideas if i["path"] == str(hooks.resolve())
    ]
    assert (
        3,
        "problem",
        "Bash call failed: Pre-commit validation failed: [CREDO] lib/beads/spotter.ex:12 Modules should "
        "have a @moduledoc tag.",
    ) in from_hooks, "the failure the assistant took up, decoded and cut to its cause"
    assert not any("priv/static" in content for _l, _i, content in from_hooks), "nobody took that one up"

    sniffly = "d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
    torch = [(i["source_line"], i["content"]) for i in ideas if i["path"].endswith(sniffly)]
    assert (30, "Bash call failed: ModuleNotFoundError: No module named 'torch'") in torch, (
        "taken up by the next call, `pip install` of the requirements 'including torch'"
    )

    applied = [json.loads(r["applied"]) for r in runs]
    # Two compact summaries in the real sessions (fasthooks, entireio-cli) and the subagent's summary.
    assert sum(a["context_messages"] for a in applied) >= 3
    # Slash commands, caveats, meta lines, the compaction template, a reminder-only message.
    assert sum(a["noise_skipped"] for a in applied) >= 10
    removed = {Path(f.path).name: f.boilerplate_removed for f in synced.files}
    assert removed == {p.name: reminder_blocks(p) for p in paths} and sum(removed.values()) >= 80
    by_file = {f.path: f for f in synced.files}
    assert (by_file[str(compact)].noise_messages, by_file[str(compact)].context_messages) == (1, 1)


async def test_the_executor_rejects_a_new_idea_anchored_at_context(
    settings: Settings, tmp_path: Path
) -> None:
    """The safety net for a model that is not the offline one: a summary may activate, never originate."""
    compact, _hooks = lay_out(tmp_path / "projects")
    main = compact.parents[2] / f"{MAIN_SESSION}.jsonl"
    async with await Store.open(settings) as store:
        await sync_paths(store, [main, compact], settings, vectors=False)
        [planned] = await plan_batches(store.db, mode="continuous", message_tokens=200_000)
        roles = {(u.file_path, m.line): m.role for u in planned.batch.updates for m in u.messages}
        context = sorted(key for key, role in roles.items() if role == CONTEXT_ROLE)
        # The real compact summary (line 60) and the subagent's summary; not its template (noise).
        assert context == sorted([(str(main.resolve()), 60), (str(compact.resolve()), 2)])
        assert planned.context_messages == 2 and planned.noise_skipped >= 1

        def idea(path: Path, line: int, content: str) -> Idea:
            return Idea(
                session=MAIN_SESSION, source_file=str(path.resolve()), source_line=line, content=content,
                intent="todo",
            )  # fmt: skip

        result = IndexResult(
            ideas=[
                idea(compact, 2, "Optional Next Step: run the hook test suite again."),
                idea(main, 60, "Document the PostToolUse hook."),
                idea(main, 2, "Run ls -la in /workspace."),
            ]
        )
        stats = await apply(store.db, planned, result, run_record())
        stored = [r["content"] for r in await store.db.fetchall("SELECT content FROM ideas")]
        run = await store.db.fetchone(
            "SELECT rejected_items, applied FROM index_runs WHERE id = ?", (stats.run_id,)
        )
    assert stored == ["Run ls -la in /workspace."]
    assert run is not None
    rejected = json.loads(run["rejected_items"])
    assert [(r["item"]["source_line"], "is context" in r["reason"]) for r in rejected] == [
        (2, True),
        (60, True),
    ]
    assert json.loads(run["applied"])["context_messages"] == 2


def test_harness_text_in_real_transcripts_is_noise_or_context() -> None:
    """On the real sessions: the `<local-command-caveat>` wrapper is noise, a compact summary is
    context (and stays searchable), and no stored text keeps a reminder."""
    caveats = summaries = 0
    for path in sorted(REAL_TRANSCRIPTS.rglob("*.jsonl")):
        for message in normalise(read_from(path).entries):
            assert "<system-reminder>" not in message.text
            if "Caveat: The messages below were generated" in message.text:
                assert message.is_noise, (path.name, message.line)
                caveats += 1
            if message.kind == "compact_summary":
                assert message.is_context and not message.is_noise
                summaries += 1
    assert caveats >= 3 and summaries == 2


def test_a_reminder_only_line_is_kept_as_counted_noise(tmp_path: Path) -> None:
    path = failing_hooks("/workspace").write(tmp_path / "s.jsonl")
    messages = normalise(read_from(path).entries)
    last = messages[-1]
    assert (last.kind, last.is_noise, last.boilerplate_removed, last.text) == (
        "meta",
        True,
        1,
        "[harness boilerplate]",
    )
    thanks = messages[-2]
    assert (thanks.text, thanks.is_noise, thanks.boilerplate_removed) == ("Thanks.", False, 1)
