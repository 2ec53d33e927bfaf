"""Small database helpers shared by the apps' services."""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import Model
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery


def commit_without_waiting_for_disk() -> None:
    """Inside a transaction: let its COMMIT return before its WAL is flushed
    to disk (``synchronous_commit = off`` for this transaction only). The
    transaction stays atomic and is durable within ~3 × wal_writer_delay; a
    crash of the database server (not of the app) in that window loses it
    whole. For bookkeeping on a request's critical path (the retrieval log),
    never for what a client was promised is stored."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")


def insert_without_waiting_for_disk(*objs: Model) -> None:
    """Insert the unsaved model instances ``objs`` (none referring to another
    of them) in ONE statement whose commit does not wait for the WAL flush
    (as commit_without_waiting_for_disk; inside a caller's transaction, for
    the rest of it): atomic on its own, one round trip instead of BEGIN, SET,
    one INSERT each, COMMIT. Each instance gets its primary key and is saved
    as ``create`` leaves it; an ``auto_now``/``auto_now_add`` field the caller
    set keeps its value (so another of ``objs`` can be derived from it), an
    empty one is filled in as ``create`` would. No model signals are sent,
    and ``save()`` overrides are not called: only for models that have
    neither."""
    ctes, params, returned = insert_ctes(objs)
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {ctes} SELECT {', '.join(returned)} FROM async_commit", params)
        row = cursor.fetchone()
    for obj, pk in zip(objs, row, strict=True):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias


def insert_ctes(objs) -> tuple[str, list, list[str]]:
    """The common table expressions of insert_without_waiting_for_disk's
    statement for ``objs`` (``async_commit``, then ``i0``, ``i1``, … inserting
    each, values as Django's insert compiler writes them), their parameters,
    and a select expression for each new primary key, for a caller that
    writes in its own statement (``… SELECT <those> FROM async_commit``: the
    final select must read ``async_commit``, or the setting is never made).
    A value may be a RawSQL without parameters reading an earlier CTE of the
    caller's statement. Fills the empty auto_now/auto_now_add fields first.
    Compiled once per tuple of models and RawSQL values (the SQL depends on
    nothing else: no other expression, no field with its own placeholder);
    each call only prepares the plain values, as Django's insert compiler
    does (``get_db_prep_save``)."""
    models = tuple(type(obj) for obj in objs)
    fields = [_insert_fields(model) for model in models]
    for obj, obj_fields in zip(objs, fields, strict=True):
        for f in obj_fields:
            if (getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)) and getattr(obj, f.attname) is None:
                f.pre_save(obj, add=True)
    values = [[getattr(obj, f.attname) for f in obj_fields] for obj, obj_fields in zip(objs, fields, strict=True)]
    raw = tuple(
        tuple((n, v.sql) for n, v in enumerate(row) if isinstance(v, RawSQL) and not v.params) for row in values
    )
    plain = [
        [(f, v) for n, (f, v) in enumerate(zip(fs, row, strict=True)) if n not in dict(r)]
        for fs, row, r in zip(fields, values, raw, strict=True)
    ]
    if any(hasattr(v, "resolve_expression") for row in plain for _f, v in row) or any(
        hasattr(f, "get_placeholder") for obj_fields in fields for f in obj_fields
    ):
        return _insert_ctes_compiled(objs)
    ctes, returned = _insert_ctes_cached(models, raw)
    return ctes, [f.get_db_prep_save(v, connection=connection) for row in plain for f, v in row], returned


def _insert_fields(model: type[Model]) -> list:
    meta = model._meta
    return [f for f in meta.concrete_fields if f is not meta.auto_field]


def _insert_ctes_compiled(objs) -> tuple[str, list, list[str]]:
    """insert_ctes through Django's insert compiler (values as they are: raw, pre_save done)."""
    parts, params = [], []
    for obj in objs:
        query = InsertQuery(type(obj))
        query.insert_values(_insert_fields(type(obj)), [obj], raw=True)
        compiler = query.get_compiler(connection=connection)
        compiler.returning_fields = [obj._meta.pk]
        [(sql, sql_params)] = compiler.as_sql()
        parts.append(f"i{len(parts)} AS ({sql})")
        params.extend(sql_params)
    returned = [f"(SELECT {connection.ops.quote_name(o._meta.pk.column)} FROM i{n})" for n, o in enumerate(objs)]
    ctes = f"async_commit AS (SELECT set_config('synchronous_commit', 'off', true)), {', '.join(parts)}"
    return ctes, params, returned


@cache
def _insert_ctes_cached(
    models: tuple[type[Model], ...], raw: tuple[tuple[tuple[int, str], ...], ...]
) -> tuple[str, list[str]]:
    """_insert_ctes_compiled's SQL for instances of ``models`` whose fields at
    the positions of ``raw`` hold RawSQL(sql) and the others plain values:
    one placeholder per plain value, whatever the values."""
    objs = [model() for model in models]
    for obj, model, row in zip(objs, models, raw, strict=True):
        for n, sql in row:
            setattr(obj, _insert_fields(model)[n].attname, RawSQL(sql, []))
    ctes, _params, returned = _insert_ctes_compiled(objs)
    return ctes, returned
