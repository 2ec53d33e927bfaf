"""Task sets: named, fixed lists of evaluation tasks of a bank, built from its past trajectories with
reviewed outcomes or uploaded as JSON Lines, and the leave-one-task-out rule that keeps a task's own
lessons out of its evaluation tries."""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from dataclasses import dataclass
from datetime import date

from django.db import IntegrityError, transaction
from django.db.models import F, Func, Q, TextField, Value
from django.db.models.functions import Trim

from accounts.models import Bank
from memories.items.experiences import Experience
from memories.items.models import MemoryItem
from memories.trust.models import VerdictTier
from reasoningbank_site.errors import Conflict, Invalid, NotFound
from reasoningbank_site.search import text_search
from trajectories.evaluation.models import TASK_SET_NAME_MAX, EvalTask, TaskSet, TaskSetSource
from trajectories.evaluation.taskset_lines import TaskLine, task_lines_parse
from trajectories.models import Label, Trajectory, trajectory_search_vector

LIMIT_DEFAULT, LIMIT_MAX = 50, 500
OUTCOMES = ("", Label.SUCCESS, Label.FAILURE)  # "" : either
FILTER_FIELDS = ("outcome", "agent", "text", "date_from", "date_to", "limit", "any_verdict")
DESCRIPTION_MAX = 2000


def task_set_filters_clean(filters: dict | None) -> dict:
    """The trajectory filter a task set is built from, checked and with its defaults: ``outcome``
    ("success", "failure" or "" for either), ``agent``, ``text`` (the trajectory list's search),
    ``date_from`` / ``date_to`` (ISO dates, inclusive), ``limit`` (tasks, default 50, at most 500)
    and ``any_verdict`` (false: only outcomes a human reviewed). Raises Invalid naming the field."""
    filters = dict(filters or {})
    unknown = sorted(set(filters) - set(FILTER_FIELDS))
    if unknown:
        raise Invalid(f"Unknown filter: {', '.join(unknown)} (known: {', '.join(FILTER_FIELDS)}).")
    clean: dict = {}
    outcome = filters.get("outcome") or ""
    if outcome == "any":
        outcome = ""
    if outcome not in OUTCOMES:
        raise Invalid('filters.outcome must be "success", "failure" or "any".')
    clean["outcome"] = str(outcome)
    for name in ("agent", "text"):
        value = filters.get(name) or ""
        if not isinstance(value, str) or len(value) > 200:
            raise Invalid(f"filters.{name} must be a string of at most 200 characters.")
        clean[name] = _no_nul(value.strip(), f"filters.{name}")
    for name in ("date_from", "date_to"):
        value = filters.get(name) or ""
        if isinstance(value, date):
            value = value.isoformat()
        try:
            clean[name] = date.fromisoformat(value).isoformat() if value else ""
        except (TypeError, ValueError):
            raise Invalid(f"filters.{name} must be a date as YYYY-MM-DD.") from None
    if clean["date_from"] and clean["date_to"] and clean["date_from"] > clean["date_to"]:
        raise Invalid("filters.date_from is after filters.date_to.")
    limit = filters.get("limit")
    limit = LIMIT_DEFAULT if limit in (None, "") else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIMIT_MAX:
        raise Invalid(f"filters.limit must be a whole number from 1 to {LIMIT_MAX}.")
    clean["limit"] = limit
    any_verdict = filters.get("any_verdict", False)
    if not isinstance(any_verdict, bool):
        raise Invalid("filters.any_verdict must be true or false.")
    clean["any_verdict"] = any_verdict
    return clean


@dataclass(frozen=True)
class Candidate:
    key: str
    text: str
    task_id: str
    metadata: dict
    trajectory_id: int


def _normal(text: str) -> str:
    return " ".join(text.split())


def _short_key(text: str) -> str:
    return "t-" + hashlib.sha256(_normal(text).encode("utf-8")).hexdigest()[:10]


def task_set_candidates(*, bank: Bank, filters: dict) -> list[Candidate]:
    """The tasks ``filters`` (task_set_filters_clean's) select from ``bank``'s trajectories, newest
    first: trajectories with a verdict, from a human reviewer unless ``any_verdict``, never an
    evaluation try's; one task per distinct task (the same text, whitespace aside, or the same task id
    is one task, taken from its newest run); at most ``limit``. A task's key is its task id, else
    ``t-`` and a hash of its text."""
    qs = Trajectory.objects.filter(bank=bank, learn=True).exclude(verdict="")
    if not filters["any_verdict"]:
        qs = qs.filter(verdict_tier=VerdictTier.HUMAN)
    if filters["outcome"]:
        qs = qs.filter(verdict=filters["outcome"])
    if filters["agent"]:
        qs = qs.filter(agent=filters["agent"])
    if filters["date_from"]:
        qs = qs.filter(created_at__date__gte=filters["date_from"])
    if filters["date_to"]:
        qs = qs.filter(created_at__date__lte=filters["date_to"])
    qs = text_search(qs, trajectory_search_vector(), filters["text"])
    rows = qs.order_by("-created_at", "-id").values_list("id", "task", "task_id", "metadata")
    seen_texts: set[str] = set()
    keys: set[str] = set()
    found: list[Candidate] = []
    for pk, text, task_id, metadata in rows.iterator(chunk_size=500):
        normal = _normal(text)
        if not normal or normal in seen_texts or (task_id and task_id in keys):
            continue
        seen_texts.add(normal)
        key = task_id or _short_key(text)
        while key in keys:  # a hash that is also another task's id
            key += "-"
        keys.add(key)
        metadata = metadata if isinstance(metadata, dict) else {}
        found.append(Candidate(key=key, text=text.strip(), task_id=task_id, metadata=metadata, trajectory_id=pk))
        if len(found) >= filters["limit"]:
            break
    return found


def _no_nul(value: str, field: str) -> str:
    if "\x00" in value:
        raise Invalid(f"{field} holds a NUL character, which cannot be stored or searched.")
    return value


def _name_clean(name) -> str:
    name = (name or "").strip() if isinstance(name, str) else ""
    if not name:
        raise Invalid("A task set needs a name.")
    if len(name) > TASK_SET_NAME_MAX:
        raise Invalid(f"A task set's name is at most {TASK_SET_NAME_MAX} characters.")
    return _no_nul(name, "The name")


def _description_clean(description) -> str:
    description = (description or "").strip() if isinstance(description, str) else ""
    if len(description) > DESCRIPTION_MAX:
        raise Invalid(f"A task set's description is at most {DESCRIPTION_MAX:,} characters.")
    return _no_nul(description, "The description")


def _name_free(*, bank: Bank, name: str) -> None:
    if TaskSet.objects.filter(bank=bank, name=name).exists():
        raise Conflict(f'This bank has a task set named "{name}" already; pick another name.', code="name_taken")


@transaction.atomic
def _create(*, bank: Bank, name: str, description: str, source: str, filters: dict, tasks: list[EvalTask], actor):
    try:
        with transaction.atomic():
            task_set = TaskSet.objects.create(
                bank=bank,
                name=name,
                description=description,
                source=source,
                filters=filters,
                task_count=len(tasks),
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
    except IntegrityError:  # the same name saved meanwhile
        raise Conflict(
            f'This bank has a task set named "{name}" already; pick another name.', code="name_taken"
        ) from None
    for position, task in enumerate(tasks):
        task.task_set, task.position = task_set, position
    EvalTask.objects.bulk_create(tasks)
    return task_set


def task_set_from_trajectories(*, bank: Bank, name: str, description: str = "", filters: dict, actor=None) -> TaskSet:
    """A task set of the tasks ``filters`` select (task_set_candidates), with no success check: a try's
    outcome is then its trajectory's verdict. Raises Invalid for a bad name or filter, and when the
    filter selects no task (nothing is saved); Conflict (``name_taken``) when the name is taken."""
    name, description = _name_clean(name), _description_clean(description)
    filters = task_set_filters_clean(filters)
    _name_free(bank=bank, name=name)
    candidates = task_set_candidates(bank=bank, filters=filters)
    if not candidates:
        which = "trajectories with any verdict" if filters["any_verdict"] else "trajectories a reviewer judged"
        raise Invalid(
            f"The filter selects no task: no {which} match it. Widen the filter"
            + ("" if filters["any_verdict"] else ", judge some trajectories, or include any verdict")
            + ".",
            code="no_tasks",
        )
    tasks = [
        EvalTask(key=c.key, text=c.text, metadata=c.metadata, task_id=c.task_id, trajectory_id=c.trajectory_id)
        for c in candidates
    ]
    return _create(
        bank=bank,
        name=name,
        description=description,
        source=TaskSetSource.TRAJECTORIES,
        filters=filters,
        tasks=tasks,
        actor=actor,
    )


def task_set_upload(*, bank: Bank, name: str, description: str = "", body: bytes, actor=None) -> TaskSet:
    """A task set from JSON Lines ``body`` (taskset_lines: one task per line). A task without a
    ``task_id`` has its ``id`` as one. All or nothing: raises TooLarge for a file over the size limit,
    Invalid for a bad name or any bad line (``details["errors"]`` lists every one), Conflict
    (``name_taken``) when the name is taken; nothing is saved then."""
    name, description = _name_clean(name), _description_clean(description)
    _name_free(bank=bank, name=name)
    lines: list[TaskLine] = task_lines_parse(body)
    tasks = [
        EvalTask(key=t.key, text=t.text, metadata=t.metadata, success_check=t.check, task_id=t.task_id) for t in lines
    ]
    return _create(
        bank=bank, name=name, description=description, source=TaskSetSource.UPLOAD, filters={}, tasks=tasks, actor=actor
    )


def task_set_lookup(*, bank: Bank, ref: str) -> TaskSet:
    """``bank``'s task set by public id or by name. Raises NotFound (another bank's too)."""
    ref = (ref or "").strip()
    query = Q(name=ref)
    with contextlib.suppress(ValueError):
        query |= Q(public_id=uuid.UUID(ref))
    task_set = TaskSet.objects.filter(query, bank=bank).order_by("-created_at").first() if ref else None
    if task_set is None:
        raise NotFound("No such task set in this bank.")
    return task_set


@transaction.atomic
def task_set_delete(*, task_set: TaskSet, actor=None) -> None:
    """Delete ``task_set`` and its tasks. Raises Conflict (``task_set_in_use``) when an evaluation run
    uses it: its runs' results stay readable only with their tasks."""
    locked = TaskSet.objects.select_for_update().filter(pk=task_set.pk).first()
    if locked is None:
        raise NotFound("No such task set in this bank.")
    runs = locked.runs.count()
    if runs:
        raise Conflict(
            f"{runs} evaluation run{'s use' if runs != 1 else ' uses'} this task set; it is kept with "
            f"{'their' if runs != 1 else 'its'} results.",
            code="task_set_in_use",
        )
    locked.delete()


def task_excluded_items(task: EvalTask) -> frozenset[str]:
    """Public ids of the items a try of ``task`` must never be served: the task's own lessons. They are
    the items learnt from a past run of the same task (the same task id when the task has one, or the
    same text, whitespace aside: the rule task_set_candidates dedupes by): the items of that past task's
    experience (every distilled item links to the experience of the trajectory it came from, which holds
    its task text and id), the items that experience supported later, and those whose ``source_task_id``
    is the task's. Pass them as retrieval_preview's ``exclude`` beside ``task_id=task.task_id``: a past
    run with no task id is then left out too. For many tasks, tasks_excluded_items reads them at once."""
    return tasks_excluded_items([task])[task.pk]


def tasks_excluded_items(tasks: list[EvalTask]) -> dict[int, frozenset[str]]:
    """task_excluded_items for each of ``tasks`` (of one bank), by task pk: four queries in all, the
    experiences read once (they have no index on their text) — what a run reads when it starts."""
    if not tasks:
        return {}
    bank_id = tasks[0].task_set.bank_id
    texts = {_normal(t.text) for t in tasks}
    task_ids = {t.task_id for t in tasks if t.task_id}
    rows = (
        Experience.objects.filter(bank_id=bank_id)
        .annotate(
            normal_task=Trim(
                Func(
                    F("task"),
                    Value(r"\s+"),
                    Value(" "),
                    Value("g"),
                    function="regexp_replace",
                    output_field=TextField(),
                )
            )
        )
        .filter(Q(normal_task__in=texts) | Q(task_id__in=task_ids))
        .values_list("pk", "normal_task", "task_id")
    )
    experiences_of: dict[tuple[str, str], set[int]] = {}  # ("text", normalised) or ("id", task id) → experiences
    for pk, text, task_id in rows:
        experiences_of.setdefault(("text", text), set()).add(pk)
        if task_id:
            experiences_of.setdefault(("id", task_id), set()).add(pk)
    every = set().union(*experiences_of.values()) if experiences_of else set()
    items = MemoryItem.objects.filter(bank_id=bank_id)
    by_experience: dict[int, set[str]] = {}
    for experience, public_id in [
        *items.filter(experience_id__in=every).values_list("experience_id", "public_id"),
        *items.filter(supports__experience_id__in=every).values_list("supports__experience_id", "public_id"),
    ]:
        by_experience.setdefault(experience, set()).add(str(public_id))
    by_task_id: dict[str, set[str]] = {}
    for task_id, public_id in items.filter(source_task_id__in=task_ids).values_list("source_task_id", "public_id"):
        by_task_id.setdefault(task_id, set()).add(str(public_id))
    found = {}
    for task in tasks:
        experiences = experiences_of.get(("text", _normal(task.text)), set())
        if task.task_id:
            experiences = experiences | experiences_of.get(("id", task.task_id), set())
        own = set().union(*(by_experience.get(e, set()) for e in experiences))
        found[task.pk] = frozenset(own | by_task_id.get(task.task_id, set()) if task.task_id else own)
    return found
