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


class JoinedSearchColumn(Expression):
    """The stored ``tsvector`` column ``name`` of the queried table followed
    by ``joined_column`` of the row of ``joined_table`` whose ``joined_key``
    is the queried row's primary key (empty when there is none): one document
    kept in two tables, each column with its own GIN index. A match is found
    through the indexes by one word (``TextMatch``'s drive, looked up in both)
    and checked on the joined document."""

    output_field = SearchVectorField()

    def __init__(self, name: str, joined_table: str, joined_column: str, joined_key: str):
        super().__init__()
        self.name, self.joined_table, self.joined_column, self.joined_key = (
            name,
            joined_table,
            joined_column,
            joined_key,
        )

    def table_sql(self, compiler, connection) -> tuple[str, str]:
        """The queried table's alias and primary key column, quoted."""
        alias = compiler.quote_name_unless_alias(compiler.query.get_initial_alias())
        return alias, connection.ops.quote_name(compiler.query.get_meta().pk.column)

    def as_sql(self, compiler, connection):
        quote = connection.ops.quote_name
        alias, pk = self.table_sql(compiler, connection)
        joined = (
            f"(SELECT j.{quote(self.joined_column)} FROM {quote(self.joined_table)} j"
            f" WHERE j.{quote(self.joined_key)} = {alias}.{pk})"
        )
        return f"({alias}.{quote(self.name)} || COALESCE({joined}, ''::tsvector))", []

    def candidates_sql(self, compiler, connection, tsquery: str) -> str:
        """The primary keys of the rows whose either column matches ``tsquery`` (SQL text), from both indexes."""
        quote = connection.ops.quote_name
        table = quote(compiler.query.get_meta().db_table)
        _alias, pk = self.table_sql(compiler, connection)
        return (
            f"SELECT {pk} FROM {table} WHERE {quote(self.name)} @@ {tsquery} UNION ALL"
            f" SELECT {quote(self.joined_key)} FROM {quote(self.joined_table)}"
            f" WHERE {quote(self.joined_column)} @@ {tsquery}"
        )


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
        if isinstance(self.vector, JoinedSearchColumn) and self.drive:
            # Each driving word's rows, found in both tables' indexes; the whole query checked on what they share.
            alias, pk = self.vector.table_sql(compiler, connection)
            candidates = self.vector.candidates_sql(compiler, connection, full)
            # One set of keys (INTERSECT: the planner cannot misjudge the order of several IN lists).
            found = " INTERSECT ".join(f"({candidates})" for _ in self.drive)
            found_params = [value for drive in self.drive for value in (SEARCH_CONFIG, drive, SEARCH_CONFIG, drive)]
            return (
                f"({alias}.{pk} IN ({found}) AND ts_match_vq({vector}, {full}))",
                [*found_params, *params, SEARCH_CONFIG, self.query],
            )
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
SHARED_FRACTION = 0.5  # a joined document's words in at most this share each drive it together
_common: dict[tuple, tuple[float, dict[str, float] | None]] = {}


def driving_tsquery(qs: QuerySet, vector: Expression, text: str) -> str | tuple[str, ...] | None:
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
    whole query matches each of its words.

    A ``JoinedSearchColumn`` has no index of the whole document, so it is
    driven by a tuple of words, each looked up in both tables' indexes and the
    rows they share checked: the rarest word alone, single words too, when at
    most ``RARE_FRACTION`` of the rows hold it; else every word in at most
    ``SHARED_FRACTION`` of them, when there are two or more (two words in one
    row in eight each that rarely meet: the shared rows are few); else None,
    and the list's own order is walked, checking each row (one such word, or
    words in most rows: the matches are dense). A word is rated by its longest
    run of letters and digits; one in no column's common lexemes (or a column
    not analyzed yet) counts as rare."""
    words = _words(text)
    if isinstance(vector, JoinedSearchColumn):
        if not words:
            return None
        tables = [(qs.model._meta.db_table, vector.name), (vector.joined_table, vector.joined_column)]
        stats = [_common_lexemes(qs.db, table, column) or {} for table, column in tables]

        def share(word: str) -> float:  # by its longest run of 3+ letters or digits ("shop-17": "shop")
            runs = sorted(_DRIVER.findall(word), key=len)
            return _prefix_share(runs[-1].lower(), stats) if runs else 1.0  # "11", "n": prefix too many words

        # Ties (no statistics yet): the word with more digits (ids and numbers are rarer than prose), then longer.
        word = min(words, key=lambda w: (share(w), -sum(ch.isdigit() for ch in w), -len(w)))
        if share(word) <= RARE_FRACTION:
            return (prefix_tsquery(word),)
        shared = [prefix_tsquery(w) for w in words if share(w) <= SHARED_FRACTION]
        return tuple(shared) if len(shared) >= 2 else None
    if len(words) < 2 or not isinstance(vector, SearchColumn):
        return None
    candidates = [w.lower() for w in words if _DRIVER.fullmatch(w)]
    common = _common_lexemes(qs.db, qs.model._meta.db_table, vector.name) if candidates else None
    if common is None:
        return None
    share = {w: _prefix_share(w, [common]) for w in candidates}
    word = min(candidates, key=lambda w: (share[w], -len(w)))
    return f"'{word}':*" if share[word] <= RARE_FRACTION else None


def _prefix_share(prefix: str, stats: list[dict[str, float]]) -> float:
    """The share of rows holding a lexeme that starts with ``prefix``, summed over columns' common lexemes."""
    return sum(f for common in stats for lexeme, f in common.items() if lexeme.startswith(prefix))


def _common_lexemes(using: str, table: str, column: str) -> dict[str, float] | None:
    """The most common lexemes of ``column`` in ``table``, each with the share of rows holding it
    (None before its first ANALYZE), kept ``COMMON_LEXEMES_TTL`` seconds per process."""
    connection = connections[using]
    key = (connection.settings_dict["NAME"], table, column)
    now = time.monotonic()
    cached = _common.get(key)
    if cached is None or now - cached[0] > COMMON_LEXEMES_TTL:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
                " WHERE schemaname = current_schema() AND tablename = %s AND attname = %s",
                [table, column],
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
