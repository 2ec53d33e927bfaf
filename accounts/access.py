"""The one place the HTML views ask "may this user do this on this bank?".

Not a member of the bank's team → 404 (never reveal that it exists);
a member whose role is too low → 403."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import Http404

from accounts.models import Bank, Membership, Role, Team

_MEMBERSHIP = "_membership_"  # bank_for_user's annotations carrying the membership's fields
_MEMBERSHIP_FIELDS = ("id", "role", "created_at")


def bank_for_user(request, bank_public_id, role: str = Role.VIEWER) -> tuple[Bank, Membership]:
    """The bank (with its team) and the user's membership, or Http404 /
    PermissionDenied as described above. One query: the bank with its team
    and the membership's fields: every bank page asks, so it is one query
    rather than two."""
    if not request.user.is_authenticated:
        raise Http404
    bank = (
        Bank.objects.select_related("team")
        .filter(public_id=bank_public_id, team__memberships__user=request.user)
        .annotate(**{_MEMBERSHIP + name: F(f"team__memberships__{name}") for name in _MEMBERSHIP_FIELDS})
        .first()
    )
    if bank is None:
        raise Http404("No such bank.")
    m = {name: bank.__dict__.pop(_MEMBERSHIP + name) for name in _MEMBERSHIP_FIELDS}
    membership = Membership.from_db(  # a whole row, in the model's field order (from_db passes it positionally)
        bank._state.db,
        ["id", "team_id", "user_id", "role", "created_at"],
        [m["id"], bank.team_id, request.user.pk, m["role"], m["created_at"]],
    )
    membership.team = bank.team
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
