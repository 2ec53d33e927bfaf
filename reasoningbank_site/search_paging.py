"""Paging of long and searched lists.

``SearchPaginator`` pages a searched list without letting PostgreSQL walk the
list's sort index and re-parse every row's text (its estimate of how many rows
a prefix query matches is rough, and a wrong guess cost 300 ms at 100k items):
one query reads the keys of the first ``SEARCH_COUNT_CAP`` + 1 matches in the
list's order, the page is cut from them in Python and fetched by primary key
(without matching the text a second time).

Long unsearched lists count at most ``LIST_COUNT_CAP`` rows ("10000+")."""

from __future__ import annotations

from functools import cached_property

from django.core.exceptions import EmptyResultSet, FieldDoesNotExist
from django.core.paginator import Paginator
from django.db import connections, models
from django.db.models import QuerySet

from reasoningbank_site.search import JoinedSearchColumn, TextMatch, is_text_searched

SEARCH_COUNT_CAP = 1000  # matches counted exactly; beyond, the pager says "1000+"


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
    if _shared_drive(match) and not qs.query.distinct and (walked := _walked_keys(head, match)) is not None:
        return walked
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


WALK_ROWS = 10_000  # a joined document's shared-word search first checks this many rows of the list's head


def _shared_drive(match) -> bool:
    """Whether ``match`` (the filter _without_text_match took out) is a joined document's search driven by
    several words together (no rare one)."""
    text = getattr(match, "lhs", None)
    return isinstance(text, TextMatch) and isinstance(text.vector, JoinedSearchColumn) and len(text.drive or ()) > 1


def _walked_keys(head: QuerySet, match) -> list | None:
    """The keys of the first ``SEARCH_COUNT_CAP`` + 1 matches when the list's first ``WALK_ROWS`` rows, each
    checked in the list's order (no index), hold that many; else None. Words each in some rows that often
    meet (one row in eight at 1M trajectories: 0.1 s) are found this way; the driven search read every row
    the words share and checked each (1.5 s), and stays for words that rarely meet (the walk reads all
    ``WALK_ROWS``, 0.1 s at most, before it)."""
    walk = TextMatch(match.lhs.vector, match.lhs.query)  # no drive: each row of the head checked
    sql, params = head.annotate(_hit=walk).values_list("pk", "_hit")[:WALK_ROWS].query.sql_with_params()
    with connections[head.db].cursor() as cursor:
        cursor.execute(f"SELECT * FROM ({sql}) h WHERE h._hit LIMIT {SEARCH_COUNT_CAP + 1}", params)
        found = [row[0] for row in cursor.fetchall()]
    return found if len(found) > SEARCH_COUNT_CAP else None


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
