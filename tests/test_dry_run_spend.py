"""`cairn backfill --dry-run` (and `reindex --dry-run`) say who pays the estimate and how many days of
the daily token budget it takes; for `claude-code`, tokens from the user's Claude plan, no dollar bill.

The dry run runs no model, so it needs no claude-agent-sdk: the SDK-missing case runs the command in
this process with `importlib.util.find_spec` answering None for `claude_agent_sdk` alone.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.claude_code_cli import INSTALL_HINT
from cairn.pricing import cost
from tests.agent.claude_code_helpers import hide_sdk
from tests.helpers.cli import cairn
from tests.helpers.paths import VIEWER_SESSIONS

SESSION = str(VIEWER_SESSIONS[0])
RUN_TOKEN_BUDGET = 60_000  # the setting's default
BATCH_READINGS = 4  # cairn.agent.indexer: a run's limit holds four readings of its batch


def dry_run(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = cairn("backfill", SESSION, "--dry-run", *args, "--json", env=env)
    return json.loads(proc.stdout)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_claude_code_is_tokens_from_the_plan_with_the_api_price_only_for_comparison(cairn_home: Path) -> None:
    data = dry_run("--model", "claude-code")
    total, spend = data["total"], data["spend"]
    tokens = total["input_tokens"] + total["output_tokens"]
    assert total["model_cost_usd"] is None and all(s["model_cost_usd"] is None for s in data["sessions"])
    limit = total["batches"] * RUN_TOKEN_BUDGET + BATCH_READINGS * total["message_tokens"]
    assert spend == {
        "tokens": tokens,
        "paid_by": "claude_plan",
        "claude_model": "claude-haiku-4-5",
        "api_equivalent_usd": round(
            cost("claude-haiku-4-5", total["input_tokens"], total["output_tokens"]) or -1, 4
        ),
        "daily_token_budget": 2_000_000,
        "budget_days": 1,
        "run_limit_tokens": limit,
        "budget_days_at_most": math.ceil(limit / 2_000_000),
        "needs": None,
    }
    sonnet = dry_run("--model", "claude-code:claude-sonnet-4-5")
    assert sonnet["total"]["model_cost_usd"] is None  # not the API price, though sonnet has one
    assert sonnet["spend"]["claude_model"] == "claude-sonnet-4-5"


def test_a_small_budget_takes_days_rounded_up(cairn_home: Path) -> None:
    data = dry_run("--model", "claude-code", env={"CAIRN_DAILY_TOKEN_BUDGET": "5000"})
    total, spend = data["total"], data["spend"]
    tokens = total["input_tokens"] + total["output_tokens"]
    assert spend["budget_days"] == math.ceil(tokens / 5000) > 1
    assert spend["budget_days_at_most"] == math.ceil(spend["run_limit_tokens"] / 5000)
    shown = flat(
        cairn(
            "backfill",
            SESSION,
            "--dry-run",
            "--model",
            "claude-code",
            env={"CAIRN_DAILY_TOKEN_BUDGET": "5000"},
        ).stdout
    )
    assert (
        f"claude-code (claude-haiku-4-5): ~{tokens:,} tokens from your Claude plan, not billed in dollars; "
        f"the API list price of claude-haiku-4-5 would be ${spend['api_equivalent_usd']:.2f} "
        "(for comparison only)."
    ) in shown
    assert (
        f"Daily token budget 5,000: ~{tokens:,} tokens take about {spend['budget_days']} days "
        f"({spend['budget_days_at_most']} days at most: {spend['run_limit_tokens']:,} tokens if every run "
        "used its whole limit); indexing waits for the next day whenever a day's budget is spent."
    ) in shown
    assert "API list prices, for comparison" in shown and " cost " not in shown.split("API list")[0]


def test_api_models_count_against_the_budget_too_and_offline_does_not(cairn_home: Path) -> None:
    haiku = dry_run("--model", "anthropic:claude-haiku-4-5")
    assert haiku["spend"]["paid_by"] == "api" and haiku["spend"]["budget_days"] == 1
    assert haiku["total"]["model_cost_usd"] is not None
    shown = flat(cairn("backfill", SESSION, "--dry-run", "--model", "anthropic:claude-haiku-4-5").stdout)
    tokens = haiku["spend"]["tokens"]
    assert f"Daily token budget 2,000,000: ~{tokens:,} tokens fit in one day's budget (" in shown
    assert "Claude plan" not in shown
    offline = dry_run("--model", "offline")["spend"]
    assert offline["paid_by"] == "nothing" and offline["budget_days"] is None
    assert "Daily token budget" not in cairn("backfill", SESSION, "--dry-run", "--model", "offline").stdout
    unlimited = dry_run("--model", "claude-code", env={"CAIRN_DAILY_TOKEN_BUDGET": "0"})["spend"]
    assert unlimited["budget_days"] is None and unlimited["daily_token_budget"] == 0


def test_the_dry_run_needs_no_sdk_and_says_indexing_will(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_sdk(monkeypatch)
    assert dry_run("--model", "claude-code")["spend"]["needs"] == INSTALL_HINT
    shown = flat(cairn("backfill", SESSION, "--dry-run", "--model", "claude-code").stdout)
    assert f"Before indexing (this dry run needs nothing): {INSTALL_HINT}." in shown


def test_reindex_dry_run_says_the_same(cairn_home: Path) -> None:
    dry_run("--model", "offline")  # captures the session
    data = json.loads(cairn("reindex", "--dry-run", "--model", "claude-code", "--json").stdout)
    assert data["spend"]["paid_by"] == "claude_plan" and data["spend"]["budget_days"] == 1
    assert data["total"]["model_cost_usd"] is None
