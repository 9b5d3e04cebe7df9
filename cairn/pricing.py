"""What an indexing run costs: list prices per model, for `cairn backfill --dry-run`'s estimates.

A backfill of months of history can send millions of tokens, so the user sees the bill before it is
run. The table holds Anthropic's public list prices in US dollars per million tokens as of
`PRICES_AS_OF`, without prompt-caching or batch discounts (an estimate should err high). Prices
change: a `[prices]` table in `$CAIRN_HOME/config.toml` overrides or adds entries, e.g.

    [prices."claude-haiku-4-5"]
    input = 1.0
    output = 5.0

A model string matches the longest table key its name (provider prefix removed) starts with, so
`anthropic:claude-haiku-4-5-20251001` is priced as `claude-haiku-4-5`. The offline indexer is free.
"""

from __future__ import annotations

import tomllib
from typing import NamedTuple
from urllib.parse import urlsplit

from cairn.config import Settings

PRICES_AS_OF = "2025-11-24"


class Price(NamedTuple):
    """US dollars per million tokens."""

    input: float
    output: float


PRICES: dict[str, Price] = {
    "offline": Price(0.0, 0.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
}


def load_prices(settings: Settings) -> dict[str, Price]:
    """The built-in table with the `[prices]` overrides of the user's config file applied.

    A malformed override is an error the user must see, not a silently wrong estimate.
    """
    prices = dict(PRICES)
    path = settings.config_path
    if not path.exists():
        return prices
    with path.open("rb") as fh:
        overrides = tomllib.load(fh).get("prices", {})
    for name, value in overrides.items():
        try:
            prices[name] = Price(float(value["input"]), float(value["output"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{path}: [prices.{name!r}] needs numeric 'input' and 'output' ($ per million tokens)"
            ) from exc
    return prices


def price_for(model: str, prices: dict[str, Price] | None = None) -> Price | None:
    """The price of `model` (a cairn model string), or None when the table does not know it."""
    table = PRICES if prices is None else prices
    name = model.strip().rpartition(":")[2]
    if name in table:
        return table[name]
    matches = [key for key in table if name.startswith(key)]
    return table[max(matches, key=len)] if matches else None


def cost(
    model: str, input_tokens: int, output_tokens: int, prices: dict[str, Price] | None = None
) -> float | None:
    """Estimated US dollars for the given token counts on `model`, None when its price is unknown."""
    price = price_for(model, prices)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


#: Hosts that mean "a server on this machine": a model served there costs nothing per token.
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def billed(model: str, base_url: str | None = None) -> bool:
    """Whether runs on `model` are paid for per token: not the offline indexer, not an Ollama model, and
    not a model served on this machine (`base_url`, the `model_base_url` setting, on localhost).

    The offline indexer counts tokens as an estimate of what a model would have been sent; shown next
    to a run they read like spend, so the human summaries show token counts only for billed models.
    """
    name = model.strip()
    if name == "offline" or name.startswith("ollama:"):
        return False
    if base_url and name.partition(":")[0] in ("openai", "openai-chat"):
        return urlsplit(base_url).hostname not in LOCAL_HOSTS
    return True
