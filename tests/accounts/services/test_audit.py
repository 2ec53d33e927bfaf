"""audit_record: any service writes the same audit entry. Against the real database."""

import pytest

from accounts.audit.services import audit_record


def test_audit_record_from_any_service(bank, owner):
    event = audit_record(
        action="memory_item.approve",
        bank=bank,
        user=owner,
        obj=bank,
        before={"status": "proposed"},
        after={"status": "approved"},
    )
    assert event.team == bank.team and event.object_id == str(bank.public_id) and event.object_type == "bank"
    with pytest.raises(ValueError):
        audit_record(action="x.y")
