"""Small database helpers shared by the apps' services."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from django.db import connection
from django.db.models import BooleanField, Model, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery


def insert_without_waiting_for_disk(*objs: Model) -> None:
    """Insert the unsaved model instances ``objs`` (none referring to another
    of them) in ONE statement whose commit does not wait for the WAL flush
    (``synchronous_commit = off``: the transaction stays atomic and is durable
    within ~3 × wal_writer_delay; a crash of the database server, not of the
    app, in that window loses it whole; inside a caller's transaction, for
    the rest of it): atomic on its own, one round trip instead of BEGIN, SET,
    one INSERT each, COMMIT. Each instance gets its primary key and is saved
    as ``create`` leaves it; an ``auto_now``/``auto_now_add`` field the caller
    set keeps its value (so another of ``objs`` can be derived from it), an
    empty one is filled in as ``create`` would. No model signals are sent,
    and ``save()`` overrides are not called: only for models that have
    neither. The statement is compiled once per tuple of models (its SQL
    depends on nothing else when every value is plain: no expression, no
    field with its own placeholder); each call only prepares the values, as
    Django's insert compiler does (``get_db_prep_save``)."""
    models = tuple(type(obj) for obj in objs)
    fields = [_insert_fields(model) for model in models]
    for obj, obj_fields in zip(objs, fields, strict=True):
        _auto_now_fill([obj], obj_fields)
    values = [[getattr(obj, f.attname) for f in obj_fields] for obj, obj_fields in zip(objs, fields, strict=True)]
    if any(hasattr(v, "resolve_expression") for row in values for v in row) or any(
        hasattr(f, "get_placeholder") for obj_fields in fields for f in obj_fields
    ):
        sql, params = _insert_sql(objs)
    else:
        sql = _insert_sql_cached(models)
        params = [
            f.get_db_prep_save(v, connection=connection)
            for obj_fields, row in zip(fields, values, strict=True)
            for f, v in zip(obj_fields, row, strict=True)
        ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    for obj, pk in zip(objs, row, strict=True):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias


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
    insert_without_waiting_for_disk put in their one statement."""
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


def _insert_sql(objs) -> tuple[str, list]:
    """insert_without_waiting_for_disk's statement for ``objs`` (one row each)
    and its parameters."""
    parts, params = _insert_ctes([[obj] for obj in objs])
    returned = ", ".join(
        f"(SELECT {connection.ops.quote_name(o._meta.pk.column)} FROM i{n})" for n, o in enumerate(objs)
    )
    sql = (
        f"WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)), {', '.join(parts)} "
        f"SELECT {returned} FROM async_commit"
    )
    return sql, params


@cache
def _insert_sql_cached(models: tuple[type[Model], ...]) -> str:
    """_insert_sql's statement for instances of ``models`` with plain values:
    one placeholder per field, whatever the values."""
    return _insert_sql([model() for model in models])[0]


def without_waiting_for_disk(queryset: QuerySet) -> QuerySet:
    """``queryset`` filtered by ``set_config('synchronous_commit', 'off', true)``:
    the transaction that runs a statement of it that finds a row commits
    without waiting for the WAL flush (as insert_without_waiting_for_disk),
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
    for models that have neither (as ``bulk_create``)."""
    groups = tuple(list(g) for g in groups if g)
    if not groups:
        return
    for objs in groups:
        _auto_now_fill(objs, _insert_fields(type(objs[0])))
    parts, params = _insert_ctes(groups)
    # A statement's sequence values grow in the order of its rows: ordered by key, they are the instances' order.
    pks = [connection.ops.quote_name(g[0]._meta.pk.column) for g in groups]
    returned = ", ".join(f"(SELECT array_agg({pk} ORDER BY {pk}) FROM i{n})" for n, pk in enumerate(pks))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT {returned}", params)
        row = cursor.fetchone()
    for objs, pks in zip(groups, row, strict=True):
        for obj, pk in zip(objs, pks, strict=True):
            obj.pk = pk
            obj._state.adding, obj._state.db = False, connection.alias
