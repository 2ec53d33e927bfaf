"""The home page's count of items waiting for review in each bank
(accounts.teams.bank_work): under a policy that deals or lets reviewers claim
places (ReviewPolicy.seated), the items whose place is the user's and that
they have not decided yet; otherwise, and for owners and admins (who decide
outright), every proposed item. At most four queries for any number of banks."""

from __future__ import annotations

from django.db.models import Count
from django.urls import reverse

from accounts.models import Bank, Membership, Role
from accounts.teams.bank_work import BankWork
from memories.items.models import ItemStatus, MemoryItem
from memories.review.policy_models import ReviewPolicy, ReviewSeat
from reasoningbank_site.text import counted


def review_work(banks: list[Bank], user) -> dict[int, list[BankWork]]:
    """Per bank: the proposed items waiting for ``user``'s review, with a link to the queue."""
    pks = [bank.pk for bank in banks]
    proposed = dict(
        MemoryItem.objects.filter(bank__in=pks, status=ItemStatus.PROPOSED)
        .values("bank")
        .annotate(n=Count("id"))
        .values_list("bank", "n")
    )
    seated = {p.bank_id for p in ReviewPolicy.objects.filter(bank__in=pks) if p.seated}
    if seated:
        deciders = set(
            Membership.objects.filter(user=user, team__banks__in=seated, role__in=[Role.OWNER, Role.ADMIN]).values_list(
                "team__banks", flat=True
            )
        )
        seated -= deciders
    mine = {}
    if seated:
        mine = dict(
            ReviewSeat.objects.filter(user=user, item__bank__in=seated, item__status=ItemStatus.PROPOSED)
            .exclude(item__review_votes__user=user)
            .values("item__bank")
            .annotate(n=Count("id"))
            .values_list("item__bank", "n")
        )
    work = {}
    for bank in banks:
        queue = reverse("memories:review", kwargs={"bank_id": bank.public_id})
        if bank.pk in seated:
            n = mine.get(bank.pk, 0)
            text = f"{counted(n, 'item')} waiting for your review"
        else:
            n = proposed.get(bank.pk, 0)
            text = f"{counted(n, 'item')} waiting for review"
        work[bank.pk] = [BankWork(priority=10, count=n, text=text, action="Review them", url=queue)]
    return work
