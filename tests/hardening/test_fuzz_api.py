"""Fuzz of the agent API: schemathesis generates requests from the
live OpenAPI document (all operations, all checks, fixed seed, bounded
examples; dates and moments at the edges of what Python and PostgreSQL
hold) and sends them to a real server with a real token. Any 5xx — or
any other check schemathesis makes (response schema, status codes, content
type…; all but the two positive/negative data-acceptance checks, see below) — fails the test."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from tests import factories

pytestmark = pytest.mark.filterwarnings("ignore")

MAX_EXAMPLES = 12  # per operation and phase: keeps the whole run well under a minute


@pytest.fixture
def api_token(transactional_db):
    from memories.embedding.model import embed_text

    embed_text("warm up")  # load the model before the first timed request
    bank = factories.make_bank(rate_limit_per_minute=0)  # the fuzz must not be throttled
    return factories.make_token(bank)


def _openapi() -> dict:
    # The document /api/v1/openapi.json serves, built in-process (collection has no server yet).
    from reasoningbank_site.api import api

    return api.get_openapi_schema(path_prefix="/api/v1")


# Moments at the edges of what Python and PostgreSQL hold: UTC offsets around PostgreSQL's ±15:59 up to
# pydantic's ±23:59, the last day of year 9999 and the first of year 1, beside ordinary moments; dates
# next to both ends.
_EDGE_OFFSETS = [m * sign for m in (0, 14 * 60, 15 * 60 + 59, 16 * 60, 23 * 60 + 59) for sign in (1, -1)]
_OFFSETS = st.one_of(st.sampled_from(_EDGE_OFFSETS), st.integers(-(24 * 60 - 1), 24 * 60 - 1)).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
_MOMENTS = st.one_of(
    st.datetimes(min_value=datetime(9999, 12, 31), timezones=_OFFSETS),
    st.datetimes(max_value=datetime(1, 1, 1, 23, 59), timezones=_OFFSETS),
    st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(2200, 1, 1), timezones=_OFFSETS),
)
_DATES = st.one_of(st.dates(min_value=date(9999, 12, 1)), st.dates(max_value=date(1, 2, 1)))
schemathesis.openapi.format("date-time", _MOMENTS.map(datetime.isoformat))
schemathesis.openapi.format("date", _DATES.map(date.isoformat))

schema = schemathesis.openapi.from_dict(_openapi())


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,  # a fixed seed: the same cases on every run
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_never_errors(case, live_server, api_token):
    case.call_and_validate(
        base_url=live_server.url,
        headers={"Authorization": f"Bearer {api_token}"},
        # Every check but two. Business rules rightly refuse some schema-valid input with a 422
        # (a well-formed retrieval_id of no retrieval of this bank); and unknown query parameters
        # are ignored on purpose (cache-busters), which schemathesis counts as accepting invalid data.
        excluded_checks=[positive_data_acceptance, negative_data_rejection],
        timeout=60,
    )
