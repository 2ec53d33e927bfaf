"""The approved bank as lessons an agent reads from files (memories.skill_files
renders them): approved items grouped by tag, and the content version that
says which state of the bank a file holds."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max
from django.utils import timezone

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem
from memories.selectors.learning import servable_q
from memories.selectors.retrieval.filters import NO_FILTERS

VERSION_HASH_LENGTH = 12


@dataclass(frozen=True)
class Lesson:
    title: str
    description: str
    content: str
    other_tags: tuple[str, ...]


@dataclass(frozen=True)
class LessonGroup:
    tag: str  # empty: the items without a tag
    lessons: tuple[Lesson, ...]


@dataclass(frozen=True)
class BankLessons:
    bank: Bank
    groups: tuple[LessonGroup, ...]
    count: int
    # "<count>-<hash>": the hash is of the approved items' ids and version numbers, so any approval,
    # archive or edit changes it and an unchanged bank exports the same version.
    version: str
    exported_at: datetime


def bank_lessons(*, bank: Bank) -> BankLessons:
    """The bank's approved items (never proposed, rejected, archived or
    superseded) as lessons, in one query. Each lesson appears once, under
    its first tag (tags are kept sorted), carrying its other tags; groups
    are in tag order with the untagged ones last; lessons in a group are
    oldest approval first, so a new approval adds to the end of its group."""
    items = (
        MemoryItem.objects.filter(servable_q(), NO_FILTERS.q(), bank=bank, status=ItemStatus.APPROVED)  # as served
        .annotate(version_number=Max("versions__number"))
        .only("public_id", "title", "description", "content", "tags", "approved_at")
        .order_by("approved_at", "id")
    )
    by_tag: dict[str, list[Lesson]] = {}
    stamps = []
    for item in items:
        tags = list(item.tags or [])
        lesson = Lesson(
            title=item.title, description=item.description, content=item.content, other_tags=tuple(tags[1:])
        )
        by_tag.setdefault(tags[0] if tags else "", []).append(lesson)
        stamps.append(f"{item.public_id}:{item.version_number or 0}")
    digest = hashlib.sha256("\n".join(sorted(stamps)).encode()).hexdigest()[:VERSION_HASH_LENGTH]
    order = sorted(by_tag, key=lambda tag: (tag == "", tag))
    return BankLessons(
        bank=bank,
        groups=tuple(LessonGroup(tag=tag, lessons=tuple(by_tag[tag])) for tag in order),
        count=len(stamps),
        version=f"{len(stamps)}-{digest}",
        exported_at=timezone.now().replace(microsecond=0),
    )
