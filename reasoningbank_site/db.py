"""Small database helpers shared by the apps' services."""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import Model
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
    neither. The statement is compiled once per tuple of models (its SQL
    depends on nothing else when every value is plain: no expression, no
    field with its own placeholder); each call only prepares the values, as
    Django's insert compiler does (``get_db_prep_save``)."""
    models = tuple(type(obj) for obj in objs)
    fields = [_insert_fields(model) for model in models]
    for obj, obj_fields in zip(objs, fields, strict=True):
        for f in obj_fields:
            if (getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)) and getattr(obj, f.attname) is None:
                f.pre_save(obj, add=True)
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


def _insert_sql(objs) -> tuple[str, list]:
    """insert_without_waiting_for_disk's statement for ``objs`` as Django's
    insert compiler writes it (values as they are: raw, pre_save done), and
    its parameters."""
    parts, params = [], []
    for obj in objs:
        query = InsertQuery(type(obj))
        query.insert_values(_insert_fields(type(obj)), [obj], raw=True)
        compiler = query.get_compiler(connection=connection)
        compiler.returning_fields = [obj._meta.pk]
        [(sql, sql_params)] = compiler.as_sql()
        parts.append(f"i{len(parts)} AS ({sql})")
        params.extend(sql_params)
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
