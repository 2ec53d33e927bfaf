"""The SQL behind the dashboard's judge-vs-human reads (trajectories.dashboard.selectors): each starts from
the bank's human judgments (the partial index ``judgment_human_latest``: a few % of the rows), keeps each
trajectory's latest one, and probes the LLM judgments of those trajectories by index. The work grows with
the number of human labels, not with the trajectories or the LLM judgments, so a bank of a million
trajectories reads a few thousand rows here."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from trajectories.models import Judgment, JudgmentSource, Label, Trajectory

# The reviewer's latest verdict on each of the bank's trajectories with one. The bank is read per human
# judgment (a primary-key probe): a join would let the planner read the bank's every trajectory instead.
_HUMAN_LATEST = """
WITH human AS (
    SELECT DISTINCT ON (h.trajectory_id) h.trajectory_id, h.label
    FROM {judgments} h
    WHERE h.source = %(human)s AND (SELECT t.bank_id FROM {trajectories} t WHERE t.id = h.trajectory_id) = %(bank)s
    ORDER BY h.trajectory_id, h.created_at DESC, h.id DESC
)
"""

# The LLM judgments of one reviewed trajectory, probed by index. OFFSET 0 keeps the subquery apart (the
# planner may not flatten it into a join), so it runs once per reviewed trajectory and never becomes a hash
# join over every LLM judgment, which a planner may prefer on a small table.
_LLM_OF_HUMAN = """
CROSS JOIN LATERAL (
    SELECT l.id, l.label, l.prompt_version, l.created_at FROM {judgments} l
    WHERE l.trajectory_id = human.trajectory_id AND l.source = %(llm)s OFFSET 0
) l
"""

# Trajectories with both: the LLM's latest label beside the reviewer's latest.
_AGREEMENT_SQL = """
SELECT COUNT(*), COUNT(*) FILTER (WHERE llm.label = human.label)
FROM human CROSS JOIN LATERAL (
    SELECT l.label FROM {judgments} l
    WHERE l.trajectory_id = human.trajectory_id AND l.source = %(llm)s
    ORDER BY l.created_at DESC, l.id DESC LIMIT 1
) llm
"""

# Every LLM judgment of a reviewed trajectory, against the reviewer's latest, per prompt version.
_BY_VERSION_SQL = (
    """
SELECT l.prompt_version, MIN(l.created_at), MAX(l.created_at),
       COUNT(*) FILTER (WHERE l.label = human.label), COUNT(*),
       COUNT(*) FILTER (WHERE human.label = %(failure)s AND l.label = %(success)s),
       COUNT(*) FILTER (WHERE human.label = %(failure)s),
       COUNT(*) FILTER (WHERE human.label <> %(failure)s AND l.label = %(failure)s),
       COUNT(*) FILTER (WHERE human.label <> %(failure)s)
FROM human """
    + _LLM_OF_HUMAN
    + """
GROUP BY l.prompt_version
ORDER BY MIN(l.created_at), MIN(l.id)
"""
)

# The same LLM judgments from ``since`` on, per week of the LLM judgment (local time, as TruncWeek).
_BY_WEEK_SQL = (
    """
SELECT date_trunc('week', l.created_at AT TIME ZONE %(tz)s), COUNT(*) FILTER (WHERE l.label = human.label), COUNT(*)
FROM human """
    + _LLM_OF_HUMAN
    + """
WHERE l.created_at >= %(since)s
GROUP BY 1
"""
)


# All three in one pass over the reviewed trajectories' LLM judgments: per prompt version and week of the LLM
# judgment, the per-version counts, the week's (agree, n), and the same for the trajectory's latest LLM judgment
# only (the overall agreement). A few rows per version and week; the callers add them up.
_FIGURES_SQL = """
SELECT l.prompt_version, date_trunc('week', l.created_at AT TIME ZONE %(tz)s), MIN(l.created_at), MAX(l.created_at),
       MIN(l.id),
       COUNT(*) FILTER (WHERE l.label = human.label), COUNT(*),
       COUNT(*) FILTER (WHERE human.label = %(failure)s AND l.label = %(success)s),
       COUNT(*) FILTER (WHERE human.label = %(failure)s),
       COUNT(*) FILTER (WHERE human.label <> %(failure)s AND l.label = %(failure)s),
       COUNT(*) FILTER (WHERE human.label <> %(failure)s),
       COUNT(*) FILTER (WHERE l.latest), COUNT(*) FILTER (WHERE l.latest AND l.label = human.label)
FROM human CROSS JOIN LATERAL (
    SELECT l.id, l.label, l.prompt_version, l.created_at,
           row_number() OVER (ORDER BY l.created_at DESC, l.id DESC) = 1 AS latest
    FROM {judgments} l
    WHERE l.trajectory_id = human.trajectory_id AND l.source = %(llm)s OFFSET 0
) l
GROUP BY 1, 2
"""


def _rows(sql: str, **params) -> list[tuple]:
    tables = {"judgments": Judgment._meta.db_table, "trajectories": Trajectory._meta.db_table}
    params |= {
        "human": JudgmentSource.HUMAN,
        "llm": JudgmentSource.LLM,
        "success": Label.SUCCESS,
        "failure": Label.FAILURE,
    }
    with connection.cursor() as cursor:
        cursor.execute((_HUMAN_LATEST + sql).format(**tables), params)
        return cursor.fetchall()


def agreement_counts(*, bank_id: int) -> tuple[int, int]:
    """(trajectories judged by both, of them the latest LLM and human labels agree). One query."""
    ((both, agree),) = _rows(_AGREEMENT_SQL, bank=bank_id)
    return both, agree


def agreement_by_version_rows(*, bank_id: int) -> list[tuple]:
    """Per prompt version, in the order first used: (version, first at, last at, agree, n, false success,
    reviewer's failures, false failure, reviewer's successes). One query."""
    return _rows(_BY_VERSION_SQL, bank=bank_id)


def agreement_by_week_rows(*, bank_id: int, since: datetime, tz: str) -> list[tuple]:
    """(week start, agree, n) per week of the LLM judgment from ``since``. One query."""
    return _rows(_BY_WEEK_SQL, bank=bank_id, since=since, tz=tz)


def agreement_figure_rows(*, bank_id: int, tz: str) -> list[tuple]:
    """The three reads above in one query: per (version, week of the LLM judgment in ``tz``): version, week,
    first at, last at, first id, the per-version counts (as agreement_by_version_rows), then the trajectories
    whose latest LLM judgment is in the group and of them those that agree with the reviewer."""
    return _rows(_FIGURES_SQL, bank=bank_id, tz=tz)


# Up to ``most`` of the bank's human judgments (the partial index, the bank probed per row, as above).
_HUMAN_LABELS_SQL = """
SELECT COUNT(*) FROM (
    SELECT 1 FROM {judgments} h
    WHERE h.source = %(human)s AND (SELECT t.bank_id FROM {trajectories} t WHERE t.id = h.trajectory_id) = %(bank)s
    LIMIT %(most)s
) labels
"""


def human_labels_up_to(*, bank_id: int, most: int) -> int:
    """The bank's human judgments, counted up to ``most`` (a bound on the trajectories judged by both). One
    query that reads at most the human judgments' index entries."""
    tables = {"judgments": Judgment._meta.db_table, "trajectories": Trajectory._meta.db_table}
    with connection.cursor() as cursor:
        cursor.execute(
            _HUMAN_LABELS_SQL.format(**tables), {"human": JudgmentSource.HUMAN, "bank": bank_id, "most": most}
        )
        return cursor.fetchone()[0]
