"""The one rule for a rate from x of n cases (reasoningbank_site.rates): a
percentage from MIN_CASES cases up, below that the counts and how many more
a rate needs; and its template piece, includes/rate.html."""

from __future__ import annotations

import re

from django.template.loader import render_to_string

from reasoningbank_site.rates import MIN_CASES, CaseRate


def test_one_case_is_no_rate():
    one = CaseRate(1, 1)
    assert (one.enough, one.value, one.needed) == (False, None, MIN_CASES - 1)
    assert one.text == f"1 of 1 (a rate needs {MIN_CASES} cases, {MIN_CASES - 1} more)"
    assert CaseRate(0, 0).text == f"no case yet (a rate needs {MIN_CASES} cases, {MIN_CASES} more)"


def test_from_the_minimum_up_a_rate_is_stated_with_its_counts():
    rate = CaseRate(2, MIN_CASES)
    assert (rate.enough, rate.value, rate.needed, rate.too_few) == (True, 2 / MIN_CASES, 0, "")
    assert rate.text == f"{2 / MIN_CASES:.0%} (2 of {MIN_CASES})"


def _shown(rate) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", render_to_string("includes/rate.html", {"rate": rate})).split())


def test_the_template_piece_shows_the_counts_below_the_minimum_and_the_rate_above():
    assert _shown(CaseRate(1, 1)) == f"1 of 1 (a rate needs {MIN_CASES} cases, {MIN_CASES - 1} more)"
    assert "%" not in _shown(CaseRate(1, 1))
    assert _shown(CaseRate(8, 10)) == "80% (8 of 10)"
