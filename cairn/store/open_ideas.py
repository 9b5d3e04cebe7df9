"""What "open" means — the one definition every face, the recall hooks and the indexing agent's tools use.

An idea is **open** when a person or the coding agent may want to pick it up where the work stopped:

1. It can be open at all: a question or problem not answered, a todo not completed; not declined by the
   person (`declined_at`), not superseded (it was replaced, not left open), not contradicted by a later
   idea (the plan was dropped as wrong).
2. Its session left it open. An unanswered item raised before the session's last prompt from the
   person was followed by more work — the person replied, the agent went on — and was answered, done
   or dropped in the turns after, whether or not the indexer saw where. So an item is left open when
   - the person reopened it (`cairn.lifecycle.correct`), whatever else holds; or
   - it is `given_up` (`ideas.state`): a failure retried and never passed, wherever it happened; or,
     unless it was taken from a tool's output (a failed tool call is a step of the work, read and
     dealt with by the next turn),
   - it is `deferred` (`ideas.state`): put off on purpose ("in a separate PR", "log an issue"),
     whenever in the session that was said; or
   - it was raised after the session's last prompt from the person (or the session has none): the
     state the session ended in.

The indexing agent's `get_open_*` tools list rule 1 only (`UNRESOLVED_QUESTION`, `UNRESOLVED_TODO`):
they show the agent what a new batch may still answer or complete, and an item raised before a prompt
is often answered after it ("why is X slow?" — "ok, also add Y" — "X was slow because …"). Rule 2 is
a guess about turns nobody linked; the agent is there to link them.

Deferred and given-up are data the indexer writes (`cairn.agent.schema.Idea.state`), never words in
an idea's text that a reader parses back. The rule is SQL on `ideas i`, so a list and its count come
from the same predicate, and nothing is filtered after a `LIMIT`.
"""

from __future__ import annotations

#: The kind of the message the idea was said in (`tool_result` for a tool's output).
SOURCE_KIND = """(
    SELECT m.kind FROM messages m WHERE m.file_id = i.source_file_id
        AND m.line <= i.source_line AND m.end_line >= i.source_line
    ORDER BY m.line DESC LIMIT 1)"""

#: The line of the last prompt from the person in the idea's transcript file
#: (the `messages_prompts` index answers it without reading the file's other messages).
LAST_PROMPT_LINE = """(
    SELECT max(m.line) FROM messages m WHERE m.file_id = i.source_file_id AND m.role = 'user'
        AND m.kind = 'text' AND m.is_sidechain = 0 AND m.is_noise = 0)"""

#: The person said it is open again (a correction kept by the idea's place and words).
REOPENED = """EXISTS (
    SELECT 1 FROM idea_corrections c WHERE c.source_file_id = i.source_file_id
        AND c.source_line = i.source_line AND c.content_hash = i.content_hash AND c.state = 'open')"""

#: Rule 1: unresolved — not answered, done, declined, superseded or contradicted.
UNRESOLVED = """(
    ((i.intent IN ('question', 'problem') AND i.answered_at IS NULL)
        OR (i.intent = 'todo' AND i.completed_at IS NULL))
    AND i.declined_at IS NULL AND i.superseded_by IS NULL
    AND NOT EXISTS (
        SELECT 1 FROM relations r WHERE r.to_idea_id = i.id AND r.relation_type = 'contradicts'))"""

#: Rule 2: the session left it open. Never NULL, so it can be selected as a 0/1 column too.
LEFT_OPEN = f"""(
    {REOPENED}
    OR i.state IS 'given_up'
    OR ({SOURCE_KIND} IS NOT 'tool_result'
        AND (i.state IS 'deferred'
             OR coalesce(i.source_line, 0) > coalesce({LAST_PROMPT_LINE}, -1))))"""

#: Open, on `ideas i`: the predicate every reader filters and counts with.
OPEN = f"({UNRESOLVED} AND {LEFT_OPEN})"
#: Open questions and problems.
OPEN_QUESTION = f"(i.intent IN ('question', 'problem') AND {OPEN})"
#: Open todos.
OPEN_TODO = f"(i.intent = 'todo' AND {OPEN})"
#: Questions and problems, and todos, that nothing resolved yet: what the indexing agent may resolve.
UNRESOLVED_QUESTION = f"(i.intent IN ('question', 'problem') AND {UNRESOLVED})"
UNRESOLVED_TODO = f"(i.intent = 'todo' AND {UNRESOLVED})"
