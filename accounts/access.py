"""The one place the HTML views ask "may this user do this on this bank?".

Not a member of the bank's team → 404 (never reveal that it exists);
a member whose role is too low → 403."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from accounts.models import Bank, Membership, Role, Team


def bank_for_user(request, bank_public_id, role: str = Role.VIEWER) -> tuple[Bank, Membership]:
    """The bank (with its team) and the user's membership, or Http404 /
    PermissionDenied as described above."""
    if not request.user.is_authenticated:
        raise Http404
    membership = (
        Membership.objects.select_related("team")
        .filter(user=request.user, team__banks__public_id=bank_public_id)
        .first()
    )
    if membership is None:
        raise Http404("No such bank.")
    bank = Bank.objects.select_related("team").get(public_id=bank_public_id, team=membership.team)
    if not membership.has_role(role):
        raise PermissionDenied(
            f"This needs the {Role(role).label.lower()} role; you are {membership.get_role_display().lower()}."
        )
    return bank, membership


def team_for_user(request, team_public_id, role: str = Role.VIEWER) -> tuple[Team, Membership]:
    """The team and the user's membership, or Http404 (not a member, or no
    such team) / PermissionDenied (role too low) — the team twin of
    ``bank_for_user``."""
    if not request.user.is_authenticated:
        raise Http404
    membership = (
        Membership.objects.select_related("team").filter(user=request.user, team__public_id=team_public_id).first()
    )
    if membership is None:
        raise Http404("No such team.")
    if not membership.has_role(role):
        raise PermissionDenied(
            f"This needs the {Role(role).label.lower()} role; you are {membership.get_role_display().lower()}."
        )
    return membership.team, membership
