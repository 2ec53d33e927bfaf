"""The parsers against answers shaped like what real models write."""

import pytest

from trajectories.pipeline.parsing import JudgeAnswer, parse_citations, parse_judge_answer, parse_memory_items

pytestmark = pytest.mark.usefixtures("eager_celery")


@pytest.mark.parametrize(
    "answer, label",
    [
        ('{"verdict": "success", "rationale": "done"}', "success"),
        ('{"Verdict": "FAILURE", "reasoning": "no"}', "failure"),
        ('Let me think.\n```json\n{"verdict": "failure", "rationale": "The page never loaded."}\n```', "failure"),
        ('```\n{"status": "success"}\n```', "success"),
        ("Status: success", "success"),
        ("Thoughts: the agent clicked around.\nVerdict: FAILURE", "failure"),
        ("**Verdict:** Success\nThe agent did it.", "success"),
        ("## Final verdict - failed", "failure"),
        ("> Result = passed", "success"),
        ('{"verdict": "fail"}', "failure"),
        ('{"success": true, "verdict": "Successful"}', "success"),
        ("The agent reached the right page.\n\nSUCCESS", "success"),
        # The last explicit verdict wins over an earlier one in the reasoning.
        ("At first glance: Status: success\nBut the total is wrong.\nFinal verdict: failure", "failure"),
        (
            'Draft {"verdict": "success"} ... on reflection:\n{"verdict": "failure", "rationale": "wrong city"}',
            "failure",
        ),
        ("Verdict: failure\nWait, re-reading step 4 it did recover.\nVerdict: success", "success"),
    ],
)
def test_judge_parser_reads_real_shapes(answer, label):
    parsed = parse_judge_answer(answer)
    assert parsed is not None
    assert parsed.label == label


def test_judge_parser_keeps_rationale():
    parsed = parse_judge_answer('```json\n{"verdict": "failure", "rationale": "The page never loaded."}\n```')
    assert parsed.rationale == "The page never loaded."
    long = ("Reasoning line.\n" * 200) + "Verdict: success"
    assert parse_judge_answer(long).rationale.startswith("Reasoning line.")


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "I think the agent did reasonably well overall.",
        "Status: partial",
        "Result: no results were found",
        '{"verdict": "maybe"}',
        '{"score": 7}',
        "The verdict is hard to call; success or failure depends on intent.",
    ],
)
def test_judge_parser_never_guesses(answer):
    assert parse_judge_answer(answer) is None


def test_markdown_items_after_reasoning():
    text = """Why it worked: the agent checked the official page first.
It also avoided stale caches. (Title: not an item)

# Memory Item 1
## Title
Check the official source
## Description
When a task asks for a fact an organisation publishes.
## Content
Open the organisation's own page first; third-party copies go stale.
## Steps
Steps 2 and 4

# Memory Item 2
## Title: Confirm before answering
## Description: When the answer is a number or a date.
## Content: Re-read the exact figure from the page before writing the answer.
"""
    items = parse_memory_items(text, max_items=3)
    assert [i.title for i in items] == ["Check the official source", "Confirm before answering"]
    assert items[0].description == "When a task asks for a fact an organisation publishes."
    assert items[0].citations == [(None, 2), (None, 4)]
    assert items[1].content == "Re-read the exact figure from the page before writing the answer."
    assert items[1].citations == []


def test_markdown_items_missing_a_field_are_dropped_and_count_capped():
    blocks = []
    for n in range(1, 6):
        blocks.append(f"# Memory Item {n}\n## Title\nLesson {n}\n## Description\nWhen {n}.\n## Content\nDo {n}.\n")
    blocks.insert(1, "# Memory Item X\n## Title\nNo content here\n## Description\nWhen.\n")
    items = parse_memory_items("\n".join(blocks), max_items=3)
    assert [i.title for i in items] == ["Lesson 1", "Lesson 2", "Lesson 3"]


def test_markdown_bold_fields_and_repeated_titles():
    text = """**Memory Item 1**
# Memory Item 1
**Title:** Scroll before concluding
**Description:** When a list may be paginated.
**Content:** Check for a next page or a load-more control before deciding an entry is missing.

# Memory Item 2
**Title:** Scroll before concluding
**Description:** duplicate
**Content:** duplicate
"""
    items = parse_memory_items(text, max_items=3)
    assert len(items) == 1
    assert items[0].title == "Scroll before concluding"
    assert items[0].content.startswith("Check for a next page")


def test_json_items_in_several_shapes():
    as_list = '[{"title": "A", "description": "da", "content": "ca", "steps": [1, 3]}, {"title": "B", "description": "db", "content": "cb"}]'
    items = parse_memory_items(as_list, max_items=3)
    assert [i.title for i in items] == ["A", "B"]
    assert items[0].citations == [(None, 1), (None, 3)]

    wrapped = 'Reasoning first.\n```json\n{"items": [{"title": "A", "description": "d", "content": "c"}, {"title": "", "description": "d", "content": "c"}]}\n```'
    assert [i.title for i in parse_memory_items(wrapped, max_items=3)] == ["A"]

    six = {"memory_items": [{"title": f"T{n}", "description": "d", "content": "c"} for n in range(6)]}
    import json

    assert len(parse_memory_items(json.dumps(six), max_items=5)) == 5


def test_items_from_garbage_is_empty():
    assert parse_memory_items("I cannot help with that.", max_items=3) == []
    assert parse_memory_items('{"verdict": "success"}', max_items=3) == []
    assert parse_memory_items("", max_items=3) == []


def test_rollout_citations():
    assert parse_citations("R1S4, R3 S2, r2.s7") == [(1, 4), (3, 2), (2, 7)]
    assert parse_citations(["R1S4", "R1S4"]) == [(1, 4)]
    assert parse_citations("none") == []
    assert parse_citations(5) == [(None, 5)]


@pytest.mark.parametrize(
    "text",
    [
        'The page matches.\nStatus: "success"',
        "The page matches.\nStatus: 'success'",
        "The page matches.\n**Status: `success`**",
    ],
)
def test_quotes_around_the_verdict_word_do_not_stay_in_the_rationale(text):
    answer = parse_judge_answer(text)
    assert answer == JudgeAnswer("success", "The page matches.")
