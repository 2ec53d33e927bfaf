"""Text helpers every input and page relies on: scrubbing what PostgreSQL and
UTF-8 cannot hold, JSON of any depth shown without recursing, visible cuts,
counts with their noun, and "how long ago"."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from reasoningbank_site.text import ago as time_ago
from reasoningbank_site.text import (
    counted,
    cut_text,
    has_control_chars,
    is_cut,
    json_depth,
    pretty_json,
    prompt_version_label,
    scrub_text,
)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_scrub_replaces_nul_and_lone_surrogates_everywhere_without_touching_the_input():
    dirty = {"key\x00": ["ok", {"deep": "a\ud800b"}], "n": 3}
    clean = scrub_text(dirty)
    assert clean == {"key\ufffd": ["ok", {"deep": "a?b"}], "n": 3}
    assert dirty == {"key\x00": ["ok", {"deep": "a\ud800b"}], "n": 3}  # the input is not mutated
    json.dumps(clean).encode("utf-8")  # now storable and encodable


def test_scrub_returns_clean_input_itself_and_survives_deep_nesting():
    value = {"a": ["b", 1, None]}
    assert scrub_text(value) is value
    deep = _nested(50_000)
    deep_dirty = [deep, "x\x00"]
    assert scrub_text(deep_dirty)[1] == "x\ufffd"


def test_control_characters_other_than_tab():
    assert not has_control_chars("a name\twith a tab")
    assert has_control_chars("two\nlines") and has_control_chars("bell\x07") and has_control_chars("del\x7f")


def test_json_depth_counts_nesting_and_stops_past_the_limit():
    assert json_depth("scalar", 10) == 0
    assert json_depth({"a": [1, {"b": []}]}, 10) == 4
    assert json_depth(_nested(100_000), 64) == 65


def test_pretty_json_indents_parses_strings_and_shows_deep_values_raw():
    assert pretty_json('{"a": [1, 2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert pretty_json("not json at all") == "not json at all"
    assert pretty_json(None) == "" and pretty_json("") == ""
    deep_text = "[" * 5000 + "]" * 5000
    assert pretty_json(deep_text) == deep_text  # sent as text: shown as sent
    deep_value = _nested(5000)
    assert pretty_json(deep_value) == deep_text.replace("][", "], [")  # compact, one line


@pytest.mark.parametrize("length", [10, 99, 100, 101, 1000, 1_000_000])
def test_cut_text_never_exceeds_the_limit_and_marks_a_cut(length):
    text = "x" * length
    cut = cut_text(text, 100)
    assert len(cut) <= 100
    if length <= 100:
        assert cut == text and not is_cut(cut)
    else:
        kept = cut.split(" … ")[0]
        assert is_cut(cut) and cut.endswith(f"[cut: {length - len(kept):,} characters]")


def test_counted_takes_the_right_noun():
    assert counted(1, "item") == "1 item"
    assert counted(0, "item") == "0 items"
    assert counted(2, "trajectory", "trajectories") == "2 trajectories"


def test_ago_says_just_now_under_a_minute_and_keeps_one_unit_in_seconds_mode():
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert time_ago(now - timedelta(seconds=59), now=now) == "just now"
    assert time_ago(now + timedelta(seconds=3), now=now) == "just now"  # a clock a little ahead
    assert time_ago(now - timedelta(minutes=3), now=now) == "3\xa0minutes ago"
    assert time_ago(now - timedelta(hours=2, minutes=5), now=now) == "2\xa0hours, 5\xa0minutes ago"
    assert time_ago(now - timedelta(seconds=12), now=now, seconds=True) == "12 s ago"
    assert time_ago(now - timedelta(hours=2, minutes=5), now=now, seconds=True) == "2\xa0hours ago"
    assert time_ago(None) == ""


@pytest.mark.parametrize(
    ("recorded", "shown"),
    [
        ("judge@bank-2-v1", "judge v1 (custom)"),
        ("judge@bank-17-v3+fs", "judge v3 (custom) + examples"),
        ("distill_success/v1", "distill_success v1 (default)"),
        ("judge/v1+fs", "judge v1 (default) + examples"),
        ("something-else", "something-else"),
        ("", ""),
    ],
)
def test_prompt_versions_are_named_without_the_banks_internal_id(recorded, shown):
    assert prompt_version_label(recorded) == shown
