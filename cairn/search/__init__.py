"""Search over what cairn remembers: hybrid idea/span/message search, content search, show and timeline."""

from cairn.search.hybrid import search
from cairn.search.models import SearchPage, SearchRequest, SearchResult

__all__ = ["SearchPage", "SearchRequest", "SearchResult", "search"]
