"""What an indexing run left in the store, read into plain rows, and scored field by field.

The scoring rules are in `cairn.evals.scoring` and never touch the store; this module is the SQL that
feeds them. Every row is attributed to a case through its transcript file (the eval copies each case's
transcript to its own file), so cases sharing a project or a session id still score apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.evals import scoring
from cairn.evals.dataset import Dataset
from cairn.evals.scoring import IdeaMap, Scores, StoredEntity, StoredIdea, StoredRelation
from cairn.store.store import Store


@dataclass
class StoreState:
    ideas: list[StoredIdea] = field(default_factory=list)
    relations: list[StoredRelation] = field(default_factory=list)
    span_starts: dict[str, list[int]] = field(default_factory=dict)
    entities: list[StoredEntity] = field(default_factory=list)
    # Per case: the labelled secrets found anywhere in the store.
    leaked: dict[str, list[str]] = field(default_factory=dict)


# Every stored text a secret could have reached: messages (and their tool calls), ideas, spans, entities.
_SECRET_PLACES = (
    "SELECT 1 FROM messages WHERE instr(text, :s) OR instr(tool_calls, :s) OR instr(tool_results, :s)",
    "SELECT 1 FROM ideas WHERE instr(content, :s) OR instr(coalesce(resolution, ''), :s)",
    "SELECT 1 FROM topic_spans WHERE instr(name, :s) OR instr(summary, :s)",
    "SELECT 1 FROM entities WHERE instr(canonical_name, :s)",
    "SELECT 1 FROM entity_aliases WHERE instr(alias, :s)",
)


async def _ideas(store: Store, case_of_file: dict[str, str]) -> list[StoredIdea]:
    rows = await store.db.fetchall(
        """
        SELECT i.id, f.path, i.source_line, i.intent, i.content, i.answered_at, i.answered_by,
               i.completed_at, i.resolved_line
        FROM ideas AS i LEFT JOIN transcript_files AS f ON f.id = i.source_file_id
        ORDER BY i.id
        """
    )
    return [
        StoredIdea(
            id=row["id"],
            case=case_of_file[row["path"]],
            line=row["source_line"],
            intent=row["intent"],
            content=row["content"],
            answered=row["answered_at"] is not None,
            answered_by=row["answered_by"],
            completed=row["completed_at"] is not None,
            resolved_line=row["resolved_line"],
        )
        for row in rows
        if row["path"] in case_of_file
    ]


async def _span_starts(store: Store, case_of_file: dict[str, str]) -> dict[str, list[int]]:
    rows = await store.db.fetchall(
        """
        SELECT f.path, s.start_line
        FROM topic_spans AS s
        JOIN transcript_files AS f ON f.id = coalesce(
            s.file_id, (SELECT t.id FROM transcript_files AS t WHERE t.session_id = s.session_id LIMIT 1))
        ORDER BY s.start_line, s.id
        """
    )
    starts: dict[str, list[int]] = {}
    for row in rows:
        if row["path"] in case_of_file:
            starts.setdefault(case_of_file[row["path"]], []).append(row["start_line"])
    return starts


async def _entities(store: Store, case_of_file: dict[str, str]) -> list[StoredEntity]:
    """Entities linked to at least one idea of the dataset, with every name they go by."""
    names: dict[int, list[str]] = {}
    for row in await store.db.fetchall("SELECT id, canonical_name FROM entities ORDER BY id"):
        names[row["id"]] = [row["canonical_name"]]
    for row in await store.db.fetchall("SELECT entity_id, alias FROM entity_aliases ORDER BY id"):
        names.setdefault(row["entity_id"], []).append(row["alias"])
    cases: dict[int, set[str]] = {}
    links = await store.db.fetchall(
        """
        SELECT DISTINCT ie.entity_id, f.path
        FROM idea_entities AS ie
        JOIN ideas AS i ON i.id = ie.idea_id
        JOIN transcript_files AS f ON f.id = i.source_file_id
        """
    )
    for row in links:
        if row["path"] in case_of_file:
            cases.setdefault(row["entity_id"], set()).add(case_of_file[row["path"]])
    return [
        StoredEntity(id=entity_id, names=tuple(names.get(entity_id, [])), cases=frozenset(found))
        for entity_id, found in sorted(cases.items())
    ]


async def _leaked(store: Store, dataset: Dataset) -> dict[str, list[str]]:
    query = "SELECT " + " OR ".join(f"EXISTS ({place})" for place in _SECRET_PLACES) + " AS found"
    leaked: dict[str, list[str]] = {}
    for case in dataset.cases:
        for secret in case.labels.secrets:
            if await store.db.scalar(query, {"s": secret}):
                leaked.setdefault(case.name, []).append(secret)
    return leaked


async def scoring_state(store: Store, case_of_file: dict[str, str], dataset: Dataset) -> StoreState:
    """Everything the scorers read, attributed to cases."""
    return StoreState(
        ideas=await _ideas(store, case_of_file),
        relations=[
            StoredRelation(row["from_idea_id"], row["to_idea_id"], row["relation_type"])
            for row in await store.db.fetchall(
                "SELECT from_idea_id, to_idea_id, relation_type FROM relations ORDER BY id"
            )
        ],
        span_starts=await _span_starts(store, case_of_file),
        entities=await _entities(store, case_of_file),
        leaked=await _leaked(store, dataset),
    )


def score(dataset: Dataset, state: StoreState, tolerance: int) -> tuple[Scores, IdeaMap]:
    """Every field's counts per case, and which stored idea matched which gold idea."""
    labels = {case.name: case.labels for case in dataset.cases}
    mapping = scoring.match_ideas(labels, state.ideas, tolerance)
    by_id = {idea.id: idea for idea in state.ideas}
    scores = Scores(
        fields={
            "ideas": scoring.score_ideas(labels, state.ideas, mapping),
            "relations": scoring.score_relations(labels, by_id, state.relations, mapping),
            "answered": scoring.score_answered(labels, state.ideas, mapping, tolerance),
            "completed": scoring.score_completed(labels, state.ideas, mapping, tolerance),
            "topics": scoring.score_topics(labels, state.span_starts),
            "entities": scoring.score_entities(labels, state.entities),
        },
        skip=scoring.ideas_at_skip_lines(labels, state.ideas),
        secrets={name: len(lab.secrets) for name, lab in labels.items()},
        leaked={name: state.leaked.get(name, []) for name in labels},
    )
    return scores, mapping
