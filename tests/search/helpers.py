"""Shared by the search tests: what a result page's ids are."""

from __future__ import annotations

from cairn.search.models import SearchPage


def ids(page: SearchPage) -> list[str]:
    return [r.id for r in page.results]
