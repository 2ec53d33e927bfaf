"""audit_record: any service writes the same audit entry. Against the real database."""

import pytest

from accounts import services


def test_audit_record_from_any_service(bank, owner):
    event = services.audit_record(
        action="memory_item.approve",
        bank=bank,
        user=owner,
        obj=bank,
        before={"status": "proposed"},
        after={"status": "approved"},
    )
    assert event.team == bank.team and event.object_id == str(bank.public_id) and event.object_type == "bank"
    with pytest.raises(ValueError):
        services.audit_record(action="x.y")
