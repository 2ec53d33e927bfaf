"""GET /api/v1/impact: the same numbers as the report, the window, and the scope."""

from __future__ import annotations

from unittest.mock import ANY

import pytest

from tests import factories
from tests.factories import make_arm, make_items, with_holdout
from trajectories.impact.statistics import newcombe_difference, two_proportion_p

# --- GET /api/v1/impact -------------------------------------------------------------------------------


def test_api_reports_the_same_numbers(client, bank, other_bank):
    with_holdout(bank)
    item = make_items(bank, 1)[0]
    make_arm(bank, "treatment", successes=42, failures=18, items=[item])
    make_arm(bank, "holdout", successes=18, failures=42, items=[item])
    make_arm(other_bank, "holdout", successes=99)
    secret = factories.make_token(bank, scopes=("retrieve",))
    response = client.get("/api/v1/impact", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["verdict"] == "helps" and body["days"] is None and body["holdout_configured"] is True
    assert body["treatment"]["judged"] == 60 and body["treatment"]["successes"] == 42
    assert body["holdout"]["judged"] == 60 and body["holdout"]["successes"] == 18
    assert body["difference"]["estimate"] == pytest.approx(0.4)
    assert body["difference"]["ci_low"] == pytest.approx(newcombe_difference(42, 60, 18, 60)[1])
    assert body["items"] == [
        {
            "id": str(item.public_id),
            "title": "Item 0",
            "status": "approved",
            "served_judged": 60,
            "served_successes": 42,
            "served_retrievals": 60,
            "served_success_rate": pytest.approx(0.7),
            "withheld_judged": 60,
            "withheld_successes": 18,
            "withheld_retrievals": 60,
            "withheld_success_rate": pytest.approx(0.3),
            "difference": pytest.approx(0.4),
            "ci_low": pytest.approx(newcombe_difference(42, 60, 18, 60)[1]),
            "ci_high": pytest.approx(newcombe_difference(42, 60, 18, 60)[2]),
            "p_value": pytest.approx(two_proportion_p(42, 60, 18, 60)),
            "shrunk": pytest.approx(0.4, abs=0.1),
            "served_count": 0,
            "may_hurt": False,
            "may_help": True,
        }
    ]
    assert body["difference"]["cs_low"] > 0 and body["difference"]["cs_low"] < body["difference"]["ci_low"]
    assert body["guardrails"] == [
        {"name": "sample_ratio", "ok": True, "p_value": None, "detail": ANY},
        {"name": "reporting", "ok": True, "p_value": pytest.approx(1.0), "detail": ANY},
    ]
    assert body["period"] == {"fraction": None, "after": None, "excluded": 0}
    power = body["power"]
    assert 0.3 < power["mde"] < 0.4  # 60 retrievals per arm detect only a lift of about 36 points
    assert power["more_needed_5"] > power["more_needed_10"] > 1000
    assert body["treatment"]["units"] == 60 and body["treatment"]["report_rate"] == 1.0


def test_api_days_window_and_validation(client, bank):
    make_arm(bank, "treatment", successes=4, days_ago=40)
    make_arm(bank, "treatment", successes=1)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    body = client.get("/api/v1/impact?days=30", **auth).json()
    assert body["days"] == 30 and body["treatment"]["judged"] == 1 and body["verdict"] == "no_holdout"
    assert body["difference"] is None
    for bad in ("0", "-3", "abc", "99999", "1.5"):
        response = client.get(f"/api/v1/impact?days={bad}", **auth)
        assert response.status_code == 422 and response.json()["code"] == "validation_error", bad


def test_api_needs_the_retrieve_scope(client, bank):
    ingest_only = factories.make_token(bank, scopes=("ingest",))
    response = client.get("/api/v1/impact", HTTP_AUTHORIZATION=f"Bearer {ingest_only}")
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"
    response = client.get("/api/v1/impact")
    assert response.status_code == 401 and response.json()["code"] == "missing_token"
    response = client.get("/api/v1/impact", HTTP_AUTHORIZATION="Bearer rb_nonsense")
    assert response.status_code == 401
