"""Property-based test of the release import (its body is JSON Lines, which the
OpenAPI fuzz cannot shape): hostile lines among well-formed ones, a NUL byte
(raw or escaped), a lone surrogate, nesting thousands of levels deep, any text,
are refused in the request with a 422 JSON answer naming the line, never a 500
and never queued."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.releases.models import ReleaseImport
from memories.releases.selectors import RELEASE_FORMAT
from tests import factories

HEADER = json.dumps({"release": {"format": RELEASE_FORMAT, "number": 1}})
ITEM = {"title": "Sign in first", "description": "Account pages.", "content": "Log in before reading orders."}


def _escaped(text: str) -> str:
    return json.dumps(text)  # \u0000 and \ud800 stay escapes: legal JSON


nul = st.builds(lambda a, b: {**ITEM, "title": f"{a}\x00{b}"}, st.text(max_size=5), st.text(max_size=5))
surrogate = st.builds(
    lambda a, code: {**ITEM, "content": f"{a}{chr(code)}"}, st.text(max_size=5), st.integers(0xD800, 0xDFFF)
)
hostile_record = st.one_of(nul, surrogate).map(lambda record: json.dumps(record))  # escapes them
raw_nul = st.builds(lambda record: record.replace("Sign", "Si\x00gn"), st.just(json.dumps(ITEM)))
deep = st.integers(min_value=33, max_value=100_000).flatmap(
    lambda n: st.sampled_from(["[" * n + "]" * n, '{"a":' * n + "1" + "}" * n, '{"title": ' + "[" * n + "]" * n + "}"])
)
hostile_line = st.one_of(hostile_record, raw_nul, deep)


@pytest.fixture
def review(db):
    bank = factories.make_bank(rate_limit_per_minute=0)
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',))}"}


def _post(client, review, lines: list[str]):
    body = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    return client.post("/api/v1/releases/import", data=body, content_type="application/x-ndjson", **review)


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(before=st.integers(0, 3), line=hostile_line)
def test_a_hostile_line_is_a_422_naming_it(client, review, before, line):
    response = _post(client, review, [HEADER, *[json.dumps(ITEM)] * before, line])
    assert response.status_code == 422, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    assert f"line {before + 2}:" in response.json()["detail"]
    assert not ReleaseImport.objects.exists()


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(max_size=200))
def test_any_text_is_answered_as_json_never_a_500(client, review, text):
    response = _post(client, review, [HEADER, text])
    assert response.status_code in (202, 409, 422), response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    ReleaseImport.objects.all().delete()  # a line that was a fine item queued it: free the bank's slot
