"""The scene the evaluation-run tests share: a bank publishing by hand with two releases (production
serves one lesson, the candidate two) and a small task set built with the ORM."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.releases.publishing import release_mode_set, release_publish
from memories.review.decisions import memory_item_approve
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN
from trajectories.evaluation.models import EvalTask, TaskSet, TaskSetSource

TASKS = [
    ("orders", "Log in and list my order history on the shop.", None),
    ("delivery", "Pick the delivery date on the checkout form.", {"type": "contains", "value": "2026-05-03"}),
    ("hours", "When does the shop's support answer on Sundays?", None),
]


@dataclass
class Scene:
    bank: Bank
    login: MemoryItem
    dates: MemoryItem
    production: int
    candidate: int


def releases_scene(bank: Bank, owner) -> Scene:
    """Release 1 (production): the login lesson; release 2 (the candidate, a canary at 10 %): both."""
    bank.min_similarity = -1.0  # every lesson is served whatever the task
    bank.save(update_fields=["min_similarity"])
    release_mode_set(bank=bank, mode="manual", actor=owner)
    trajectory = make_done_trajectory(bank)
    login = propose_item(bank, trajectory, **LOGIN)
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    first = release_publish(bank=bank, actor=owner).release
    dates = propose_item(bank, trajectory, **DATES)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    second = release_publish(bank=bank, actor=owner, canary_fraction=0.1).release
    bank.refresh_from_db()
    assert bank.release_production == first.number
    return Scene(bank, login, dates, first.number, second.number)


def make_task_set(bank: Bank, name: str = "checkout", tasks=TASKS) -> TaskSet:
    task_set = TaskSet.objects.create(bank=bank, name=name, source=TaskSetSource.UPLOAD, task_count=len(tasks))
    EvalTask.objects.bulk_create(
        [
            EvalTask(task_set=task_set, key=key, text=text, success_check=check, task_id=f"past-{key}", position=i)
            for i, (key, text, check) in enumerate(tasks)
        ]
    )
    return task_set


def api(client, token: str, method: str, path: str, body=None):
    """A JSON request to the agent API with ``token``: (status, JSON body)."""
    call = getattr(client, method)
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=body, content_type="application/json")
    response = call(f"/api/v1{path}", **kwargs)
    return response.status_code, response.json()
