#!/usr/bin/env python3
"""Train the offline indexer's model on the labelled sessions of the `train` split and write its weights.

    .venv/bin/python scripts/train_indexer.py                      # rebuild cairn/agent/offline/weights.json
    .venv/bin/python scripts/train_indexer.py --without-project entireio-cli --out /tmp/no-entire.json
    .venv/bin/python scripts/train_indexer.py --check   # exit 1 unless a fresh run rebuilds the shipped file

Needs the `train` extra (scikit-learn) and the shared folder beside the repository (`../shared`, or
`--shared`): the labelled transcripts live there. Only sessions whose split is `train` in
`evals/datasets/splits.json` are read; `validation` and `cross` sessions are never seen, so the figures
`cairn eval sessions` reports on them are measured, not fitted. `--without-project` also leaves one
project out, for leave-one-project-out validation. The solver (L-BFGS) has no randomness and the
weights are rounded before they are written, so the same data gives the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "cairn" / "agent" / "offline" / "weights.json"
#: Inverse regularisation strength, chosen by 5-fold cross-validation over train sessions only.
C = 1.0
#: Messages chosen per 100 messages of a session (the threshold is set to give this rate on train).
RATE = 12.0
#: A message resolves a question when its `resolved` probability reaches this (balanced classes).
ANSWER_THRESHOLD = 0.5
MIN_DOCUMENT_FREQUENCY = 2
DIGITS = 5
SEED = 0


def _sessions(splits_file: Path, shared: Path, without: str | None) -> list:
    """The labelled sessions of the train split, less `without`'s (cairn.evals.splits checks them all)."""
    from cairn.evals.splits import load_sessions, load_splits, select

    splits = load_splits(splits_file, shared=shared)
    entries = [e for e in select(splits, ["train"]) if e.project != without]
    return load_sessions(splits, entries)


def train(splits: Path, shared: Path, without: str | None = None) -> dict:
    """The weights file's content, trained on the train split (less one project, if given)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    from cairn.agent.offline.classifier import KINDS
    from cairn.agent.offline.features import SessionFeatures
    from cairn.evals.labelled import labelled_session

    rows: list[dict[str, float]] = []
    targets: list[list[int]] = []
    talk: list[bool] = []
    keys = []
    for labelled in _sessions(splits, shared, without):
        session = labelled_session(labelled.name, labelled.path, labelled.truth)
        features = SessionFeatures(session.view)
        keys.append(labelled.name)
        for index, message in enumerate(session.view.messages):
            rows.append(features.of(index))
            kinds = session.kinds_at(message.line)
            targets.append([int(kind in kinds) for kind in KINDS])
            talk.append(message.role in ("user", "assistant"))
    frequency: dict[str, int] = {}
    for row in rows:
        for name in row:
            frequency[name] = frequency.get(name, 0) + 1
    vocabulary = sorted(name for name, n in frequency.items() if n >= MIN_DOCUMENT_FREQUENCY)
    column = {name: i for i, name in enumerate(vocabulary)}
    data, indices, indptr = [], [], [0]
    for row in rows:
        for name, value in sorted(row.items()):
            if name in column:
                indices.append(column[name])
                data.append(value)
        indptr.append(len(indices))
    x = csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=(len(rows), len(vocabulary)))
    y = np.array(targets)
    coefficients, intercepts = [], []
    for k in range(len(KINDS)):
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=5000, random_state=SEED)
        model.fit(x, y[:, k])
        coefficients.append(model.coef_[0])
        intercepts.append(float(model.intercept_[0]))
    weights = np.vstack(coefficients).T  # features x kinds
    scores = 1 / (1 + np.exp(-(x @ weights + np.array(intercepts))))
    best = scores.max(axis=1)[np.array(talk)]
    taken = min(len(best), round(RATE * len(rows) / 100))
    threshold = float(np.sort(best)[::-1][taken - 1]) if taken else 1.0
    features = {
        name: [round(float(w), DIGITS) for w in weights[i]]
        for i, name in enumerate(vocabulary)
        if np.abs(weights[i]).max() >= 10**-DIGITS
    }
    return {
        "about": "The offline indexer's model; written by scripts/train_indexer.py, do not edit.",
        "kinds": list(KINDS),
        "intercepts": [round(b, DIGITS) for b in intercepts],
        "threshold": round(threshold, DIGITS),
        "answer_threshold": ANSWER_THRESHOLD,
        "training": {
            "sessions": keys,
            "without_project": without,
            "messages": len(rows),
            "C": C,
            "rate_per_100_messages": RATE,
            "min_document_frequency": MIN_DOCUMENT_FREQUENCY,
            "seed": SEED,
        },
        "features": features,
    }


def render(weights: dict) -> str:
    return json.dumps(weights, sort_keys=True, separators=(",", ":")) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=Path, default=REPO / "evals" / "datasets" / "splits.json")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--without-project", help="leave this project's sessions out too")
    parser.add_argument("--out", type=Path, default=SHIPPED)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args(argv)
    text = render(train(args.splits, args.shared, args.without_project))
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        print(f"{args.out}: {'rebuilt byte for byte' if same else 'DIFFERS from a fresh training run'}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
