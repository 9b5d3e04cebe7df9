"""Backfill throughput with the offline indexer, next to capture alone as the baseline; passages off and on.

Usage: ``.venv/bin/python benchmarks/backfill.py [COPIES] [--repeats N]`` (default 4 copies, 1 repeat),
``... benchmarks/backfill.py --realistic [--copies N] [--eval]`` for issue 16's realistic history (below),
or ``... benchmarks/backfill.py --machine [--copies N] [--repeats N]`` for issue 31's embedding threads
and peak RSS (default 8 copies of the realistic history, ~11,200 messages; see `machine`).
The shared fixtures under ``tests/fixtures/transcripts`` are laid out as a Claude Code projects
directory COPIES times (each copy its own sessions), then fresh stores are filled from it, each by a
real process:

* ``cairn sync --no-index`` — capture only: read, normalise, store and embed every message. Every
  backfill pays this, so it is the floor;
* ``cairn backfill --model offline`` — capture, then index session by session, oldest first.

Each runs twice in the same run: **before**, with ``CAIRN_PASSAGES=false`` (messages stored as before
passages existed: no passages, no passage vectors), and **after**, with the default settings
(passages, and vectors for the prose passages beyond the first). With ``--repeats N`` every pair runs N
times, before and after alternating which goes first, and the median is reported, so a machine
whose load drifts does not favour one side.

All are timed wall-clock as a user sees them (process start included) and reported in messages per
second; the ratio says how much of capture's speed a backfill keeps once indexing is added, and
after/before how much passages cost. Vectors per message counts the message and passage vectors the
capture stored (`cairn stats`) over the messages. The offline indexer stands in for a model, so this
measures cairn's own overhead (planning, tools, validation, applying, embedding), not an API's latency.

``--realistic`` (issue 16, "Done when") lays the fixtures out as a Claude Code projects directory N
times, each copy its own project directories, and rewrites every UUID in the files (file names,
`sessionId`, `uuid`, `parentUuid`, tool ids) per copy: the store keys a session by the `sessionId` in
its lines, so merely renamed copies would merge into the first copy's sessions and dedupe by uuid;
and it marks every text of a copy as that copy's ("(copy 2) ..."), so the content-hash vector cache
cannot make copies 2..N free (a real history repeats little: measured with identical texts, 4 copies
ran at 3.5x capture, most vectors reused).
It then times, in the same run and each from process start, capture alone (``cairn sync --no-index
--no-vectors``, the baseline) and ``cairn backfill --model offline`` twice, each into a fresh store —
embedding after indexing (``CAIRN_EMBED_ALONGSIDE=false``, as before) and alongside (the default) — to a
fully embedded store (it
checks that no vector waits in the outbox afterwards), and reports messages/s, the backfill/capture
time ratio (issue 16's target: <= 6) and each process's peak RSS (its own `wait4` rusage; target
< 500 MB). With ``--eval`` it then runs ``cairn eval qa`` on coding-qa-dev, which uses the same default
settings, and prints its recall next to BM25 over the raw lines.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "transcripts"
DEV_QA = REPO_ROOT / "evals" / "datasets" / "coding-qa-dev" / "qa.json"
PROJECT = "-home-dev-bench"


def lay_out(projects: Path, copies: int) -> int:
    """Copy every fixture transcript `copies` times as distinct sessions; returns the file count."""
    root = projects / PROJECT
    root.mkdir(parents=True)
    count = 0
    for i in range(copies):
        for j, path in enumerate(sorted(FIXTURES.rglob("*.jsonl"))):
            # copy2 keeps the mtime: a finished transcript whose last line has no newline is read whole
            # only once it has settled (cairn.transcripts.reader.SETTLE_SECONDS), and these are finished.
            shutil.copy2(path, root / f"{i:04d}{j:04d}-0000-4000-8000-{path.stem[:12]:0>12}.jsonl")
            count += 1
    return count


UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def copied_uuid(copy: int, original: bytes) -> bytes:
    """A UUID unique to `copy`, the same wherever `original` appears, so references stay consistent."""
    digest = hashlib.md5(b"%d:" % copy + original).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}".encode()


def distinct_text(data: bytes, copy: int) -> bytes:
    """The JSONL `data` with every message text and tool output of copy `copy` (from 1) marked as its
    own, so no copy reuses another's vectors through the content-hash cache (`text_sha`): a real
    history repeats little. Lines that are not JSON objects are kept as they are."""
    if copy == 0:
        return data
    mark = f"(copy {copy}) "

    def marked(value: Any, key: str = "") -> Any:
        if isinstance(value, str):
            return mark + value if key in ("text", "content") and value else value
        if isinstance(value, list):
            return [marked(item, key) for item in value]
        if isinstance(value, dict):
            return {k: marked(v, k) for k, v in value.items()}
        return value

    lines = []
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        try:
            obj = json.loads(body)
        except ValueError:
            lines.append(line)
            continue
        lines.append(json.dumps(marked(obj), ensure_ascii=False).encode() + line[len(body) :])
    return b"".join(lines)


def lay_out_realistic(projects: Path, copies: int) -> int:
    """The fixtures as `copies` distinct histories: a project directory per fixture project and copy,
    every UUID rewritten and every text marked per copy (`distinct_text`); mtimes kept (see
    `lay_out`). Returns the file count."""
    count = 0
    for copy in range(copies):

        def rewrite(data: bytes, copy: int = copy) -> bytes:
            return distinct_text(UUID.sub(lambda m: copied_uuid(copy, m.group()), data), copy)

        for path in sorted(FIXTURES.rglob("*.jsonl")):
            relative = path.relative_to(FIXTURES)
            root = projects / f"-home-dev-{relative.parts[0]}-{copy}"
            name = rewrite(path.name.encode()).decode()
            if name == path.name:
                name = f"{path.stem}-{copy}{path.suffix}"
            target = root.joinpath(*relative.parts[1:-1], name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(rewrite(path.read_bytes()))
            shutil.copystat(path, target)
            count += 1
    return count


def measured(args: list[str], env: dict[str, str], launch: list[str] | None = None) -> tuple[float, int, Any]:
    """Wall seconds from process start to exit, the process's peak RSS in bytes, its JSON output.

    `launch` replaces `-m cairn` (how the interpreter is told to run the CLI)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [sys.executable, *(launch or ["-m", "cairn"]), *args, "--json"],
            stdout=out,
            stderr=errors,
            env=env,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        errors.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"cairn {' '.join(args)} failed ({proc.returncode}):\n{errors.read().decode()}")
        return seconds, usage.ru_maxrss * 1024, json.loads(out.read())


#: The realistic run's backfills: embedding after capture and indexing (as before issue 16's change),
#: then alongside them (the default), each into its own fresh store.
REALISTIC_VARIANTS = (
    ("backfill, embedding after indexing", {"CAIRN_EMBED_ALONGSIDE": "false"}),
    ("backfill, embedding alongside (default)", {}),
)


def realistic(copies: int) -> None:
    """Issue 16's realistic run: capture only, then full backfills, each from process start."""
    with tempfile.TemporaryDirectory(prefix="cairn-bench-realistic-") as tmp:
        base = Path(tmp)
        files = lay_out_realistic(base / "projects", copies)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
        env["CAIRN_CLAUDE_PROJECTS_DIR"] = str(base / "projects")
        capture_env = {**env, "CAIRN_HOME": str(base / "capture")}
        capture_s, capture_rss, captured = measured(["sync", "--no-index", "--no-vectors"], capture_env)
        messages = captured["sync"]["messages_added"]
        runs = []
        for number, (label, extra) in enumerate(REALISTIC_VARIANTS):
            backfill_env = {**env, **extra, "CAIRN_HOME": str(base / f"backfill-{number}")}
            took, rss, filled = measured(["backfill", "--model", "offline"], backfill_env)
            _, _, stats = measured(["stats"], backfill_env)
            assert filled["messages_added"] == messages, (filled["messages_added"], messages)
            queued = stats["pending_vectors"]
            assert queued == 0, f"{queued} vectors still queued after the backfill"
            runs.append((label, took, rss, filled, dict(stats["vectors"] or {})))
    last_vectors = runs[-1][4]
    print(
        f"{files} files, {runs[-1][3]['sessions_total']} sessions, {messages} messages ({copies} copies), "
        f"{sum(last_vectors.values())} vectors {last_vectors}"
    )
    print(
        f"{'capture only (sync --no-index --no-vectors)':44s} {capture_s:7.1f} s "
        f"{messages / capture_s:7.1f} messages/s  peak RSS {capture_rss / 2**20:6.0f} MB"
    )
    for label, took, rss, filled, _ in runs:
        print(f"{label:44s} {took:7.1f} s {messages / took:7.1f} messages/s  peak RSS {rss / 2**20:6.0f} MB")
        timings = {k.removesuffix("_seconds"): v for k, v in filled.items() if k.endswith("_seconds")}
        phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())
        print(f"    phases: {phases}; backfill / capture-only time: {took / capture_s:.2f}x (target <= 6)")


#: `cairn` as shipped before issue 31's part 6: glibc's mmap and trim thresholds left alone (arenas
#: capped, `cairn.malloc`) and the MiniLM graph loaded as shipped (`cairn.store.minilm_graph`).
LAUNCH_AS_BEFORE = [
    "-c",
    "import cairn.malloc as m, cairn.store.embeddings as e; m.TUNING = m.TUNING[:1]; "
    "e.gather_before_dequantize = lambda model: model; from cairn.cli import app; app(prog_name='cairn')",
]


def machine(copies: int, repeats: int) -> None:
    """Issue 31, part 6: backfill throughput and peak RSS by embedding threads, and the 500 MB bar.

    Each variant is `cairn backfill --model offline` into a fresh store, timed from process start:
    the bulk thread count (every CPU this process may use: the default now), the old cap (min(4, CPUs),
    as shipped before), one thread, and the old cap without the malloc thresholds (`cairn.malloc`) and
    the graph rewrite (`cairn.store.minilm_graph`): everything as shipped before. With `--repeats N`
    each runs N times in rotated order; the medians of the times and the largest peak are reported.
    """
    from cairn.store.cpus import available_cpus, embedding_threads

    cpus = available_cpus()
    old_cap = min(4, cpus)
    variants: list[tuple[str, dict[str, str], list[str] | None]] = [
        (f"bulk: every CPU, {embedding_threads('bulk')} thread(s) (default)", {}, None),
        (f"old cap: min(4, CPUs) = {old_cap} thread(s)", {"CAIRN_EMBEDDING_THREADS": str(old_cap)}, None),
        ("1 thread", {"CAIRN_EMBEDDING_THREADS": "1"}, None),
        (
            f"as shipped before: {old_cap} thread(s), malloc and graph untouched",
            {"CAIRN_EMBEDDING_THREADS": str(old_cap)},
            LAUNCH_AS_BEFORE,
        ),
    ]
    took: dict[str, list[float]] = {label: [] for label, _, _ in variants}
    peaks: dict[str, list[int]] = {label: [] for label, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="cairn-bench-machine-") as tmp:
        base = Path(tmp)
        files = lay_out_realistic(base / "projects", copies)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
        env["CAIRN_CLAUDE_PROJECTS_DIR"] = str(base / "projects")
        messages = None
        for repeat in range(repeats):
            for number in range(len(variants)):
                label, extra, launch = variants[(number + repeat) % len(variants)]
                home = base / f"home-{repeat}-{number}"
                seconds, rss, filled = measured(
                    ["backfill", "--model", "offline"], {**env, **extra, "CAIRN_HOME": str(home)}, launch
                )
                assert messages in (None, filled["messages_added"]), (messages, filled["messages_added"])
                messages = filled["messages_added"]
                took[label].append(seconds)
                peaks[label].append(rss)
                shutil.rmtree(home, ignore_errors=True)
    assert messages is not None
    print(
        f"{files} files, {messages} messages ({copies} copies); {cpus} CPU(s) available to this process "
        f"(affinity and cgroup quota), os.cpu_count() {os.cpu_count()}; bulk {embedding_threads('bulk')}, "
        f"steady {embedding_threads('steady')} thread(s); median of {repeats} run(s); "
        f"load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    for label, _, _ in variants:
        seconds, peak = statistics.median(took[label]), max(peaks[label])
        print(
            f"  {label:58s} {seconds:7.1f} s {messages / seconds:7.1f} messages/s  "
            f"peak RSS {peak / 2**20:5.0f} MB (max of runs)"
        )
    bulk_peak = max(peaks[variants[0][0]]) / 2**20
    verdict = "under" if bulk_peak < 500 else "OVER"
    print(f"default backfill, {messages} messages: peak RSS {bulk_peak:.0f} MB, {verdict} the 500 MB bar")


def dev_set_recall() -> None:
    """`cairn eval qa` on coding-qa-dev with the default settings the backfill above ran with (the
    eval ignores `CAIRN_*` variables), next to BM25 over the raw lines of the same run."""
    with tempfile.TemporaryDirectory(prefix="cairn-bench-eval-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
        env["CAIRN_HOME"] = tmp
        args = ["eval", "qa", str(DEV_QA), "--transcripts", str(FIXTURES), "--out", str(Path(tmp) / "runs")]
        _, _, report = measured(args, env)
    for group in ("bm25", "hybrid/messages", "hybrid/all"):
        figures = report["retrieval"][group]
        print(
            f"coding-qa-dev {group:16s} recall_any@1/5/10 "
            + " / ".join(f"{figures[f'recall_any@{k}']:.3f}" for k in (1, 5, 10))
            + f"  MRR {figures['mrr']:.3f}"
        )


def timed(args: list[str], env: dict[str, str]) -> tuple[float, Any]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", *args, "--json"], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"cairn {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return seconds, json.loads(proc.stdout)


def vector_counts(env: dict[str, str]) -> dict[str, int]:
    _, stats = timed(["stats"], env)
    return dict(stats["vectors"] or {})


def main() -> None:
    parser = argparse.ArgumentParser(description="backfill throughput, passages off (before) and on (after)")
    parser.add_argument("copies", nargs="?", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--realistic", action="store_true", help="issue 16's run (see the module docstring)")
    parser.add_argument("--copies", dest="realistic_copies", type=int, default=None)
    parser.add_argument(
        "--eval", action="store_true", help="with --realistic: also coding-qa-dev recall of the same settings"
    )
    parser.add_argument(
        "--machine", action="store_true", help="issue 31's run: threads and peak RSS (see `machine`)"
    )
    options = parser.parse_args()
    if options.machine:
        machine(options.realistic_copies or 8, options.repeats)
        return
    if options.realistic:
        realistic(options.realistic_copies or options.copies)
        if options.eval:
            dev_set_recall()
        return
    copies, repeats = options.copies, options.repeats
    configs = {"before": {"CAIRN_PASSAGES": "false"}, "after": {}}
    seconds: dict[tuple[str, str], list[float]] = {}
    results: dict[tuple[str, str], Any] = {}
    vectors: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="cairn-bench-backfill-") as tmp:
        base = Path(tmp)
        files = lay_out(base / "projects", copies)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
        env["CAIRN_CLAUDE_PROJECTS_DIR"] = str(base / "projects")
        for repeat in range(repeats):
            order = list(configs) if repeat % 2 == 0 else list(reversed(configs))
            for command in ("sync", "backfill"):
                for name in order:
                    home = base / f"{command}-{name}-{repeat}"
                    run_env = {**env, **configs[name], "CAIRN_HOME": str(home)}
                    cli = ["sync", "--no-index"] if command == "sync" else ["backfill", "--model", "offline"]
                    took, data = timed(cli, run_env)
                    seconds.setdefault((command, name), []).append(took)
                    results[(command, name)] = data
                    if command == "sync" and repeat == 0:
                        vectors[name] = vector_counts(run_env)
                    shutil.rmtree(home / "chroma", ignore_errors=True)

    messages = results[("sync", "before")]["sync"]["messages_added"]
    for name in configs:
        assert results[("sync", name)]["sync"]["messages_added"] == messages
        assert results[("backfill", name)]["messages_added"] == messages
    print(
        f"{files} files, {results[('backfill', 'after')]['sessions_total']} sessions, {messages} messages "
        f"({copies} copies), median of {repeats} run(s) each"
    )
    rates: dict[tuple[str, str], float] = {}
    for command, label in (
        ("sync", "capture only (cairn sync --no-index)"),
        ("backfill", "backfill offline"),
    ):
        for name in configs:
            took = statistics.median(seconds[(command, name)])
            rates[(command, name)] = messages / took
            print(f"{label:38s} {name:6s} {took:7.2f} s  {messages / took:8.1f} messages/s")
        print(
            f"{'':38s} after/before throughput: {rates[(command, 'after')] / rates[(command, 'before')]:.3f}"
        )
    for name in configs:
        counted = vectors[name]
        own, passages = counted.get("messages", 0), counted.get("passages", 0)
        message_vectors = own + passages
        print(
            f"vectors {name:6s}: {own} messages + {passages} passages "
            f"= {message_vectors / messages:.3f} per message (all collections: {sum(counted.values())})"
        )
    back = results[("backfill", "after")]
    indexed = sum(s["messages"] for s in back["sessions"])
    # `wall_seconds` is the whole command's; `index_seconds` is the indexing phase's own (cairn.progress).
    print(f"indexing phase alone (after): {indexed / back['index_seconds']:.1f} sent messages/s")
    ratio = rates[("backfill", "after")] / rates[("sync", "after")]
    print(f"backfill / capture throughput (after): {ratio:.2f}")


if __name__ == "__main__":
    main()
