"""Comparing eval runs: metric by metric deltas between two run JSONs, as a terminal table, a Markdown
report and a bar chart of per-field F1 across any number of runs.

A run JSON (written by `cairn.evals.runs`) has `model`, `prompt_version`, `dataset`, `created_at`,
`metrics` (`{field: {precision, recall, f1, ...}}`), `cost` (numbers) and optionally `retrieval`
(`{mode: {"recall@1", ..., "mrr", "ndcg@10"}}`). A benchmark run (`cairn.evals.benchmark`) has only
`retrieval`, per group (`bm25`, `hybrid/all`, ...) with `recall_any@k`, `recall_all@k` and `mrr`, and its
latencies under `cost.latency_ms`. Anything one run lacks shows as missing rather than 0, so
a new field or mode reads as new instead of as a regression.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from cairn.errors import Failure

EXTRACTION_METRICS = ("f1", "precision", "recall")
RETRIEVAL_METRICS = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
# What the benchmark runs (`cairn eval qa`, `cairn eval locomo`) report per group instead of recall@k.
BENCHMARK_METRICS = tuple(f"recall_{how}@{k}" for how in ("any", "all") for k in (1, 5, 10))
RUN_FIELDS = ("model", "prompt_version", "dataset", "created_at")
SECTIONS = ("extraction", "retrieval", "cost")
# Extraction and retrieval scores improve upwards; every cost (dollars, tokens, seconds) improves downwards.
HIGHER_IS_BETTER = {"extraction": True, "retrieval": True, "cost": False}
PLOT_HINT = "install the plot extra: pip install 'cairn[plot]'"


class ChartUnavailableError(Failure):
    """The chart needs matplotlib, an optional extra, and it is not installed."""


def run_label(run: Mapping[str, Any]) -> str:
    """How a run is named in headers and legends: its model and prompt version."""
    model = run.get("model") or "?"
    prompt = run.get("prompt_version")
    return f"{model} / {prompt}" if prompt else str(model)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _row(group: str, metric: str, a: Any, b: Any) -> dict[str, Any]:
    va, vb = _number(a), _number(b)
    # Rounded to kill float noise (0.7 - 0.6 = 0.09999...) while keeping sub-cent costs visible.
    delta = round(vb - va, 6) if va is not None and vb is not None else None
    return {"group": group, "metric": metric, "a": va, "b": vb, "delta": delta}


def _union(*keys: Iterable[str]) -> list[str]:
    """Keys in first-seen order: run A's order first, then what only B has."""
    return list(dict.fromkeys(k for ks in keys for k in ks))


def _flat_numbers(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Numeric leaves of a (possibly nested) mapping with dotted keys; a cost breakdown may nest."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flat_numbers(value, f"{name}."))
        elif _number(value) is not None:
            flat[name] = value
    return flat


def _scored(metrics: Any) -> dict[str, Mapping[str, Any]]:
    """The extraction fields that carry an F1; counts such as `skip` and `redaction` do not compare as
    scores."""
    return {name: value for name, value in _fields(metrics).items() if value.get("f1") is not None}


def _fields(metrics: Any) -> dict[str, Mapping[str, Any]]:
    """The per-field entries of a run's `metrics`: anything that is not a mapping of scores is skipped."""
    if not isinstance(metrics, Mapping):
        return {}
    return {str(name): value for name, value in metrics.items() if isinstance(value, Mapping)}


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Run A against run B: for each metric, A's value, B's and the delta B - A.

    Returns `{"a": {label, model, prompt_version, dataset, created_at}, "b": {...}, "extraction": rows,
    "retrieval": rows, "cost": rows}`, each row `{group, metric, a, b, delta}`: the group is the field
    (extraction), the search mode (retrieval) or empty (cost). A value missing from a run is None, and so is
    its delta.
    """
    ma, mb = _scored(a.get("metrics")), _scored(b.get("metrics"))
    extraction = [
        _row(field, metric, ma.get(field, {}).get(metric), mb.get(field, {}).get(metric))
        for field in _union(ma, mb)
        for metric in EXTRACTION_METRICS
    ]
    ra, rb = _fields(a.get("retrieval")), _fields(b.get("retrieval"))
    retrieval = [
        _row(mode, metric, ra.get(mode, {}).get(metric), rb.get(mode, {}).get(metric))
        for mode in _union(ra, rb)
        for metric in _retrieval_metrics(ra.get(mode, {}), rb.get(mode, {}))
    ]
    ca, cb = _flat_numbers(a.get("cost") or {}), _flat_numbers(b.get("cost") or {})
    cost = [_row("", name, ca.get(name), cb.get(name)) for name in _union(ca, cb)]
    return {
        "a": _describe(a),
        "b": _describe(b),
        "extraction": extraction,
        "retrieval": retrieval,
        "cost": cost,
    }


def _retrieval_metrics(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, ...]:
    """The retrieval eval's metrics, or a benchmark run's when either group has them."""
    if any(metric in a or metric in b for metric in BENCHMARK_METRICS):
        return (*BENCHMARK_METRICS, "mrr")
    return RETRIEVAL_METRICS


def _describe(run: Mapping[str, Any]) -> dict[str, Any]:
    return {"label": run_label(run), **{name: run.get(name) for name in RUN_FIELDS}}


# Rendering


def _fmt(value: float | None, section: str) -> str:
    """Scores to 4 places; costs as counts when whole (tokens, calls), else to 6 significant digits."""
    if value is None:
        return "-"
    if section != "cost":
        return f"{value:.4f}"
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:.6g}"


def _fmt_delta(value: float | None, section: str) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return ("+" if value > 0 else "-") + _fmt(abs(value), section)


def _verdict(section: str, delta: float | None) -> str | None:
    """`better`/`worse` for a non-zero delta, reading it the way the section improves."""
    if not delta:
        return None
    return "better" if (delta > 0) == HIGHER_IS_BETTER[section] else "worse"


def render_table(comparison: Mapping[str, Any]) -> Table:
    """A rich table of every compared metric; improvements green, regressions red."""
    a, b = comparison["a"], comparison["b"]
    table = Table(title=f"A: {a['label']}  vs  B: {b['label']}")
    for name in ("section", "group", "metric"):
        table.add_column(name)
    for name in ("A", "B", "B - A"):
        table.add_column(name, justify="right")
    for section in SECTIONS:
        for row in comparison.get(section, []):
            verdict = _verdict(section, row["delta"])
            style = {"better": "green", "worse": "red"}.get(verdict or "", "")
            delta = _fmt_delta(row["delta"], section)
            table.add_row(
                section,
                row["group"],
                row["metric"],
                _fmt(row["a"], section),
                _fmt(row["b"], section),
                f"[{style}]{delta}[/{style}]" if style else delta,
            )
    return table


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return lines


def _grouped(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    groups: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["group"], {})[row["metric"]] = row
    return groups


def _wide(section: str, rows: Sequence[Mapping[str, Any]], first: str, metrics: Sequence[str]) -> list[str]:
    """One line per group (field or mode), three columns A, B and delta per metric."""
    header = [first] + [f"{m} {side}" for m in metrics for side in ("A", "B", "delta")]
    body = []
    for group, by_metric in _grouped(rows).items():
        cells = [group]
        for metric in metrics:
            row = by_metric.get(metric)
            if row is None:
                cells += ["-", "-", "-"]
                continue
            delta = _fmt_delta(row["delta"], section)
            if _verdict(section, row["delta"]) == "worse":
                delta = f"**{delta}**"  # regressions stand out in a review
            cells += [_fmt(row["a"], section), _fmt(row["b"], section), delta]
        body.append(cells)
    return _md_table(header, body)


def _long(section: str, rows: Sequence[Mapping[str, Any]], first: str | None) -> list[str]:
    """One line per metric (and group, when `first` names the group column): A, B and the delta."""
    body = []
    for row in rows:
        delta = _fmt_delta(row["delta"], section)
        if _verdict(section, row["delta"]) == "worse":
            delta = f"**{delta}**"
        values = [row["metric"], _fmt(row["a"], section), _fmt(row["b"], section), delta]
        body.append([row["group"], *values] if first else values)
    header = ["metric", "A", "B", "delta"]
    return _md_table([first, *header] if first else header, body)


def render_markdown(comparison: Mapping[str, Any]) -> str:
    """A Markdown report: which runs, then extraction F1/P/R per field, retrieval per mode and cost.

    Regressions (a delta in the worse direction) are in bold so a reviewer finds them without reading
    every number.
    """
    a, b = comparison["a"], comparison["b"]
    lines = [f"# Eval comparison: {a['label']} vs {b['label']}", ""]
    lines += _md_table(
        ["", "A", "B"],
        [[name, f"`{a.get(name) or '-'}`", f"`{b.get(name) or '-'}`"] for name in RUN_FIELDS],
    )
    lines += ["", "Deltas are B - A; regressions are in **bold**.", ""]
    lines += ["## Extraction", ""]
    if comparison.get("extraction"):
        lines += _wide("extraction", comparison["extraction"], "field", EXTRACTION_METRICS)
    else:
        lines.append("No extraction metrics in either run.")
    lines += ["", "## Retrieval", ""]
    if comparison.get("retrieval"):
        lines += _long("retrieval", comparison["retrieval"], "mode")
    else:
        lines.append("No retrieval metrics in either run.")
    lines += ["", "## Cost", ""]
    if comparison.get("cost"):
        lines += _long("cost", comparison["cost"], None)
    else:
        lines.append("No cost figures in either run.")
    return "\n".join(lines) + "\n"


def render_chart(runs: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """Write a PNG bar chart of per-field F1, one bar per run in each field's group.

    matplotlib is an optional extra, imported only here so the rest of cairn never pays for it; its
    object-oriented `Figure` renders through the Agg canvas without touching pyplot's global backend.
    Raises `ChartUnavailableError` when it is not installed, `ValueError` when given no runs.
    """
    if not runs:
        raise ValueError("render_chart needs at least one run")
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ChartUnavailableError(PLOT_HINT) from exc

    fields = _union(*(_scored(run.get("metrics")) for run in runs))
    width = 0.8 / len(runs)
    figure = Figure(figsize=(max(6.0, 1.2 * len(fields) + 2), 4.5 + 0.25 * len(runs)), layout="constrained")
    axes = figure.subplots()
    for index, run in enumerate(runs):
        metrics = _fields(run.get("metrics"))
        scores = [_number(metrics.get(f, {}).get("f1")) or 0.0 for f in fields]
        positions = [i + (index - (len(runs) - 1) / 2) * width for i in range(len(fields))]
        label = run_label(run)
        if run.get("created_at"):
            label += f" ({str(run['created_at'])[:10]})"
        axes.bar(positions, scores, width, label=label)
    axes.set_xticks(range(len(fields)), fields, rotation=30, ha="right")
    axes.set_ylim(0, 1)
    axes.set_ylabel("F1")
    axes.set_title("Extraction F1 per field")
    # Outside the axes: a legend inside would hide the bars of the best fields, which reach the top.
    figure.legend(loc="outside lower center", ncols=1, fontsize="small")
    figure.savefig(Path(path), format="png", dpi=100)
