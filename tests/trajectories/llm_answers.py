"""The fake LLM's canned answers the trajectories pipeline tests share: a
judge's verdicts, a success distillation (two items citing steps 2 and 3) and
a failure distillation (one item)."""

JUDGE_SUCCESS = '{"verdict": "success", "rationale": "The tool result shows Sunday hours and the answer matches."}'
JUDGE_FAILURE = '{"verdict": "failure", "rationale": "The answer contradicts the tool result."}'
ITEMS_MD = """The agent succeeded because it verified the hours against an official source.

# Memory Item 1
## Title
Prefer the official source
## Description
Use when a factual question about an institution's schedule comes up.
## Content
Look the fact up on the institution's own pages before answering, and quote the day-specific entry.
## Steps
2, 3

# Memory Item 2
## Title
Answer in the asked format
## Description
Use when the task asks for a specific day or range.
## Content
Restate only the part of the schedule that was asked for, with explicit times.
"""

FAILURE_ITEMS = """Reflection: the agent trusted a cached page.

# Memory Item 1
## Title
Distrust cached copies
## Description
When a published schedule may have changed recently.
## Content
Compare the cached page date with today's date and reload the live page before answering.
"""
