"""Text search for the list pages: PostgreSQL full-text search with prefix
matching, so "boo" finds "booking" and every word typed must match.

Each model states its search vector once (``search_vector()`` beside the
model) and a GIN expression index over exactly that expression; a filter
written with the same expression is answered from the index. The ``simple``
configuration lower-cases and keeps every word (no stemming, no stop words):
reviewers search for ids, tool names and numbers as much as for prose.

User text never reaches the tsquery syntax unescaped: every whitespace-separated
chunk becomes one quoted lexeme with ``:*`` (quotes doubled, backslashes
escaped), which PostgreSQL splits with the same parser as the documents
("shop-17" → ``'shop':* <-> '-17':*``)."""

from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db.models import QuerySet

SEARCH_CONFIG = "simple"
SEARCH_MAX_CHARS = 200
SEARCH_MAX_WORDS = 12


def prefix_tsquery(text: str) -> str | None:
    """The ``to_tsquery`` text matching every word of ``text`` as a prefix;
    None when ``text`` holds no letter or digit (nothing to search for)."""
    text = (text or "").replace("\x00", " ")[:SEARCH_MAX_CHARS]
    words = [w for w in text.split() if any(ch.isalnum() for ch in w)][:SEARCH_MAX_WORDS]
    if not words:
        return None
    return " & ".join("'" + w.replace("\\", "\\\\").replace("'", "''") + "':*" for w in words)


def text_search(qs: QuerySet, vector: SearchVector, text: str) -> QuerySet:
    """``qs`` narrowed to rows whose ``vector`` matches every word of ``text``
    as a prefix: unchanged for blank text, empty for text with no word."""
    if not (text or "").strip():
        return qs
    query = prefix_tsquery(text)
    if query is None:
        return qs.none()
    return qs.alias(_search=vector).filter(_search=SearchQuery(query, search_type="raw", config=SEARCH_CONFIG))
