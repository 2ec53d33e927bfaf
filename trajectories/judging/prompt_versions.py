"""A bank's own prompts: which wording the pipeline uses (the bank's active
version, else the default file), saving a new version (validated: the
placeholders and the answer format the parser needs must stay), making one
active, and going back to the default. Every change is audited.

The version string a Judgment or MemoryItem records says exactly which words
were used: ``judge/v1`` for the default file, ``judge@bank-7-v3`` for the
bank's third version, with ``+fs`` appended when reviewers' decisions were
shown as examples (trajectories.judging.few_shot)."""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass

from django.db import transaction
from django.db.models import JSONField, Max
from django.db.models.expressions import RawSQL

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from reasoningbank_site.errors import Invalid
from trajectories.judging.models import PromptName, PromptVersion
from trajectories.models import Trajectory
from trajectories.prompts import prompt_load, prompt_problems

FEW_SHOT_SUFFIX = "+fs"


@dataclass(frozen=True)
class ActivePrompt:
    name: str
    text: str
    version: str  # "judge/v1" or "judge@bank-7-v3"
    custom: PromptVersion | None  # None: the default file


def prompt_of(*, name: str, version: PromptVersion | None) -> ActivePrompt:
    """The words of ``version`` (a bank's), or of the default file when None."""
    if version is None:
        text, label = prompt_load(name)
        return ActivePrompt(name=name, text=text, version=label, custom=None)
    return ActivePrompt(name=name, text=version.text, version=version.version, custom=version)


def prompt_active(*, bank: Bank, name: str) -> ActivePrompt:
    """The prompt the pipeline uses for ``name`` in ``bank``: its active
    version, else the default file."""
    custom = PromptVersion.objects.filter(bank=bank, name=name, is_active=True).first()
    return prompt_of(name=name, version=custom)


def active_prompt_versions() -> RawSQL:
    """An annotation for a queryset of trajectories (its base table, not
    joined): the bank's active prompt versions, every name, as one JSON list
    of their rows, which ``prompt_active_among`` reads as prompt_active would,
    without a query of its own (a stage reads its prompt with the row it works
    on). Raw SQL: building and compiling the ORM's JSON subquery cost more
    than the query it saves."""
    return _ACTIVE_PROMPTS


_ACTIVE_PROMPTS = RawSQL(
    f"(SELECT coalesce(jsonb_agg(to_jsonb(p) ORDER BY p.name), '[]') FROM {PromptVersion._meta.db_table} p"
    f' WHERE p.bank_id = "{Trajectory._meta.db_table}"."bank_id" AND p.is_active)',
    (),
    output_field=JSONField(),
)


def prompt_active_among(*, name: str, versions: list[dict] | None) -> ActivePrompt:
    """What prompt_active answers for ``name``, from the active versions an
    ``active_prompt_versions`` annotation read."""
    row = next((v for v in versions or () if v["name"] == name), None)
    if row is None:
        return prompt_of(name=name, version=None)
    fields = PromptVersion._meta.concrete_fields
    version = PromptVersion.from_db(None, [f.attname for f in fields], [f.to_python(row[f.attname]) for f in fields])
    return prompt_of(name=name, version=version)


def prompt_versions(*, bank: Bank, name: str) -> list[PromptVersion]:
    """Every saved version of ``name`` in ``bank``, newest first."""
    return list(PromptVersion.objects.filter(bank=bank, name=name).select_related("author").order_by("-number"))


def prompt_version_for_bank(*, bank: Bank, name: str, public_id: str) -> PromptVersion | None:
    """The bank's saved version ``public_id`` of ``name``, or None (another bank's or not a UUID)."""
    try:
        uuid.UUID(str(public_id))
    except ValueError:
        return None
    return PromptVersion.objects.filter(bank=bank, name=name, public_id=public_id).first()


def prompt_diff(*, name: str, text: str) -> list[tuple[str, str]]:
    """``text`` against the default file, line by line: (kind, line) with
    kind ``same`` | ``added`` | ``removed``, for the editor's diff view."""
    default, _version = prompt_load(name)
    out = []
    for line in difflib.ndiff(default.splitlines(), text.splitlines()):
        tag, body = line[:2], line[2:]
        if tag == "? ":
            continue
        out.append(({"  ": "same", "+ ": "added", "- ": "removed"}[tag], body))
    return out


def _check_name(name: str) -> None:
    if name not in PromptName.values:
        raise Invalid(f"name: one of {', '.join(PromptName.values)}, got {name!r}.")


@transaction.atomic
def prompt_version_save(
    *, bank: Bank, name: str, text: str, note: str = "", author=None, activate: bool = True
) -> PromptVersion:
    """Save ``text`` as the next version of prompt ``name`` for ``bank``
    (made active at once unless ``activate`` is False: then it is a candidate
    for an experiment). Audited as ``prompt.save``. Raises Invalid listing
    every problem of prompt_problems (missing placeholders or answer format),
    or for an unknown name."""
    _check_name(name)
    text = text.replace("\r\n", "\n")
    problems = prompt_problems(name, text)
    if problems:
        raise Invalid(" ".join(problems))
    Bank.objects.select_for_update().filter(pk=bank.pk).first()  # numbers are assigned one at a time
    number = (PromptVersion.objects.filter(bank=bank, name=name).aggregate(n=Max("number"))["n"] or 0) + 1
    if activate:
        PromptVersion.objects.filter(bank=bank, name=name, is_active=True).update(is_active=False)
    version = PromptVersion.objects.create(
        bank=bank, name=name, number=number, text=text, note=note.strip()[:200], is_active=activate, author=author
    )
    audit_record(
        action=AuditAction.PROMPT_SAVE,
        bank=bank,
        user=author,
        obj=version,
        after={"version": version.version, "active": activate, "note": version.note},
    )
    return version


@transaction.atomic
def prompt_version_activate(*, version: PromptVersion, author=None) -> PromptVersion:
    """Make ``version`` the one the pipeline uses for its prompt (the
    previously active one stays saved). Audited as ``prompt.activate``."""
    before = prompt_active(bank=version.bank, name=version.name).version
    PromptVersion.objects.filter(bank_id=version.bank_id, name=version.name, is_active=True).exclude(
        pk=version.pk
    ).update(is_active=False)
    PromptVersion.objects.filter(pk=version.pk).update(is_active=True)
    version.is_active = True
    audit_record(
        action=AuditAction.PROMPT_ACTIVATE,
        bank=version.bank,
        user=author,
        obj=version,
        before={"version": before},
        after={"version": version.version},
    )
    return version


@transaction.atomic
def prompt_default_restore(*, bank: Bank, name: str, author=None) -> None:
    """Use the default file for ``name`` again (every saved version stays).
    Audited as ``prompt.restore_default``. Raises Invalid for an unknown name."""
    _check_name(name)
    before = prompt_active(bank=bank, name=name).version
    PromptVersion.objects.filter(bank=bank, name=name, is_active=True).update(is_active=False)
    audit_record(
        action=AuditAction.PROMPT_RESTORE_DEFAULT,
        bank=bank,
        user=author,
        before={"version": before},
        after={"version": prompt_load(name)[1]},
    )
