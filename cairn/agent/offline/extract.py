"""Candidate ideas of one session: classified sentences, tool errors and TodoWrite items, deduplicated.

Per message at most one idea per intent (the most confident sentence wins) and at most three in all,
so a long assistant summary yields its few points instead of a dozen near-duplicates. Context is
kept sparse: one accomplishment ("I've created…") per turn, from the turn's last report. A hedged
hypothesis ("My first guess is…") is kept even when a later message refutes it: `inbatch` marks it
superseded by the correction, so the chain of reasoning stays findable while recall can leave the
guess out. A correction ("that guess was wrong", "Found the real cause.") takes the sentence after
it, which says what the cause is.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cairn.agent.offline.anchoring import anchored
from cairn.agent.offline.answers import OFFER, answers, offer_replies
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.cues import (
    CORRECTION,
    REALISED,
    Classified,
    capitalise,
    classify,
    heading_intent,
    is_ack,
    is_preamble,
    list_intent,
)
from cairn.agent.offline.deferred import put_off
from cairn.agent.offline.entities import (
    MAX_ENTITIES_PER_IDEA,
    Entity,
    entity_key,
    extract,
    resolve_file,
)
from cairn.agent.offline.gazetteer import find_technologies
from cairn.agent.offline.given_up import given_up
from cairn.agent.offline.learned import learned_candidates
from cairn.agent.offline.naming import named_in_code
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import MAX_CONTENT_CHARS, Segment, jaccard, overlap, shorten, term_set
from cairn.agent.offline.tool_fixes import tool_fixes
from cairn.agent.schema import DEFAULT_IMPORTANCE, Intent

MAX_IDEAS_PER_MESSAGE = 3
MAX_TODO_WRITE_IDEAS = 5
# (overlap coefficient, Jaccard) at which two ideas of one intent say the same thing. Reports of work
# done share a project's vocabulary ("TODO app", "TypeScript") without repeating each other.
DUPLICATE = {"context": (0.75, 0.5)}
DUPLICATE_DEFAULT = (0.6, 0.35)
_PRONOUN_START = re.compile(r"^(?:it|this|that|these|those|they|which)\b", re.IGNORECASE)
_NEXT_HEADING = re.compile(
    r"\b(?:next steps?|todos?|to-dos?|follow[- ]ups?|remaining (?:work|tasks|items)|future work|open items|"
    r"action items)\b(?![-\w])",
    re.IGNORECASE,
)
_TOOL_NOISE = re.compile(
    r"<tool_use_error>|haven't granted|requested permissions|has not been read yet|No files found|"
    r"doesn't want to proceed|was rejected|Interrupted by user|user denied",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"\b(?:\w*Error|\w*Exception|FAILED|failed|fatal|not found|No such file|denied|cannot|can't|unable)\b",
    re.IGNORECASE,
)
_EXIT_CODE = re.compile(r"^\s*Exit code \d+\s*$")
# Escapes left in tool output that quotes JSON (a hook's `{"reason": "…\\n…"}`, a serialised error).
_ESCAPE = re.compile(r"\\([nrt\"\\])")
_ESCAPED = {"n": "\n", "r": "\n", "t": " ", '"': '"', "\\": "\\"}
# A hook's wrapper around the message that matters: `PreToolUse:Bash hook error: [cmd]: …`.
_HOOK_WRAPPER = re.compile(
    r"^\w+(?::\w+)? hook (?:blocking )?error(?: from command)?:\s*(?:\[[^\]]*\]:?\s*)?", re.IGNORECASE
)
_JSON_REASON = re.compile(r'"(?:reason|message|error|stopReason)"\s*:\s*"((?:[^"\\]|\\.)+)"')
# Words every failure shares: a later command about "files" or "errors" does not act on this one.
_GENERIC_FAILURE_TERMS = term_set(
    "error errors failed failure fatal found not such file files directory command code exit line "
    "cannot unable denied exception module named no"
)
# What a reply says when it turns to a failure: the failure is then part of the conversation.
_TAKEN_UP = re.compile(
    r"\b(?:error|errors|fail\w*|issue|problem|wrong|broken|fix\w*|missing|not found|doesn'?t exist|"
    r"does not exist|install\w*|cannot|can'?t|unable|because|caus\w*|instead)\b",
    re.IGNORECASE,
)
_ATTACH_FILES = frozenset({"decision", "solution", "conclusion", "context"})


def _with_neighbours(chosen: Segment, prose: list[Segment], content: str, labelled: bool) -> str:
    """`content` made self-contained: a short or pronoun-led sentence takes its neighbour in the paragraph."""
    if labelled:
        # "Plan: one auth class that … Access tokens live 15 minutes." — a labelled statement often
        # goes on in the next sentence of its paragraph.
        rest = [s for s in prose if s.paragraph == chosen.paragraph and s.index == chosen.index + 1]
        if rest and len(content) < 160 and not rest[0].text.endswith("?") and not is_preamble(rest[0].text):
            joined = f"{content} {rest[0].text}"
            return joined if len(joined) <= MAX_CONTENT_CHARS else content
        return content
    if len(content) >= 50 and not _PRONOUN_START.match(content):
        return content
    same = [s for s in prose if s.paragraph == chosen.paragraph]
    before = [s for s in same if s.index < chosen.index]
    after = [s for s in same if s.index > chosen.index]
    if before and not is_ack(before[-1].text) and not is_preamble(before[-1].text):
        joined = f"{before[-1].text} {content}"
    elif (
        after
        and len(content) < 50
        and not after[0].text.endswith("?")
        and not is_preamble(after[0].text)
        and not is_ack(after[0].text)
    ):
        joined = f"{content} {after[0].text}"
    else:
        return content
    return joined if len(joined) <= MAX_CONTENT_CHARS else content


# The last words of an idea, then (after its colon or full stop) the fenced code block it introduces.
_LEAD_IN_WORDS = 3
CODE_CHARS = 160


def with_code(content: str, text: str) -> str:
    """`content` with the code block it introduces: "The fix is to rebuild the worktree's index. The
    simplest way:" is followed in its message by ```git read-tree HEAD```, and without that command the
    idea keeps the lead-in and loses what it leads to. Only a block right after the idea's last words
    (a colon or a full stop between) is taken, whitespace collapsed, at most `CODE_CHARS` characters."""
    words = re.findall(r"\w+", content)[-_LEAD_IN_WORDS:]
    if len(words) < _LEAD_IN_WORDS or "```" not in text:
        return content
    gap = r"[\W_]{0,6}?"  # markdown marks, quotes, a space between the words
    pattern = gap.join(re.escape(word) for word in words) + r"[*_`'\")]*[.:]?\s*```[\w+-]*\n(?P<code>.*?)```"
    found = re.search(pattern, text, re.DOTALL)
    if found is None or not found["code"].strip():
        return content
    code = " ".join(found["code"].split())[:CODE_CHARS]
    joined = f"{content.rstrip('.:')}: `{code}`"
    return joined if len(joined) <= MAX_CONTENT_CHARS else content


def _with_cause(chosen: Segment, prose: list[Segment], content: str) -> str:
    """A correction ("so my memo hypothesis was wrong", "Found the real cause.") with the sentence
    after it, which says what the cause really is: the correction alone holds no knowledge."""
    after = [s for s in prose if s.index > chosen.index and not is_preamble(s.text)]
    if not after or after[0].text.endswith("?"):
        return content
    joined = f"{content} {after[0].text}"
    return joined if len(joined) <= MAX_CONTENT_CHARS else content


def _join_items(items: list[str]) -> str:
    """A list's items as one text, each ended so the next does not run on ("… data; Idempotent — …")."""
    return " ".join(item if item[-1:] in ".!?;:" else f"{item};" for item in items).rstrip(";")


def _labelled_lists(prose: list[Segment]) -> dict[int, tuple[Intent, list[str]]]:
    """Bullets under a label ("Decision:", "Fix:", "Plan:" as a heading or a line of its own), by
    segment index: the label's intent and the text of every bullet of that list."""
    lists: dict[int, tuple[Intent, list[str]]] = {}
    current: tuple[Intent, list[str]] | None = None
    heading = ""
    for segment in prose:
        if not segment.bullet:
            # "Decision:" on a line of its own, or a sentence that introduces its list ("Here's the flow:").
            said = heading_intent(segment.text)
            if said is None and segment.text.endswith(":"):
                said = list_intent(segment.text)
            current = (said, []) if said else None
            heading = segment.heading
            continue
        if segment.heading != heading:  # a new heading ends the list above it
            current, heading = None, segment.heading
        under = list_intent(segment.heading)
        if current is None and under:
            current = (under, [])
        if current is not None:
            current[1].append(segment.text)
            lists[segment.index] = current
    return lists


def _message_candidates(view: SessionView, message: Message, after_problem: bool) -> list[Candidate]:
    """The ideas of one message: its most confident sentence per intent, and bullets under "Next steps"."""
    best: dict[Intent, tuple[Classified, Segment]] = {}
    todos_under_heading: list[tuple[Classified, Segment]] = []
    role = "assistant" if message.role == "assistant" else "user"
    lists = _labelled_lists(message.prose)
    for segment in message.prose:
        if heading_intent(segment.text) and not segment.bullet:
            continue  # a bare "Fix:" line: its list carries the idea
        found = classify(segment.text, role, after_problem=after_problem)
        listed = lists.get(segment.index)
        if listed and (found is None or found.intent in ("context", "problem", listed[0])):
            # "Decision:" / "Fix:" above a list: the list, all of it, is what was decided or done.
            intent, items = listed
            found = Classified(
                intent, 0.85, DEFAULT_IMPORTANCE[intent], capitalise(_join_items(items)), labelled=True
            )
        if (
            segment.bullet
            and _NEXT_HEADING.search(segment.heading)
            and (found is None or found.intent == "context")
        ):
            todo = Classified("todo", 0.7, DEFAULT_IMPORTANCE["todo"], capitalise(segment.text))
            todos_under_heading.append((todo, segment))
            continue
        if found is None:
            continue
        held = best.get(found.intent)
        if held is None or found.confidence > held[0].confidence:
            best[found.intent] = (found, segment)
    ranked = sorted(best.values(), key=lambda item: (-item[0].importance, item[1].index))
    if len(ranked) > 1:
        ranked = [item for item in ranked if item[0].intent != "context"]
    chosen = ranked[:MAX_IDEAS_PER_MESSAGE] + todos_under_heading[: max(0, 3 - len(ranked))]
    out: list[Candidate] = []
    for found, segment in sorted(chosen, key=lambda item: item[1].index):
        if found.intent == "conclusion" and REALISED.match(segment.text):
            content = _with_cause(segment, message.prose, found.content)
            if content == found.content:
                continue  # "I see the problem!" with nothing after it says nothing
        elif found.intent == "conclusion" and (found.refutation or CORRECTION.search(segment.text)):
            content = _with_cause(segment, message.prose, found.content)
        elif found.intent == "problem" and role == "user" and (pasted := _pasted_error(message.text)):
            content = pasted
        else:
            content = _with_neighbours(segment, message.prose, found.content, found.labelled)
        content = with_code(content, message.text)
        out.append(
            Candidate(
                view.session,
                view.source_file,
                message.line,
                found.intent,
                shorten(content),
                found.confidence,
                found.importance,
                message.turn,
                extract(content, view.known_files),
                hypothesis=found.hypothesis,
                refutation=found.refutation,
                supersession=found.supersession,
                labelled=found.labelled,
            )
        )
    return out


def decode_escapes(text: str) -> str:
    """`text` with the escape sequences of quoted JSON (`\\n`, `\\t`, `\\"`) turned into what they
    stand for: a tool error that quotes a hook's JSON reply must not become an idea reading
    "failed:\\n\\n[CREDO]"."""
    return _ESCAPE.sub(lambda m: _ESCAPED[m.group(1)], text) if "\\" in text else text


# A failure line this short says only that something failed ("Build error occurred").
_BARE_FAILURE_WORDS = 4


def failure_cause(output: str) -> str | None:
    """The line of a failed tool call's output that says what went wrong, or None.

    Escapes are decoded first and a hook's wrapper (`PreToolUse:Bash hook error: [cmd]:`) and JSON
    envelope (`{"reason": "…"}`) are peeled off, so the cause is the hook's own words. In a Python
    traceback the last error line is the cause; elsewhere the first. A line that only introduces
    what follows ("Pre-commit validation failed:") takes the next line with it.
    """
    text = decode_escapes(output.strip())
    text = _HOOK_WRAPPER.sub("", text)
    if text.startswith("{") and (reason := _JSON_REASON.search(text)):
        text = decode_escapes(reason.group(1))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _EXIT_CODE.match(ln)]
    hits = [i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln)]
    if not hits:
        return None
    at = hits[-1] if any(ln.startswith("Traceback") for ln in lines) else hits[0]
    detail = lines[at].lstrip("> -*#|").strip()
    bare = len(detail.split()) <= _BARE_FAILURE_WORDS
    if at + 1 < len(lines) and (detail.endswith(":") or (bare and _ERROR_LINE.search(lines[at + 1]))):
        # "Pre-commit validation failed:" or "Build error occurred" then "[TypeError: generate is not a
        # function]": the next line says what.
        detail = f"{detail} {lines[at + 1].lstrip('> -*#|').strip()}"
    return detail.replace("\\n", " ")


# A person's report longer than this, over several lines, holds pasted output.
PASTED_CHARS = 200
_LEAD_END = re.compile(r"[\[`:(]|\d")


def _pasted_error(text: str) -> str | None:
    """A person's problem report that pastes a command's output ("now I'm getting [main a2c0e9c] …
    remote: Permission … denied … error: 403") as their lead-in and the line that says what went
    wrong, or None when the report is short or names no failure: the head of a paste is rarely it."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if len(text) < PASTED_CHARS or len(lines) < 3 or (detail := failure_cause(text)) is None:
        return None
    if detail in lines[0]:
        return None
    lead = _LEAD_END.split(lines[0], maxsplit=1)[0].strip(" ,-")
    return capitalise(f"{lead}: {detail}" if len(lead.split()) >= 2 else detail)


def _taken_up(view: SessionView, message: Message, detail: str) -> bool:
    """Whether the conversation turns to a failed tool call. The next message of its turn that is not
    a tool result decides: it takes the failure up when its words name the failure or a fix ("the
    hook blocked the commit", "Adding it") or share a word of the cause, or when its tool call acts on
    a word of the cause (`pip install … torch` after "No module named 'torch'").

    A failure the assistant routes around without a word (a different command about something else)
    is the tool's noise, not a problem anyone had: it stays in the message store for search but
    makes no idea.
    """
    cause = term_set(detail) - _GENERIC_FAILURE_TERMS
    after = False
    for other in view.messages:
        if other is message:
            after = True
            continue
        if not after or other.role == "tool":
            continue
        if other.turn != message.turn or other.role not in ("user", "assistant"):
            return False
        prose = " ".join(s.text for s in other.prose)
        if prose and (_TAKEN_UP.search(prose) or cause & term_set(prose)):
            return True
        return bool(cause & term_set(other.text))
    return False


def _tool_error(view: SessionView, message: Message) -> Candidate | None:
    """A problem from a failed tool call the conversation takes up, unless the failure is the
    harness's own (permissions, misuse); its content is the decoded line that says the cause."""
    output = message.tool_output.strip()
    if not message.tool_error or not output or _TOOL_NOISE.search(output):
        return None
    detail = failure_cause(output)
    if detail is None or len(term_set(detail)) < 2 or not _taken_up(view, message, detail):
        return None
    content = shorten(f"{message.tool_name or 'A tool'} call failed: {detail}", 240)
    return Candidate(
        view.session,
        view.source_file,
        message.line,
        "problem",
        content,
        0.6,
        round(DEFAULT_IMPORTANCE["problem"] - 0.2, 2),
        message.turn,
        extract(detail, view.known_files),
        origin="tool_error",
    )


# The assistant asking the person to choose ("Which way do you want to go?"), and the options it laid
# out as headings ("**Option 1: Fine-grained PAT (quick)**").
_CHOICE_ASKED = re.compile(
    r"\b(?:which|what) (?:way|one|option|approach)\b|\bwhich of\b|\bprefer\b|\w \bor\b [^?]+\?$", re.I
)
_OPTION_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?\*{0,2}(?P<name>(?:option|approach|choice)\b[^*\n]{0,80}?)"
    r"\*{0,2}[ \t]*:?[ \t]*$",
    re.I | re.M,
)
MAX_OPTIONS = 4


def _closing_choice(view: SessionView) -> Candidate | None:
    """The choice the batch ends on: the assistant's last words ask the person to choose and nobody
    has answered yet. It is the open question a teammate would pass on ("Which way do you want to go?
    (Option 1: Fine-grained PAT; Option 2: GitHub App)"), and it reads only with its options. A later
    batch that brings the answer settles it as any question is settled; SessionStart lists it only
    while it is the last thing the session said (`cairn.search.open_items.still_open`)."""
    spoken = [m for m in view.messages if m.role in ("user", "assistant") and m.prose]
    if not spoken or spoken[-1].role != "assistant":
        return None
    last = spoken[-1]
    question = last.prose[-1].text
    if not question.endswith("?") or OFFER.match(question) or not _CHOICE_ASKED.search(question):
        return None
    options = [m["name"].strip(" :") for m in _OPTION_HEADING.finditer(last.text)][:MAX_OPTIONS]
    content = question + (f" ({'; '.join(options)})" if options else "")
    if len(term_set(content)) < 3:
        return None  # "Which one?" with nothing to choose from says nothing
    return Candidate(
        view.session,
        view.source_file,
        last.line,
        "question",
        shorten(content),
        0.75,
        DEFAULT_IMPORTANCE["question"],
        last.turn,
        extract(content, view.known_files),
    )


def _todo_write_candidates(view: SessionView) -> list[Candidate]:
    """Open TodoWrite items: the ones still not completed at the end of the batch."""
    first: dict[str, tuple[int, int, str]] = {}
    status: dict[str, str] = {}
    for message in view.messages:
        for item in message.todo_items:
            key = item.content.lower()
            first.setdefault(key, (item.line, message.turn, item.content))
            status[key] = item.status
    out: list[Candidate] = []
    for key, (line, turn, content) in first.items():
        if status[key] != "completed" and len(out) < MAX_TODO_WRITE_IDEAS:
            text = shorten(capitalise(content))
            out.append(
                Candidate(
                    view.session,
                    view.source_file,
                    line,
                    "todo",
                    text,
                    0.8,
                    DEFAULT_IMPORTANCE["todo"],
                    turn,
                    extract(text, view.known_files),
                    origin="todo_write",
                )
            )
    return out


WRITTEN_FILES_PER_IDEA = 1


def _attach_written_files(view: SessionView, candidates: list[Candidate]) -> None:
    """Give decisions, solutions, conclusions and reports the file written in their turn nearest to
    them: the one the idea is about; a turn's other edits are its means (helpers, manifests, tests)."""
    written: dict[int, list[tuple[int, str]]] = {}
    for message in view.messages:
        for path in message.written:
            written.setdefault(message.turn, []).append(
                (message.line, resolve_file(path, view.known_files, view.root))
            )
    for candidate in candidates:
        if candidate.intent not in _ATTACH_FILES or candidate.turn not in written:
            continue
        nearest = sorted(written[candidate.turn], key=lambda item: (abs(item[0] - candidate.line), item[0]))
        have = {entity_key(e.name) for e in candidate.entities}
        added = 0
        for _line, name in nearest:
            if added == WRITTEN_FILES_PER_IDEA or len(candidate.entities) >= MAX_ENTITIES_PER_IDEA:
                break
            if entity_key(name) not in have:
                candidate.entities.append(Entity(name, "file"))
                have.add(entity_key(name))
                added += 1


MAX_CONCEPTS_PER_IDEA = 2


def project_name(view: SessionView) -> str | None:
    """The project's own name: its directory's, when the conversation names it outside a path or the
    directory sits right in a home directory (`/home/dev/ledger-api`, `/Users/ana/shop`)."""
    if not view.root:
        return None
    name = view.root.rsplit("/", 1)[-1]
    in_home = re.fullmatch(r"/(?:home|Users)/[^/]+/[^/]+|/root/[^/]+", view.root) is not None
    bare = re.compile(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])")
    named = any(
        bare.search(s.text) for m in view.messages if m.role in ("user", "assistant") for s in m.prose
    )
    return name if len(name) >= 3 and (in_home or named) else None


def _attach_session_entities(view: SessionView, candidates: list[Candidate]) -> None:
    """Link what the conversation works with to the ideas near where it is named: the project (to the
    first idea) and each technology its prose names (to the first idea at or after its first mention,
    else the last before); drop code names the conversation itself never writes. An idea's own text
    rarely repeats "Rust" or "Kubernetes", yet the session is about them; text support is still
    required, so nothing is linked that no message names."""
    if not candidates:
        return
    said = " ".join(s.text for m in view.messages if m.role in ("user", "assistant") for s in m.prose)
    for candidate in candidates:
        # A code name only a tool's output shows (an exception class in a traceback) is not what the
        # conversation is about.
        # A dotted path (`sa.false`, `backends.cudnn.benchmark`) is a place in code, not a thing.
        grounded = [
            e for e in candidate.entities if e.type != "concept" or (e.name in said and "." not in e.name)
        ]
        # An idea that lists code names ("ADMIN_USER / ADMIN_PASSWORD / LEDGER_ADMIN_USER …") is about
        # the first of them or two; the rest are its wording.
        concepts = [e for e in grounded if e.type == "concept"][:MAX_CONCEPTS_PER_IDEA]
        candidate.entities = [e for e in grounded if e.type != "concept" or e in concepts]
    first_named: dict[str, int] = {}
    for message in view.messages:
        if message.role in ("user", "assistant"):
            for tech in find_technologies(" ".join(s.text for s in message.prose)):
                first_named.setdefault(tech, message.line)
    wanted: list[tuple[int, Entity]] = [(line, Entity(t, "technology")) for t, line in first_named.items()]
    wanted += named_in_code(view)
    project = project_name(view)
    if project:
        wanted.insert(0, (candidates[0].line, Entity(project, "project")))
    for line, entity in wanted:
        if any(entity_key(e.name) == entity_key(entity.name) for c in candidates for e in c.entities):
            continue
        after = [c for c in candidates if c.line >= line]
        target = after[0] if after else candidates[-1]
        target.entities.append(entity)
    _one_name_per_thing(candidates)


def _one_name_per_thing(candidates: list[Candidate]) -> None:
    """One entity for one thing across the session's ideas: a class or component and the file named
    after it (`TrailDetailFragment`, `TrailDetailFragment.kt`) are the class, as the prose calls it;
    a technology whose name
    starts a longer one the session also names ("GitHub" beside "GitHub Actions") is the longer one."""
    linked = [e for c in candidates for e in c.entities]
    code_names = {e.name.removesuffix("()"): e for e in linked if e.type == "concept"}
    technologies = {e.name for e in linked if e.type == "technology"}
    longer = {
        name: other
        for name in technologies
        for other in technologies
        if other != name and other.startswith(name + " ")
    }
    for candidate in candidates:
        kept: list[Entity] = []
        for entity in candidate.entities:
            if entity.type == "file":
                entity = code_names.get(entity.name.rsplit("/", 1)[-1].split(".", 1)[0], entity)
            elif entity.type == "technology" and entity.name in longer:
                entity = Entity(longer[entity.name], "technology")
            if entity not in kept:
                kept.append(entity)
        candidate.entities = kept


def is_duplicate(intent: str, a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two ideas of `intent` with these terms say the same thing."""
    least_overlap, least_jaccard = DUPLICATE.get(intent, DUPLICATE_DEFAULT)
    return len(a & b) >= 3 and overlap(a, b) >= least_overlap and jaccard(a, b) >= least_jaccard


_ORIGIN_RANK = {"todo_write": 1, "tool_error": 0}  # any other origin: 2, what someone said


def _rank(candidate: Candidate) -> tuple[int, int]:
    """Which of two duplicates stays: what someone said over tool output, then the fuller statement."""
    return _ORIGIN_RANK.get(candidate.origin, 2), len(candidate.terms)


def _deduplicate(candidates: list[Candidate]) -> list[Candidate]:
    """Drop an idea that says what another idea of the same intent already says (the fuller one stays)."""
    kept: list[Candidate] = []
    for candidate in candidates:
        if candidate.supersession or candidate.refutation:  # a change of mind is never a repetition
            kept.append(candidate)
            continue
        terms = candidate.terms
        twin = next(
            (
                k
                for k in kept
                if k.intent == candidate.intent
                and len(terms & k.terms) >= 3
                and is_duplicate(candidate.intent, terms, k.terms)
            ),
            None,
        )
        if twin is None:
            kept.append(candidate)
        elif _rank(candidate) > _rank(twin):
            kept[kept.index(twin)] = candidate
    return sorted(kept, key=lambda c: (c.line, c.origin))


def _answer_candidates(view: SessionView, candidates: list[Candidate]) -> list[Candidate]:
    """The assistant's answer to each of the person's questions and the person's decision on each of
    the assistant's offers, when no idea of that message says it already."""
    said: dict[int, list[str]] = {}
    for candidate in candidates:
        said.setdefault(candidate.line, []).append(candidate.content)
    asked = [(c.line, c.turn, c.content) for c in candidates if c.intent == "question"]
    return [
        Candidate(
            view.session,
            view.source_file,
            answer.message.line,
            answer.intent,
            answer.content,
            0.7,
            # A refusal is a decision about what not to do: it weighs as much as one.
            round(DEFAULT_IMPORTANCE["decision" if answer.declined else answer.intent] - 0.1, 2),
            answer.message.turn,
            extract(answer.content, view.known_files),
            origin="declined" if answer.declined else "answer",
        )
        for answer in [*answers(view, asked, said), *offer_replies(view, said)]
    ]


# A learned idea this close to an idea the rules found says the same statement.
LEARNED_NEAR_LINES = 3


def _learned_beside(learned: list[Candidate], found: list[Candidate]) -> list[Candidate]:
    """The learned model's ideas where the rules found nothing near: what was said in words no rule knows."""
    lines = [c.line for c in found]
    return [c for c in learned if all(abs(c.line - line) > LEARNED_NEAR_LINES for line in lines)]


def session_candidates(view: SessionView, *, open_problem: bool = False) -> list[Candidate]:
    """Every candidate idea of one session, in line order."""
    candidates: list[Candidate] = []
    after_problem = open_problem
    reports: dict[int, Candidate] = {}
    tool_problem_turns: set[int] = set()
    causes: dict[int, str] = {}
    for message in view.messages:
        if message.role == "tool":
            if message.tool_error and (cause := failure_cause(message.tool_output)) is not None:
                causes[message.line] = cause
            problem = _tool_error(view, message) if message.turn not in tool_problem_turns else None
            if problem is not None:
                tool_problem_turns.add(message.turn)
                candidates.append(problem)
                after_problem = True
            continue
        if message.role not in ("user", "assistant"):
            continue
        for candidate in _message_candidates(view, message, after_problem):
            if candidate.intent == "context":
                if len(candidate.terms) >= 4:
                    reports[candidate.turn] = candidate
                continue
            if candidate.intent == "problem":
                after_problem = True
            candidates.append(candidate)
    candidates.extend(_answer_candidates(view, candidates))
    candidates.extend(_learned_beside(learned_candidates(view), candidates))
    candidates.extend(tool_fixes(view, candidates, causes))
    candidates.extend(reports.values())
    candidates.extend(_todo_write_candidates(view))
    if (choice := _closing_choice(view)) is not None:
        candidates.append(choice)
    said = {m.line: m.timestamp for m in view.messages}
    ordered = anchored(view, put_off(view, given_up(view, sorted(candidates, key=lambda c: c.line), causes)))
    candidates = [replace(c, entities=list(c.entities), at=said.get(c.line)) for c in ordered]
    _attach_written_files(view, candidates)
    kept = _deduplicate(candidates)
    _attach_session_entities(view, kept)
    return kept
