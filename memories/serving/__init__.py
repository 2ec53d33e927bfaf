"""What a bank serves its agents: the one definition every surface uses.

``served_release`` says which release a bank serves now (production, a canary
with its share, none yet) and, for a retrieval, which arm a draw falls in
(holdout, canary, production). ``served_q`` says which items a release may
serve: the release's members (or, for a production that is the approved set,
the approved items), never one archived as wrong, rejected or superseded,
suspended, past its validity, with a risk finding nobody confirmed, below the
bank's serving tier, short of the corroboration its bank requires (neither
approved by a human nor supported by enough independent runs), or outside the
request's filters; the rules it is built
from (filters, trust tier, validity, release membership) are here too.
``served_items`` (``lists``) is that set for a bank, with each item's text as
released: what ``GET /memories``,
MCP ``list_memories``, the Agent Skills folder, the zip, the AGENTS.md section
and the served export hold, and what ``/retrieve`` searches (in both modes,
through ``served_q``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Now

from accounts.models import Bank
from memories.items.experiences import Experience
from memories.items.models import ItemOrigin, ItemStatus, MemoryItemVersion
from memories.learning.selectors import refused_q
from memories.releases.models import ReleaseMember
from memories.trust.models import CorroborationDistinct, TrustPolicy, VerdictTier, tier_name
from memories.trust.risk_models import RiskFinding


@dataclass(frozen=True)
class RetrievalFilters:
    """What a retrieval may serve, beyond the bank and status: items carrying
    any of ``tags_any`` and all of ``tags_all``, learnt from a trajectory of
    one of ``agents``, whose source trajectories' metadata includes
    ``metadata`` (JSON containment: every key with that value, nested objects
    matched partially), whose source verdicts reach ``min_tier`` (VerdictTier;
    0: any). Empty parts do not filter. Items written by hand or
    imported have no source agent or metadata, so those filters leave them out."""

    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    min_tier: int = 0

    def __bool__(self) -> bool:
        return bool(self.tags_any or self.tags_all or self.agents or self.metadata or self.min_tier)

    def q(self, prefix: str = "") -> Q:
        """The filters as a Q on MemoryItem (``prefix`` for a related item, e.g. "items__");
        every lookup has a GIN index, and all of them run inside the vector search. Whatever the
        filters, an item with a risk finding nobody confirmed is never served (``unconfirmed_risk_q``),
        nor one its bank's trust policy refuses (``bank_policy_q``)."""
        q = ~unconfirmed_risk_q(prefix)
        if not prefix:
            q &= bank_policy_q()
        if self.min_tier:
            q &= tier_q(self.min_tier)
        if self.tags_any:
            q &= Q(**{f"{prefix}tags__overlap": list(self.tags_any)})
        if self.tags_all:
            q &= Q(**{f"{prefix}tags__contains": list(self.tags_all)})
        if self.agents:
            q &= Q(**{f"{prefix}source_agents__overlap": list(self.agents)})
        if self.metadata:
            # source_metadata is a list of objects: [{...}] is contained when one of them contains {...}.
            q &= Q(**{f"{prefix}source_metadata__contains": [self.metadata]})
        return q

    def as_dict(self) -> dict:
        """The filters in the API's shape (recorded on the RetrievalEvent); {} when none."""
        out: dict = {}
        tags = {key: list(values) for key, values in (("any", self.tags_any), ("all", self.tags_all)) if values}
        if tags:
            out["tags"] = tags
        if self.agents:
            out["agent"] = {"in": list(self.agents)}
        if self.metadata:
            out["metadata"] = self.metadata
        if self.min_tier:
            out["tier"] = {"min": tier_name(self.min_tier)}
        return out


def unconfirmed_risk_q(prefix: str = "") -> Q:
    """Items with a risk finding nobody confirmed: negated, a NOT EXISTS probing the partial index
    ``riskfinding_unconfirmed`` per candidate (a related item, ``prefix``, as a NOT IN)."""
    if prefix:
        return Q(**{f"{prefix}pk__in": RiskFinding.objects.filter(confirmed=False).values("item_id")})
    return Q(Exists(RiskFinding.objects.filter(item=OuterRef("pk"), confirmed=False)))


NO_FILTERS = RetrievalFilters()


def servable_q(prefix: str = "") -> Q:
    """Approved items that may be served: not suspended, and not past their validity."""
    return Q(**{f"{prefix}suspended": False}) & (
        Q(**{f"{prefix}valid_until__isnull": True}) | Q(**{f"{prefix}valid_until__gt": Now()})
    )


HUMAN_WRITTEN = (ItemOrigin.MANUAL, ItemOrigin.IMPORT)


def experience_trajectories():
    return Experience._meta.get_field("trajectories").related_model.objects


def tier_q(min_tier: int) -> Q:
    """Items whose source verdicts all reach ``min_tier`` (one written by hand or imported is a human's)."""
    weaker = experience_trajectories().filter(experience_id=OuterRef("experience_id"), verdict_tier__lt=min_tier)
    human = Q(origin__in=HUMAN_WRITTEN)
    learnt = ~human & Q(experience__isnull=False) & ~Q(Exists(weaker))
    return human | learnt if min_tier <= VerdictTier.HUMAN else learnt


def bank_policy_q() -> Q:
    """Items their bank's trust policy lets it serve: all of them when the bank
    has no policy or no tier set; else those reaching its ``min_tier``. In SQL,
    with no query of its own (probes of the policy's unique index per item)."""
    policy = TrustPolicy.objects.filter(bank_id=OuterRef("bank_id"), min_tier__gt=0)
    weaker = experience_trajectories().filter(
        experience_id=OuterRef(OuterRef("experience_id")), verdict_tier__lt=OuterRef("min_tier")
    )
    human = Q(origin__in=HUMAN_WRITTEN)
    human_served = human & ~Q(Exists(policy.filter(min_tier__gt=VerdictTier.HUMAN)))
    learnt_served = (
        ~human & ~Q(Exists(policy.filter(Exists(weaker)))) & (Q(experience__isnull=False) | ~Q(Exists(policy)))
    )
    return (human_served | learnt_served) & corroboration_q()


# The versions that approve an item: a reviewer's or review token's approval (or a creation as approved), and the
# trust policy's auto-approval. The approval in force is the latest of them.
HUMAN_APPROVALS = ("approved", "created")
AUTO_APPROVAL = "auto-approved"


def human_approved_q() -> Q:
    """Items a human approved: the approval in force is a version "approved" (or "created" as approved) by a
    reviewer or a review token, not the trust policy's "auto-approved" (none came after it). A finding
    added since is unconfirmed, so ``unconfirmed_risk_q`` withholds the item until a human confirms it."""
    auto_after = MemoryItemVersion.objects.filter(
        item_id=OuterRef(OuterRef("pk")), action=AUTO_APPROVAL, number__gt=OuterRef("number")
    )
    human = MemoryItemVersion.objects.filter(
        Q(author__isnull=False) | Q(actor_token__isnull=False),
        item_id=OuterRef("pk"),
        status=ItemStatus.APPROVED,
        action__in=HUMAN_APPROVALS,
    ).filter(~Exists(auto_after))
    return Q(Exists(human))


def corroboration_q() -> Q:
    """Items their bank's corroboration policy lets it serve: all of them when
    the bank does not require corroboration (the default); else those a human
    approved (``human_approved_q``), and those with no risk finding supported
    by at least the policy's number of independent sources (the item's
    ``corroborating_*`` count its distinctness names). In SQL, with no query
    of its own: a probe of the policy's unique index per item, then of the
    item's findings and versions only where the policy is on."""
    requiring = TrustPolicy.objects.filter(bank_id=OuterRef("bank_id"), corroboration_required=True)
    # Uncorrelated: a hashed lookup per item (the policies that require it read once), not an index probe.
    required = Q(bank_id__in=TrustPolicy.objects.filter(corroboration_required=True).values("bank_id"))
    short = requiring.filter(
        Q(
            corroboration_distinct=CorroborationDistinct.RUNS,
            corroboration_min_sources__gt=OuterRef("corroborating_runs"),
        )
        | Q(
            corroboration_distinct=CorroborationDistinct.AGENTS,
            corroboration_min_sources__gt=OuterRef("corroborating_agents"),
        )
        | Q(
            corroboration_distinct=CorroborationDistinct.TOKENS,
            corroboration_min_sources__gt=OuterRef("corroborating_tokens"),
        )
    )
    corroborated = ~Q(Exists(short)) & ~Q(Exists(RiskFinding.objects.filter(item=OuterRef("pk"))))
    return ~required | corroborated | human_approved_q()


@dataclass(frozen=True)
class Serving:
    """What a retrieval of a bank serves: the production release's number
    (None before the bank's first release) and the canary's with its share.
    ``production_is_draft``: production is the newest release of a bank that
    publishes automatically, so it holds exactly the approved set and the
    search filters on the status, as it always has."""

    production: int | None = None
    canary: int | None = None
    canary_fraction: float = 0.0
    production_is_draft: bool = True


def release_serving(*, bank: Bank) -> Serving:
    """``bank``'s Serving, from the labels copied on its row (no query)."""
    canary = bank.release_canary if bank.release_canary_fraction > 0 else None
    return Serving(
        production=bank.release_production,
        canary=canary,
        canary_fraction=bank.release_canary_fraction if canary is not None else 0.0,
        production_is_draft=not bank.release_filtered,
    )


class Arm:
    PRODUCTION = "production"
    CANARY = "canary"
    HOLDOUT = "holdout"


@dataclass(frozen=True)
class ServedRelease:
    """Which release is served: ``number`` (None before the bank's first
    release; in the holdout arm, the release production would have served),
    ``searched`` (the release whose members are served, or None when
    production is the approved set itself, so the search filters on the
    status as it always has), ``arm``, and the canary's number and share
    (None and 0 without one)."""

    number: int | None
    searched: int | None
    arm: str = Arm.PRODUCTION
    canary: int | None = None
    canary_fraction: float = 0.0

    @property
    def held_out(self) -> bool:
        return self.arm == Arm.HOLDOUT


def served_release(*, bank: Bank, draw: float | None = None) -> ServedRelease:
    """The release ``bank`` serves, read from the labels copied on its row (no
    query). Without ``draw``: production, what every list and file holds.
    With ``draw`` (uniform in [0, 1), one per retrieval): the retrieval's arm,
    holdout below the bank's holdout fraction, then the canary for its share
    of all retrievals, else production."""
    labels = release_serving(bank=bank)
    production, canary, share = labels.production, labels.canary, labels.canary_fraction
    arm = Arm.PRODUCTION
    if draw is not None:
        if bank.holdout_fraction > 0 and draw < bank.holdout_fraction:
            arm = Arm.HOLDOUT
        elif canary is not None and draw < bank.holdout_fraction + share:
            arm = Arm.CANARY
    number = canary if arm == Arm.CANARY else production
    return ServedRelease(
        number=number,
        searched=release_searched(bank=bank, number=number),
        arm=arm,
        canary=canary,
        canary_fraction=share,
    )


def release_searched(*, bank: Bank, number: int | None) -> int | None:
    """The release whose members are served to serve release ``number``: None
    (the approved items) for none, and for a production release that is the
    approved set (a bank that publishes automatically, at its newest release)."""
    labels = release_serving(bank=bank)
    if number is None or (number == labels.production and labels.production_is_draft):
        return None
    return number


def served_q(*, searched: int | None, filters: RetrievalFilters = NO_FILTERS) -> Q:
    """The items that may be served from release ``searched`` (None: the
    approved items), as a Q on MemoryItem that every search and list puts in
    its own query. A release's members are served whatever their status now
    (a rollback serves an archived item again), except one a reviewer refused
    (rejected, or archived as wrong) or that was superseded; any release
    leaves out suspended and expired items, and ``filters`` (whose Q also
    leaves out unconfirmed risk findings and what the bank's trust policy
    refuses)."""
    if searched is None:
        members = Q(status=ItemStatus.APPROVED)
    else:
        members = release_item_exists(searched) & ~refused_q() & ~Q(status=ItemStatus.SUPERSEDED)
    return filters.q() & servable_q() & members  # the order the search's statement has always had


def release_member_q(number: int, prefix: str = "") -> Q:
    """Membership rows of release ``number`` (the interval encoding of ReleaseMember)."""
    return Q(**{f"{prefix}added_in__lte": number}) & (
        Q(**{f"{prefix}removed_in__isnull": True}) | Q(**{f"{prefix}removed_in__gt": number})
    )


def latest_version_subquery():
    return Coalesce(
        Subquery(MemoryItemVersion.objects.filter(item=OuterRef("pk")).order_by("-number").values("number")[:1]),
        0,
    )


def release_item_exists(number: int) -> Exists:
    """Whether the item (the outer query's row) is in release ``number``: one
    probe of the membership index per candidate the vector search reads."""
    return Exists(ReleaseMember.objects.filter(release_member_q(number), item_id=OuterRef("pk")))


def release_version_subquery(number: int) -> Subquery:
    """The version of the item (the outer query's row) in release ``number``."""
    return Subquery(
        ReleaseMember.objects.filter(release_member_q(number), item_id=OuterRef("pk")).values("version")[:1]
    )


def release_texts_apply(pairs: list, *, number: int) -> None:
    """Serve each item of ``pairs`` ((item, score), found in release
    ``number``, with ``release_version`` and ``latest_version`` annotated)
    with the text and tags of its version in that release when it was changed since:
    at most one query, none when every item is as released."""
    stale = {item.pk: item.release_version for item, _ in pairs if item.release_version != item.latest_version}
    if not stale:
        return
    wanted = Q(pk__in=[])
    for pk, version in stale.items():
        wanted |= Q(item_id=pk, number=version)
    texts = {v["item_id"]: v for v in MemoryItemVersion.objects.filter(wanted).values("item_id", *RELEASED_TEXT)}
    for item, _ in pairs:
        text = texts.get(item.pk)
        if text is not None:
            item.title, item.description, item.content = text["title"], text["description"], text["content"]
            item.tags = text["tags"]


DIFF_FIELDS = ("title", "description", "content")


RELEASED_TEXT = (*DIFF_FIELDS, "tags")
