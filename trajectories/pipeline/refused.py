"""What the distiller is shown of the bank's refused lessons: those nearest to
the task at hand, with the reviewers' reasons, so it proposes something else."""

from __future__ import annotations

from memories.embedding.model import embed_texts
from memories.learning.selectors import LearningState, refused_nearest
from trajectories.models import Trajectory
from trajectories.pipeline.prompting import neutralize

REFUSED_CHARS = 600  # one refused lesson at most
REASON_CHARS = 200


def _cut(text: str, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refused_lessons(trajectory: Trajectory, state: LearningState) -> str:
    """A block naming the bank's refused (rejected, or archived-as-wrong)
    lessons most similar to ``trajectory``'s task, at most the bank's
    ``rejected_examples``, with the reviewers' reasons; "" when there is none
    (no embedding is computed then). ``state``: the bank's LearningState."""
    limit = state.learning.rejected_examples
    if limit <= 0 or not state.has_refused:
        return ""
    vector = embed_texts([trajectory.task])[0]
    items = refused_nearest(bank=trajectory.bank, vector=vector, limit=limit)
    if not items:
        return ""
    blocks = []
    for n, item in enumerate(items, start=1):
        why = f"\nReviewer's reason: {_cut(item.status_reason, REASON_CHARS)}" if item.status_reason else ""
        body = _cut(f"Title: {item.title}\nContent: {item.content}", REFUSED_CHARS) + why
        blocks.append(f'<refused n="{n}">\n{neutralize(body)}\n</refused>')
    intro = (
        "Reviewers of this bank refused the lessons below. Do not propose them again, nor a rewording of "
        "them: propose something else, or nothing."
    )
    return "<refused_lessons>\n" + intro + "\n" + "\n".join(blocks) + "\n</refused_lessons>\n\n"
