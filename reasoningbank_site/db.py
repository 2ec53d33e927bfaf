"""Database helpers the trajectories app's services still use. Nothing else
imports them: each goes once its last caller uses the ORM (``bulk_create``,
``update``, querysets) instead, and then this module."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from functools import cache, lru_cache

from django.contrib.postgres.fields import ArrayField
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import BooleanField, Model, QuerySet, UniqueConstraint
from django.db.models.constants import OnConflict
from django.db.models.expressions import RawSQL
from django.db.models.query import MAX_GET_RESULTS, get_related_populators
from django.db.models.sql import InsertQuery, Query, UpdateQuery
from django.db.transaction import TransactionManagementError


def _insert_fields(model: type[Model]) -> list:
    meta = model._meta
    return [f for f in meta.concrete_fields if f is not meta.auto_field]


def _auto_now_fill(objs, fields) -> None:
    """Fill in each empty ``auto_now``/``auto_now_add`` field of ``objs`` (one
    model's instances with its insert ``fields``) as ``create`` would."""
    auto = [f for f in fields if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)]
    for obj in objs:
        for f in auto:
            if getattr(obj, f.attname) is None:
                f.pre_save(obj, add=True)


def _insert_ctes(groups: Sequence[Sequence[Model]]) -> tuple[list[str], list]:
    """One WITH part ``i<n> AS (INSERT … RETURNING pk)`` per group of one
    model's instances, as Django's insert compiler writes it (values as they
    are: raw, pre_save done), and their parameters: what insert_together and
    insert_unless_taken put in their one statement."""
    parts, params = [], []
    for objs in groups:
        model = type(objs[0])
        query = InsertQuery(model)
        query.insert_values(_insert_fields(model), objs, raw=True)
        compiler = query.get_compiler(connection=connection)
        compiler.returning_fields = [model._meta.pk]
        [(sql, sql_params)] = compiler.as_sql()
        parts.append(f"i{len(parts)} AS ({sql})")
        params.extend(sql_params)
    return parts, params


def without_waiting_for_disk(queryset: QuerySet) -> QuerySet:
    """``queryset`` filtered by ``set_config('synchronous_commit', 'off', true)``:
    the transaction that runs a statement of it that finds a row commits
    without waiting for the WAL flush,
    with no SET statement of its own; an UPDATE of it run outside a
    transaction is its own: one round trip, no BEGIN or COMMIT. The
    condition is evaluated for the rows the other conditions leave (a row
    found or written passed it); with no row written there is nothing to
    flush. Inside a transaction it holds for the whole of it: only for a
    transaction whose every write may be lost that way."""
    return queryset.filter(_ASYNC_COMMIT)


_ASYNC_COMMIT = RawSQL("set_config('synchronous_commit', 'off', true) = 'off'", (), output_field=BooleanField())


def insert_together(*groups: Sequence[Model]) -> None:
    """Insert the unsaved model instances of ``groups`` (each a list of one
    model's instances; none referring to another instance of ``groups``) in
    ONE statement, one round trip instead of one ``bulk_create`` each; joins
    the caller's transaction, or is atomic on its own. Each instance gets its
    primary key and is saved as ``bulk_create`` leaves it; an empty
    ``auto_now``/``auto_now_add`` field is filled in as ``bulk_create`` would.
    No model signals are sent, and ``save()`` overrides are not called: only
    for models that have neither (as ``bulk_create``). The statement is
    compiled once per shape (the models and their numbers of rows) when every
    value is plain."""
    groups = tuple(list(g) for g in groups if g)
    if not groups:
        return
    sql, params = _insert_together_sql(groups)
    with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:  # as create and bulk_create
        cursor.execute(sql, params)
        row = cursor.fetchone()
    for objs, pks in zip(groups, row, strict=True):
        for obj, pk in zip(objs, pks, strict=True):
            obj.pk = pk
            obj._state.adding, obj._state.db = False, connection.alias


def _insert_together_sql(groups: tuple[list[Model], ...], *, cached: bool = True) -> tuple[str, list]:
    """insert_together's statement for ``groups`` (auto_now fields filled in)
    and its parameters: from the cache when every value is plain
    (``_insert_values``), the parameters prepared as Django's insert compiler
    does (``_prepared``; one array per column where it inserts several rows
    through UNNEST)."""
    fields, values, plain = _insert_values(groups)
    if not (cached and plain):
        return _insert_together_compiled(groups)
    sql, unnest = _insert_together_sql_cached(tuple((type(objs[0]), len(objs)) for objs in groups))
    params = []
    for group_fields, rows, columns in zip(fields, values, unnest, strict=True):
        params.extend(_prepared(group_fields, rows, unnest=columns))
    return sql, params


def _insert_values(groups: Sequence[Sequence[Model]]) -> tuple[list[list], list[list[list]], bool]:
    """For groups of one model's instances each: each group's insert fields,
    each row's values (empty auto_now fields filled in first), and whether
    every value is plain, so that the statement is the same for any such rows
    and can be compiled once: no value is an expression and no field has a
    placeholder of its own but an array's cast."""
    fields = [_insert_fields(type(objs[0])) for objs in groups]
    for objs, group_fields in zip(groups, fields, strict=True):
        _auto_now_fill(objs, group_fields)
    values = [[[getattr(o, f.attname) for f in fs] for o in objs] for objs, fs in zip(groups, fields, strict=True)]
    plain = all(
        getattr(type(f), "get_placeholder", None) in _FIXED_PLACEHOLDERS for fs in fields for f in fs
    ) and not any(
        hasattr(v, "resolve_expression") or hasattr(v, "as_sql") for rows in values for row in rows for v in row
    )
    return fields, values, plain


def _prepared(fields, rows, *, unnest: bool = False) -> list:
    """The parameters of ``rows`` (values of ``fields``), prepared as Django's
    insert compiler does (``get_db_prep_save``): row after row, or with
    ``unnest`` one array per column (several rows inserted through UNNEST)."""
    prepared = [
        [f.get_db_prep_save(v, connection=connection) for f, v in zip(fields, row, strict=True)] for row in rows
    ]
    return list(map(list, zip(*prepared))) if unnest else [p for row in prepared for p in row]


# A field's placeholder that does not depend on the value (an array's cast): the statement is the same for any rows.
_FIXED_PLACEHOLDERS = (None, ArrayField.get_placeholder)


def _insert_together_compiled(groups) -> tuple[str, list]:
    """insert_together's statement and parameters as the insert compiler writes them."""
    parts, params = _insert_ctes(groups)
    # A statement's sequence values grow in the order of its rows: ordered by key, they are the instances' order.
    pks = [connection.ops.quote_name(g[0]._meta.pk.column) for g in groups]
    returned = ", ".join(f"(SELECT array_agg({pk} ORDER BY {pk}) FROM i{n})" for n, pk in enumerate(pks))
    return f"WITH {', '.join(parts)} SELECT {returned}", params


@lru_cache(maxsize=256)
def _insert_together_sql_cached(shape: tuple[tuple[type[Model], int], ...]) -> tuple[str, tuple[bool, ...]]:
    """_insert_together_compiled's statement for groups of ``shape`` ((model,
    number of rows) each) with plain values, and for each group whether the
    compiler inserts its rows through UNNEST (one parameter per column)."""
    groups = tuple([model() for _ in range(count)] for model, count in shape)
    for objs in groups:
        _auto_now_fill(objs, _insert_fields(type(objs[0])))
    unnest = tuple(
        count > 1 and len(_insert_ctes([objs])[1]) == len(_insert_fields(model))
        for (model, count), objs in zip(shape, groups, strict=True)
    )
    return _insert_together_compiled(groups)[0], unnest


def insert_unless_taken(obj: Model, constraint: str) -> bool:
    """Insert the unsaved model instance ``obj`` unless a row already holds
    its values of its model's UniqueConstraint named ``constraint`` (the
    constraint's condition is part of the conflict target, as PostgreSQL
    needs for a partial unique index): ONE statement, ``INSERT … ON CONFLICT
    (its fields) [WHERE its condition] DO NOTHING RETURNING pk``, instead of
    a savepoint around an insert that may fail. A row another transaction
    inserted and has not committed yet is waited for, as the unique index
    does: taken if it commits, free if it rolls back. Any other constraint
    violation raises IntegrityError as an insert does. Returns True when
    ``obj`` was inserted (it then has its primary key and is saved as
    insert_together leaves it). Joins the caller's transaction, or is atomic
    on its own; no model signals are sent and ``save()`` is not called (as
    insert_together). The statement is compiled once per model and
    constraint when every value is plain (``_insert_values``)."""
    fields, values, plain = _insert_values([[obj]])
    if plain:
        sql = _insert_unless_taken_sql_cached(type(obj), constraint)
        params = _prepared(fields[0], values[0])
    else:
        sql, params = _insert_unless_taken_sql(obj, constraint)
    with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    obj.pk = row[0]
    obj._state.adding, obj._state.db = False, connection.alias
    return True


def _insert_unless_taken_sql(obj: Model, constraint: str) -> tuple[str, list]:
    """insert_unless_taken's statement for ``obj`` and its parameters: the one
    ``bulk_create([obj], ignore_conflicts=True)`` writes, with its primary key
    returned and ``constraint`` as the conflict target (``ON CONFLICT DO
    NOTHING`` would also swallow a conflict on any other unique column)."""
    model = type(obj)
    query = InsertQuery(model, on_conflict=OnConflict.IGNORE)
    query.insert_values(_insert_fields(model), [obj], raw=True)
    compiler = query.get_compiler(connection=connection)
    compiler.returning_fields = [model._meta.pk]
    [(sql, params)] = compiler.as_sql()
    assert sql.count(" ON CONFLICT DO NOTHING ") == 1, sql
    return sql.replace(" ON CONFLICT DO NOTHING ", f" {_conflict_target(model, constraint)} DO NOTHING "), params


@cache
def _insert_unless_taken_sql_cached(model: type[Model], constraint: str) -> str:
    """_insert_unless_taken_sql's statement for an instance of ``model`` with plain values."""
    obj = model()
    _auto_now_fill([obj], _insert_fields(model))
    return _insert_unless_taken_sql(obj, constraint)[0]


def _conflict_target(model: type[Model], name: str) -> str:
    """``ON CONFLICT ("a", "b") [WHERE condition]``: the unique index of ``model``'s constraint ``name`` as the arbiter."""
    [constraint] = [c for c in model._meta.constraints if c.name == name]
    assert isinstance(constraint, UniqueConstraint) and constraint.fields and not constraint.expressions, constraint
    quote = connection.ops.quote_name
    columns = ", ".join(quote(model._meta.get_field(field).column) for field in constraint.fields)
    target = f"ON CONFLICT({columns})"
    if constraint.condition is not None:
        query = Query(model=model, alias_cols=False)
        condition, params = query.build_where(constraint.condition).as_sql(
            query.get_compiler(connection=connection), connection
        )
        assert not params, constraint  # a literal in the condition would need quoting, as the index's DDL does
        target += f" WHERE {condition}"
    return target


def update_sql(queryset: QuerySet, values: dict) -> tuple[str, tuple]:
    """The statement ``queryset.update(**values)`` runs and its parameters,
    without running it: for a statement compiled once (its parameters then
    prepared by the caller, as the update compiler does: ``get_db_prep_save``)."""
    query = queryset.query.chain(UpdateQuery)
    query.add_update_values(values)
    return query.get_compiler(connection=connection).as_sql()


def instances_fetched(model: type[Model], sql: str, params) -> list:
    """What ``list(model.objects.raw(sql, params))`` returns (instances from
    the columns named after their fields, the others as attributes; field
    values through the converters the ORM's compiler lists; missing fields
    deferred), without RawQuerySet's per-call resolution of the columns: for
    a statement compiled once (issue 14)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names, positions, converters, extra = _instances_layout(model, tuple(c.name for c in cursor.description))
        rows = cursor.fetchall()
    instances = []
    for row in rows:
        values = [row[pos] for pos in positions]
        for index, (functions, col) in converters:
            for convert in functions:
                values[index] = convert(values[index], col, connection)
        instance = model.from_db(connection.alias, names, values)
        for name, pos in extra:
            setattr(instance, name, row[pos])
        instances.append(instance)
    return instances


@lru_cache(maxsize=64)
def _instances_layout(model: type[Model], columns: tuple[str, ...]):
    """For a result of ``model`` with ``columns``: the field attnames and their
    positions, each field's converters (as the ORM's compiler lists them), and
    the other columns (name, position)."""
    by_column = {f.column: f for f in model._meta.concrete_fields}
    names, positions, converters, extra = [], [], [], []
    for pos, name in enumerate(columns):
        f = by_column.get(name)
        if f is None:
            extra.append((name, pos))
            continue
        col = f.get_col(model._meta.db_table)
        functions = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if functions:
            converters.append((len(names), (functions, col)))
        names.append(f.attname)
        positions.append(pos)
    assert model._meta.pk.attname in names, columns
    return names, positions, converters, extra


# A key no row has, standing for the one a compiled statement is run with (SelectCompiledOnce).
_KEY = -7_654_321_987_654


class SelectCompiledOnce:
    """The ORM's SELECT of ``build(key)`` — model instances filtered by one
    primary key — compiled once per database connection (issue 14: building
    and compiling such a statement was ~0.5–1.5 ms of Python each time the
    stages ran it). A call runs the same statement with its key in place and
    builds the instances as the ORM's ModelIterable does: the selected
    fields (the others deferred), the select_related objects, the
    annotations, each through its converters. For querysets with no
    prefetching and no extra select columns (checked when compiled)."""

    def __init__(self, build: Callable[[int], QuerySet]):
        self.build = build
        self._compiled = weakref.WeakKeyDictionary()  # per connection: the converters are the compiler's

    def _compile(self):
        wrapper = connections[DEFAULT_DB_ALIAS]
        compiled = self._compiled.get(wrapper)
        if compiled is None:
            queryset = self.build(_KEY)
            assert not queryset._prefetch_related_lookups and not queryset._known_related_objects, queryset
            compiler = queryset.query.get_compiler(connection=wrapper)
            sql, params = compiler.as_sql()
            at = [n for n, p in enumerate(params) if p == _KEY]
            assert len(at) == 1 and not compiler.has_extra_select, sql
            select, klass_info = compiler.select, compiler.klass_info
            start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
            compiled = self._compiled[wrapper] = (
                queryset.model,
                sql,
                list(params),
                at[0],
                bool(queryset.query.select_for_update),
                compiler,
                (start, end, [f[0].target.attname for f in select[start:end]]),
                get_related_populators(klass_info, select, wrapper.alias),
                list(compiler.annotation_col_map.items()),
            )
        return compiled

    def sql_with_params(self, key) -> tuple[str, tuple]:
        """The statement and its parameters for ``key``."""
        model, sql, params, at, *_rest = self._compile()
        params = list(params)
        params[at] = model._meta.pk.get_db_prep_value(key, connection)
        return sql, tuple(params)

    def __call__(self, key) -> list:
        """The instances, as ``list(build(key))``."""
        model, _sql, _params, _at, for_update, compiler, (start, end, names), populators, annotations = self._compile()
        if for_update and connection.get_autocommit():  # as the ORM's compiler refuses it
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        with connection.cursor() as cursor:
            cursor.execute(*self.sql_with_params(key))
            rows = cursor.fetchall()
        instances = []
        for row in compiler.results_iter([rows]):
            instance = model.from_db(connection.alias, names, row[start:end])
            for populator in populators:
                populator.populate(row, instance)
            for name, pos in annotations:
                setattr(instance, name, row[pos])
            instances.append(instance)
        return instances

    def get(self, key):
        """The one instance, as ``build(key).get()``: raises the model's DoesNotExist when there is none."""
        instances = self(key)
        if len(instances) == 1:
            return instances[0]
        model = self._compile()[0]
        if not instances:
            raise model.DoesNotExist(f"{model._meta.object_name} matching query does not exist.")
        raise model.MultipleObjectsReturned(f"get() returned more than one {model._meta.object_name}.")


def queryset_as_get(queryset: QuerySet) -> QuerySet:
    """``queryset`` as ``get()`` runs it (no ordering, at most MAX_GET_RESULTS rows): for SelectCompiledOnce.get."""
    return queryset.order_by()[:MAX_GET_RESULTS]
