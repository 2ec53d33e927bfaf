"""Time-ordered public ids: version 7 UUIDs carry the millisecond they were made and sort by it."""

import itertools
import time
import uuid

from reasoningbank_site.ids import uuid7, uuid7_issued_at


def test_a_uuid7_has_the_rfc_version_and_variant_and_says_when_it_was_issued():
    before = time.time_ns() // 1_000_000 / 1000
    made = uuid7()
    after = time.time_ns() // 1_000_000 / 1000
    assert made.version == 7 and made.variant == uuid.RFC_4122
    assert before <= uuid7_issued_at(made) <= after


def test_ids_made_in_a_later_millisecond_sort_later_and_never_repeat():
    ids = [uuid7()]
    while uuid7_issued_at(ids[-1]) == uuid7_issued_at(ids[0]) or len(ids) < 200:
        ids.append(uuid7())
    assert len(set(ids)) == len(ids)
    for earlier, later in itertools.pairwise(ids):
        if uuid7_issued_at(later) > uuid7_issued_at(earlier):
            assert later > earlier
    assert ids[-1] > ids[0]  # the last was made in a later millisecond than the first


def test_another_version_has_no_issue_time():
    assert uuid7_issued_at(uuid.uuid4()) is None
