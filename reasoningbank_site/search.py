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

``SearchPaginator`` pages a searched list without letting PostgreSQL walk the
list's sort index and re-parse every row's text (its estimate of how many rows
a prefix query matches is rough, and a wrong guess cost 300 ms at 100k items):
one query reads the keys of the first ``SEARCH_COUNT_CAP`` + 1 matches in the
list's order, the page is cut from them in Python and fetched by primary key
(without matching the text a second time)."""

from __future__ import annotations

import re
import time
from functools import cached_property

from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import EmptyResultSet, FieldDoesNotExist
from django.core.paginator import Paginator
from django.db import connections, models
from django.db.models import BooleanField, Expression, QuerySet

SEARCH_CONFIG = "simple"
SEARCH_MAX_CHARS = 200
SEARCH_MAX_WORDS = 12
SEARCH_COUNT_CAP = 1000  # matches counted exactly; beyond, the pager says "1000+"
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


# The list pages' sort fields (numeric and date); a list sorted otherwise is paged as by Paginator.
_SORTABLE = (models.DateTimeField, models.DateField, models.IntegerField, models.AutoField, models.FloatField)


def _sort_keys(qs: QuerySet) -> list[tuple[str, bool]] | None:
    """(field, descending) for each ORDER BY term of ``qs``; None unless all
    are plain numeric or date fields."""
    keys = []
    for term in qs.query.order_by:
        if not isinstance(term, str) or term == "?" or "__" in term:
            return None
        name = term.lstrip("-")
        try:
            field = qs.model._meta.pk if name == "pk" else qs.model._meta.get_field(name)
        except FieldDoesNotExist:
            return None
        if not isinstance(field, _SORTABLE):
            return None
        keys.append((name, term.startswith("-")))
    return keys or None


class SearchPaginator(Paginator):
    """A Paginator that, for a text-searched queryset ordered by plain fields,
    counts at most ``SEARCH_COUNT_CAP`` matches (``capped`` when there are
    more), reading the keys of the first ``SEARCH_COUNT_CAP`` + 1 in the
    queryset's order in one query (answered from the GIN index), and fetches
    a page's rows by primary key. When the head of the list decides the cap
    (a word in most rows), the page is the queryset's own ordered slice:
    matches are dense, so the sort index finds a page quickly. Any other
    queryset is paged as by Paginator."""

    def __init__(self, object_list, per_page, **kwargs):
        super().__init__(object_list, per_page, **kwargs)
        self._keys = _sort_keys(object_list) if is_text_searched(object_list) else None
        self._matches: list | None = None  # primary keys of every match, in order, below the cap
        self.capped = False

    @cached_property
    def count(self) -> int:
        if self._keys is None:
            return _capped_count(self)
        try:
            self._matches = _ordered_keys(self.object_list, self._keys)
        except EmptyResultSet:  # a filter that can match nothing (none(), pk__in=[]): Django has no SQL for it
            self._matches = []
        if self._matches is None or len(self._matches) > SEARCH_COUNT_CAP:
            self.capped = True
            if self._matches is not None:
                del self._matches[SEARCH_COUNT_CAP:]  # the pages of the first 1,000 (as many as the pager offers)
            return SEARCH_COUNT_CAP
        return len(self._matches)

    def page(self, number):
        number = self.validate_number(number)  # reads count
        if self._matches is None:
            return _page_by_keys(self, number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        wanted = self._matches[bottom:top]
        found = {row.pk: row for row in _by_primary_key(self.object_list, wanted)}
        return self._get_page([found[pk] for pk in wanted if pk in found], number, self)


def _page_by_keys(paginator: Paginator, number: int):
    """Page ``number`` of ``paginator``'s unsearched list. Past the first page
    of a queryset, the page's primary keys are read first (only the keys, in
    the list's order, under its OFFSET) and its rows fetched by them: a list
    whose rows carry per-row subqueries (the queue's risk counts, versions,
    votes, presence) otherwise computed them for every row the OFFSET skips
    (20,000 rows, 370 ms, on a queue's page 400)."""
    qs = paginator.object_list
    if number == 1 or not isinstance(qs, QuerySet) or qs.query.distinct:
        return Paginator.page(paginator, number)
    bottom = (number - 1) * paginator.per_page
    top = bottom + paginator.per_page
    if top + paginator.orphans >= paginator.count:
        top = paginator.count
    wanted = list(qs.values_list("pk", flat=True)[bottom:top])
    found = {row.pk: row for row in qs.order_by().filter(pk__in=wanted)}
    return paginator._get_page([found[pk] for pk in wanted if pk in found], number, paginator)


def _capped_count(paginator) -> int:
    """How many rows ``paginator`` lists, counting a queryset's at most
    ``LIST_COUNT_CAP`` (``paginator.capped`` when there are more)."""
    qs = paginator.object_list
    if not isinstance(qs, QuerySet):
        return Paginator.count.func(paginator)
    n, capped = capped_count(qs)
    paginator.capped = paginator.capped or capped
    return n


DENSE_HEAD_MISSES = 50  # the list's first 1,050 rows holding fewer misses than this: more than 1,000 matches


def _ordered_keys(qs: QuerySet, keys: list[tuple[str, bool]]) -> list | None:
    """The primary keys of the first ``SEARCH_COUNT_CAP`` + 1 matches of
    ``qs`` in its order (``keys``): only the keys come back (reading the sort
    fields into Python and sorting them there cost ~3 ms of CPU for 639
    matches), and past the cap they give the pages too (the ordered slice of a
    page searched the text once more: 5-15 ms at 100k).

    None, without that search, when the list's first ``SEARCH_COUNT_CAP`` +
    ``DENSE_HEAD_MISSES`` rows in its own order miss the text fewer than
    ``DENSE_HEAD_MISSES`` times (more than the cap match). PostgreSQL cannot
    estimate a prefix match in a table with fewer than 100 common words (it
    guesses 2% of the rows) and answered a word in every row from the GIN
    index, a bitmap of all 100k (15-25 ms under load); this probe walks the
    sort index and stops at its 50th miss (0.1 ms for a rare word, 1 ms for a
    word in every row). One statement: the search runs only when the probe
    cannot decide."""
    fields = [name for name, _ in keys if name != "pk"]  # the key is read as "pk" anyway
    sql, params = qs.values_list("pk", *fields)[: SEARCH_COUNT_CAP + 1].query.sql_with_params()
    connection = connections[qs.db]
    quote = connection.ops.quote_name
    order = ", ".join(f"found.{quote(name)}{' DESC' if descending else ''}" for name, descending in keys)
    head, match = _without_text_match(qs)
    if match is None or qs.query.distinct:
        dense, dense_params = "false", []
    else:  # the list's head in its order, each row with whether it matches
        head_sql, head_params = (
            head.annotate(_hit=match)
            .values_list("_hit")[: SEARCH_COUNT_CAP + DENSE_HEAD_MISSES]
            .query.sql_with_params()
        )
        dense = (
            f"CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM ({head_sql}) h WHERE NOT h._hit LIMIT {DENSE_HEAD_MISSES}) misses)"
            f" < {DENSE_HEAD_MISSES} THEN EXISTS (SELECT 1 FROM ({head_sql}) h WHERE h._hit OFFSET {SEARCH_COUNT_CAP}) ELSE false END"
        )
        dense_params = [*head_params, *head_params]
    statement = (
        f"SELECT probe.dense, found.pk FROM (SELECT {dense} AS dense OFFSET 0) probe"  # OFFSET 0: one probe, not one per use
        # OFFSET 0 again: the gate stays a one-time filter above the search (pulled up, it ran the search and filtered after)
        f" LEFT JOIN LATERAL (SELECT * FROM ({sql}) matched WHERE NOT probe.dense OFFSET 0) found ON true ORDER BY {order}"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, [*dense_params, *params])
        rows = cursor.fetchall()
    if rows[0][0]:
        return None
    return [pk for _, pk in rows if pk is not None]


def _without_text_match(qs: QuerySet) -> tuple[QuerySet, object]:
    """``qs`` without its text match, and that match (None, and ``qs``
    unchanged, unless it is one of the AND-ed filters)."""
    qs = qs.all()  # a copy whose filters can be changed here
    where = qs.query.where
    matches = [c for c in where.children if isinstance(getattr(c, "lhs", None), TextMatch)]
    if where.connector != "AND" or where.negated or len(matches) != 1:
        return qs, None
    where.children = [c for c in where.children if c is not matches[0]]
    return qs, matches[0]


def _by_primary_key(qs: QuerySet, pks: list) -> QuerySet:
    """The rows of ``qs`` with primary keys ``pks`` (found by its search a moment
    ago), looked up by primary key under its other filters but not the text
    match again: PostgreSQL guesses a prefix query matches a few rows and would
    answer it from the GIN index once more (4-8 ms at 100k trajectories) rather
    than read the page's 50 rows by key."""
    return _without_text_match(qs)[0].order_by().filter(pk__in=pks)


LIST_COUNT_CAP = 10_000  # rows of a long list counted exactly; beyond, the pager says "10000+"


class CappedPaginator(Paginator):
    """A Paginator that counts at most ``LIST_COUNT_CAP`` rows (``capped``
    when there are more: the pager then says "10000+"), reading no more than
    that many + 1 rows, so a list of millions of rows is never counted whole
    and no page lies past the cap (an OFFSET of at most the cap): older rows
    are reached by narrowing the list with its filters."""

    def __init__(self, object_list, per_page, **kwargs):
        super().__init__(object_list, per_page, **kwargs)
        self.capped = False

    @cached_property
    def count(self) -> int:
        return _capped_count(self)


def capped_count(qs) -> tuple[int, bool]:
    """How many rows ``qs`` holds, counting at most ``LIST_COUNT_CAP`` (reading no more than that many + 1
    rows, in no order: a sorted queryset would sort all its rows first), and whether there are more (then the
    count is the cap: show it as "10000+")."""
    # The keys alone, in no order: any 10,001 rows are read from an index
    # alone (1.5 ms at 1M trajectories; in the list's order, 140 ms).
    n = qs.order_by().values("pk")[: LIST_COUNT_CAP + 1].count()
    if n > LIST_COUNT_CAP:
        return LIST_COUNT_CAP, True
    return n, False
