"""Helpers shared by the tests: code a test calls, never a test or a fixture itself.

The rule: a test module imports what it shares with others from here (or from a helper module of its
own subpackage, such as `tests/daemon/helpers.py`), never from another test module (`tests/…/test_*.py`)
or from a `conftest.py`. A conftest keeps its fixtures and imports what it needs from here; nothing
imports a conftest. `tests/test_architecture.py` checks the rule on every run.

- `paths`: where the repository, its real transcripts and the demo session are.
- `cli`: `cairn ARGS` run as a user runs it (`cairn`, `cairn_json`), in this process or as a real one.
- `inprocess`: the in-process runner `cli` uses.
- `hostile_disks`: real read-only homes and full disks, and `cairn` run against them.
- `builders`: Claude Code transcripts built line by line.
- `repos`: a real git repository with two worktrees.
- `progress`: a small real history, a terminal to run on and the progress output read back.
- `homes`: what the suite's shared indexed homes hold (`IndexedViewer`).
- `indexer`: a small transcript in a real store, for the indexing runner's tests and those built on them.
- `recall_hook`: the recall hook as Claude Code runs it, its payloads and its injected context.
- `snippets`: a coding session synced and searched, for the snippet tests of every face.
- `content_files`: two projects with indexed files and a session about them.
- `learn`: a store filled with what the learner counts, and the figures it must report.
- `backfill`, `reindex`, `rescan`: what the tests of those commands share.
"""
