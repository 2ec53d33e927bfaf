"""What the bank serves as lessons an agent reads from files (memories.serving.skill_files
renders them): served items grouped by tag, the release they are, and the
content version that says which state of the bank a file holds."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from accounts.models import Bank
from memories.serving.lists import served_items

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
    # "<count>-<hash>": the hash is of the served items' ids and version numbers (as released), so any
    # change of what is served changes it and an unchanged bank exports the same version.
    version: str
    exported_at: datetime
    release: int | None = None  # the production release the files hold (None: the bank has none yet)


def bank_lessons(*, bank: Bank) -> BankLessons:
    """What the bank serves (memories.serving: its production release, each
    item with its text as released) as lessons, in one query. Each lesson
    appears once, under its first tag (tags are kept sorted), carrying its
    other tags; groups are in tag order with the untagged ones last; lessons
    in a group are oldest approval first, so a new approval adds to the end of its group."""
    served = served_items(bank=bank)
    items = served.items.only("public_id", "title", "description", "content", "tags", "approved_at")
    by_tag: dict[str, list[Lesson]] = {}
    stamps = []
    for item in reversed(served.page_of(items)):
        tags = list(item.tags or [])
        lesson = Lesson(
            title=item.title, description=item.description, content=item.content, other_tags=tuple(tags[1:])
        )
        by_tag.setdefault(tags[0] if tags else "", []).append(lesson)
        stamps.append(f"{item.public_id}:{item.served_version or 0}")
    digest = hashlib.sha256("\n".join(sorted(stamps)).encode()).hexdigest()[:VERSION_HASH_LENGTH]
    order = sorted(by_tag, key=lambda tag: (tag == "", tag))
    return BankLessons(
        bank=bank,
        groups=tuple(LessonGroup(tag=tag, lessons=tuple(by_tag[tag])) for tag in order),
        count=len(stamps),
        version=f"{len(stamps)}-{digest}",
        exported_at=timezone.now().replace(microsecond=0),
        release=served.number,
    )
