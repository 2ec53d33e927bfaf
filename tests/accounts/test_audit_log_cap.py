"""The audit log counts at most LIST_COUNT_CAP events (the pager says "10000+"
past it), a bounded read of the bank's newest events whatever their number,
and offers no page past the cap."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.audit.services import audit_event
from accounts.models import AuditEvent
from accounts.teams.selectors import audit_events
from reasoningbank_site import search_paging


def _counted(response) -> str:
    """The pager's count of events."""
    found = re.search(r"Page 1 of \d+ · (\S+)\s+events", response.content.decode())
    assert found, response.content.decode()[-1500:]
    return found.group(1)


def _events(bank, n: int) -> None:
    AuditEvent.objects.bulk_create(audit_event(action="memory_item.approve", bank=bank) for _ in range(n))


def test_the_audit_log_counts_up_to_the_cap_and_says_so(client, owner, bank, monkeypatch):
    _events(bank, 7)
    client.force_login(owner)
    url = reverse("accounts:bank_audit", kwargs={"bank_id": bank.public_id})
    assert _counted(client.get(url)) == str(AuditEvent.objects.filter(bank=bank).count())  # 7 and the bank's own
    monkeypatch.setattr(search_paging, "LIST_COUNT_CAP", 5)
    assert _counted(client.get(url)) == "5+"
    assert _counted(client.get(reverse("accounts:team_audit", kwargs={"team_id": bank.team.public_id}))) == "5+"


@pytest.mark.django_db
def test_the_audit_count_reads_the_bank_s_newest_events_through_its_index(bank):
    _events(bank, 3000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE accounts_auditevent")
    # The cap's query shape with a cap below the rows seeded (a LIMIT above them reads them all, and a
    # sequential scan is then the right plan): the bank's newest events, read through its index.
    plan = audit_events(team=bank.team, bank=bank)[:101].explain()
    assert plan.lstrip().startswith("Limit"), plan
    assert "Seq Scan on accounts_auditevent" not in plan, plan


def test_the_audit_csv_read_in_small_chunks_equals_the_csv_read_in_one(client, owner, bank, monkeypatch):
    from accounts.audit import views

    stamp = AuditEvent.objects.order_by("-created_at").values_list("created_at", flat=True).first()
    _events(bank, 9)
    same = list(AuditEvent.objects.filter(bank=bank).order_by("id").values_list("id", flat=True)[:4])
    AuditEvent.objects.filter(id__in=same).update(created_at=stamp)  # ties, broken by id
    client.force_login(owner)
    url = reverse("accounts:bank_audit_csv", kwargs={"bank_id": bank.public_id})
    whole = b"".join(client.get(url).streaming_content).decode()
    assert whole.count("\n") == AuditEvent.objects.filter(bank=bank).count() + 1  # the header
    monkeypatch.setattr(views, "CSV_CHUNK", 2)
    with CaptureQueriesContext(connection) as queries:
        chunked = b"".join(client.get(url).streaming_content).decode()
    assert chunked == whole
    reads = [q["sql"] for q in queries if 'FROM "accounts_auditevent"' in q["sql"] and "ORDER BY" in q["sql"]]
    assert len(reads) > 3 and all("LIMIT 2" in sql for sql in reads), reads
