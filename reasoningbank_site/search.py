"""Text search for the list pages: PostgreSQL full-text search with prefix
matching, so "boo" finds "booking" and every word typed must match.

Each searched table has a stored generated ``tsvector`` column,
``search_vector`` (made by a migration, not declared on the model, so no
ORM query reads it), with a GIN index; ``SearchColumn`` names it in a
filter. Stored rather than an expression index, so a row the planner checks
outside the index costs a ~1 µs match, not a ~10 µs re-parse of its text.
The model module says which text it holds (``*_search_vector()``). The ``simple``
configuration lower-cases and keeps every word (no stemming, no stop words):
reviewers search for ids, tool names and numbers as much as for prose.

User text never reaches the tsquery syntax unescaped: every whitespace-separated
chunk becomes one quoted lexeme with ``:*`` (quotes doubled, backslashes
escaped), which PostgreSQL splits with the same parser as the documents
("shop-17" → ``'shop':* <-> '-17':*``).

Searched lists are paged by reasoningbank_site.search_paging."""

from __future__ import annotations

import re
import time

from django.contrib.postgres.search import SearchVectorField
from django.db import connections
from django.db.models import BooleanField, Expression, QuerySet

SEARCH_CONFIG = "simple"
SEARCH_MAX_CHARS = 200
SEARCH_MAX_WORDS = 12
_ALIAS = "_search"


class SearchColumn(Expression):
    """The stored ``tsvector`` column ``name`` of the queried table (a column
    the model does not declare: see the module docstring)."""

    output_field = SearchVectorField()

    def __init__(self, name: str = "search_vector"):
        super().__init__()
        self.name = name

    def as_sql(self, compiler, connection):
        table = compiler.quote_name_unless_alias(compiler.query.get_initial_alias())
        return f"{table}.{connection.ops.quote_name(self.name)}", []


class TextMatch(Expression):
    """``vector @@ to_tsquery(query)``; with a ``drive`` query (one rare word
    of ``query``: see ``search_driver``), ``vector @@ to_tsquery(drive) AND
    ts_match_vq(vector, to_tsquery(query))``: the GIN index is read for the
    rare word alone and the whole query checked on the rows it finds (a
    function call, which the planner never turns into an index condition)."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, vector: Expression, query: str, drive: str | None = None):
        super().__init__()
        self.vector, self.query, self.drive = vector, query, drive

    def get_source_expressions(self):
        return [self.vector]

    def set_source_expressions(self, exprs):
        (self.vector,) = exprs

    def as_sql(self, compiler, connection):
        vector, params = compiler.compile(self.vector)
        full = "to_tsquery(%s::regconfig, %s)"
        if self.drive is None:
            return f"{vector} @@ {full}", [*params, SEARCH_CONFIG, self.query]
        return (
            f"({vector} @@ {full} AND ts_match_vq({vector}, {full}))",
            [*params, SEARCH_CONFIG, self.drive, *params, SEARCH_CONFIG, self.query],
        )


def _words(text: str) -> list[str]:
    """The whitespace-separated chunks of ``text`` that hold a letter or digit."""
    text = (text or "").replace("\x00", " ")[:SEARCH_MAX_CHARS]
    return [w for w in text.split() if any(ch.isalnum() for ch in w)][:SEARCH_MAX_WORDS]


def prefix_tsquery(text: str) -> str | None:
    """The ``to_tsquery`` text matching every word of ``text`` as a prefix;
    None when ``text`` holds no letter or digit (nothing to search for)."""
    words = _words(text)
    if not words:
        return None
    return " & ".join("'" + w.replace("\\", "\\\\").replace("'", "''") + "':*" for w in words)


# A word the index is read for alone: ASCII letters and digits (one or more lexemes, never none, in the
# "simple" configuration), long enough that the rare words it prefixes are few ("3" prefixes 11% of numbers).
_DRIVER = re.compile(r"[A-Za-z0-9]{3,}")
COMMON_LEXEMES_TTL = 300.0  # seconds; ANALYZE changes them, and a stale list only costs speed, never rows
RARE_FRACTION = 0.02  # a word in at most this share of the rows (by ANALYZE's sample) drives the search
_common: dict[tuple, tuple[float, dict[str, float] | None]] = {}


def driving_tsquery(qs: QuerySet, vector: Expression, text: str) -> str | None:
    """The ``to_tsquery`` text of the one word of ``text`` whose rows the GIN
    index should find (the whole query is then checked on each): the word
    whose prefixed lexemes are rarest by ANALYZE's statistics (the summed
    frequencies of the column's most common lexemes it prefixes; none: rarer
    than the rarest of them), if at most ``RARE_FRACTION`` of the rows hold
    it; None (the whole query drives, as PostgreSQL plans it) for a single
    word, without statistics, or when every word is common.

    Every word is a prefix match, and the index builds a bitmap of all the
    rows a prefix matches before it ANDs the words: "number 333333" read a
    bitmap of all 1M trajectories for "number" (185 ms) where "333333" alone
    finds its one row in 0.06 ms. The rows are the same: a row matching the
    whole query matches each of its words."""
    words = _words(text)
    if len(words) < 2 or not isinstance(vector, SearchColumn):
        return None
    candidates = [w.lower() for w in words if _DRIVER.fullmatch(w)]
    common = _common_lexemes(qs, vector.name) if candidates else None
    if common is None:
        return None
    share = {w: sum(f for lexeme, f in common.items() if lexeme.startswith(w)) for w in candidates}
    word = min(candidates, key=lambda w: (share[w], -len(w)))
    return f"'{word}':*" if share[word] <= RARE_FRACTION else None


def _common_lexemes(qs: QuerySet, column: str) -> dict[str, float] | None:
    """The most common lexemes of ``column`` in ``qs``'s table, each with the share of rows holding it
    (None before its first ANALYZE), kept
    ``COMMON_LEXEMES_TTL`` seconds per process."""
    connection = connections[qs.db]
    key = (connection.settings_dict["NAME"], qs.model._meta.db_table, column)
    now = time.monotonic()
    cached = _common.get(key)
    if cached is None or now - cached[0] > COMMON_LEXEMES_TTL:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
                " WHERE schemaname = current_schema() AND tablename = %s AND attname = %s",
                [qs.model._meta.db_table, column],
            )
            row = cursor.fetchone()
        common = dict(zip(row[0], row[1], strict=False)) if row and row[0] is not None else None
        cached = _common[key] = (now, common)
    return cached[1]


def text_search(qs: QuerySet, vector: Expression, text: str) -> QuerySet:
    """``qs`` narrowed to rows whose ``vector`` matches every word of ``text``
    as a prefix: unchanged for blank text, empty for text with no word."""
    if not (text or "").strip():
        return qs
    query = prefix_tsquery(text)
    if query is None:
        return qs.none()
    match = TextMatch(vector, query, driving_tsquery(qs, vector, text))
    return qs.alias(**{_ALIAS: vector}).filter(match)


def is_text_searched(qs) -> bool:
    """Whether ``qs`` went through ``text_search`` with a word to search for."""
    return isinstance(qs, QuerySet) and _ALIAS in qs.query.annotations
