#!/usr/bin/env python3
"""Check a QA set's evidence lines against its transcripts, and print them for a human re-read.

Usage: scripts/check_qa.py QA.json --transcripts DIR [--quiet]

Why: a QA item is only as good as its evidence. `cairn eval qa` scores a search by whether it surfaces the
cited lines, so a line number that is off by one, points at a sidechain or a progress record, or names a
line that says nothing of the answer silently turns a good search into a miss (or a bad one into a hit).
`cairn.evals.qa.load_qa` only checks that a line is inside its file; this checks what the line says.

For every evidence line it checks that the line exists, parses as JSON, is a `user` or `assistant` entry and
not a sidechain one, and that its extracted text — user text, assistant text blocks, `tool_use` input and
`tool_result` content (never thinking) — contains at least one key term of the answer (case-insensitive).
Key terms are the answer's identifier-like tokens (with a digit, `_`, `.`, `/`, `-` or an inner capital)
and its longer words that are not common English. Failures are printed with `!!` and make the exit status 1.
Unless `--quiet`, every question is printed with its answer and the first 300 characters of each evidence
line, with the key terms that line matched, so the whole set can be re-read by eye.
The text is the one `cairn eval qa`'s BM25 baseline reads (`cairn.evals.benchmark.line_text`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from cairn.evals.benchmark import line_text

SHOWN = 300
_COMMON = """
about above after again against also although always among another anything around because been
before being below between both cannot could does doing done down during each either else every
first from further have having here however into itself just later least less made make many might
more most much must need needed never none nothing once only other others over same several should
since some something still such than that their them then there these they thing things this those
though through thus until upon used uses using very want wanted were what when where whether which
while whom whose will with within without would your instead because already itself rather
"""
STOPWORDS = frozenset(_COMMON.split())
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:#@+-]*[A-Za-z0-9_]|[A-Za-z0-9]")
_IDENTIFIER = re.compile(r"[0-9_./]|-\w|\w[a-z][A-Z]")


def key_terms(answer: str) -> list[str]:
    """The answer's terms worth finding in an evidence line: identifiers first, then longer plain words."""
    identifiers: list[str] = []
    words: list[str] = []
    for token in _TOKEN.findall(answer):
        lowered = token.lower().strip(".:-/")
        if not lowered:
            continue
        if _IDENTIFIER.search(token) and len(lowered) >= 3:
            identifiers.append(lowered)
        elif len(lowered) >= 5 and lowered not in STOPWORDS:
            words.append(lowered)
    return list(dict.fromkeys(identifiers + words))


def check_line(lines: list[bytes], number: int, terms: list[str]) -> tuple[str, list[str], str | None]:
    """The line's text, the key terms it contains and, when it fails, why."""
    if not 1 <= number <= len(lines):
        return "", [], f"line {number} is past the end ({len(lines)} lines)"
    try:
        record = json.loads(lines[number - 1])
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "", [], f"line {number} is not JSON"
    if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
        kind = record.get("type") if isinstance(record, dict) else type(record).__name__
        return "", [], f"line {number} is a {kind!r} record, not a user or assistant entry"
    if record.get("isSidechain"):
        return "", [], f"line {number} is a sidechain entry"
    text = line_text(lines[number - 1])
    lowered = text.lower()
    found = [term for term in terms if term in lowered]
    if not found:
        return text, [], f"line {number} contains none of the answer's key terms"
    return text, found, None


def check(qa_path: Path, transcripts: Path, quiet: bool) -> int:
    items = json.loads(qa_path.read_text(encoding="utf-8"))
    cache: dict[str, list[bytes]] = {}
    failures = 0
    for item in items:
        terms = key_terms(item["answer"])
        if not quiet:
            print(f"=== {item['id']} [{item['category']}] {item['question']}")
            print(f"    answer: {item['answer']}")
        for evidence in item["evidence"]:
            file = evidence["file"]
            if file not in cache:
                path = transcripts / file
                cache[file] = path.read_bytes().splitlines() if path.is_file() else []
            text, found, problem = check_line(cache[file], evidence["line"], terms)
            shown = " ".join(text.split())[:SHOWN]
            where = f"{file}:{evidence['line']}"
            if problem:
                failures += 1
                print(f"!! {item['id']} {where}: {problem}")
                if quiet and shown:
                    print(f"     {shown}")
            if not quiet:
                print(f"    {where} matched {found[:6]}: {shown}")
    print(f"{qa_path}: {len(items)} questions, {failures} evidence line(s) failing")
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qa", type=Path, help="the QA file (a JSON list in the coding-qa-dev format)")
    parser.add_argument("--transcripts", type=Path, required=True, help="directory evidence files are in")
    parser.add_argument("--quiet", action="store_true", help="print failures only")
    args = parser.parse_args(argv)
    return check(args.qa, args.transcripts, args.quiet)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
