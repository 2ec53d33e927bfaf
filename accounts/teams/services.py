"""Teams and memberships: creating a team, changing a member's role,
removing a member (or leaving), with the owner rules."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils.text import slugify

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.errors import AccountsConflict, AccountsForbidden, AccountsInvalid
from accounts.models import Membership, Role, Team


def unique_slug(base: str, taken: Callable[[str], bool]) -> str:
    """The first of ``base``, ``base-2``, ``base-3``… (slugified, base cut to
    50 characters) for which ``taken(slug)`` is false."""
    base = (slugify(base) or "x")[:50]
    slug, n = base, 2
    while taken(slug):
        slug, n = f"{base}-{n}", n + 1
    return slug


def require_member_manager(actor_membership: Membership) -> None:
    """Raises AccountsForbidden unless the actor is an admin or owner."""
    if not actor_membership.has_role(Role.ADMIN):
        raise AccountsForbidden("Only admins and owners manage members.")


def require_known_role(role: str) -> None:
    """Raises AccountsInvalid for a role that does not exist."""
    if role not in Role.values:
        raise AccountsInvalid(f"Unknown role '{role}'.")


@transaction.atomic
def team_create(*, name: str, owner, slug: str = "") -> Team:
    """Create a team with ``owner`` as its first owner. An empty ``slug`` is
    derived from the name (made unique). Raises AccountsInvalid for an empty
    name, AccountsConflict for a slug already taken."""
    name = name.strip()
    if not name:
        raise AccountsInvalid("A team needs a name.")
    if slug:
        if Team.objects.filter(slug=slug).exists():
            raise AccountsConflict(f"The team slug '{slug}' is taken.")
    else:
        slug = unique_slug(name, lambda s: Team.objects.filter(slug=s).exists())
    team = Team.objects.create(name=name, slug=slug)
    membership = Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    audit_record(action=AuditAction.TEAM_CREATE, team=team, user=owner, obj=team, after={"name": name, "slug": slug})
    audit_record(
        action=AuditAction.MEMBERSHIP_ADD,
        team=team,
        user=owner,
        obj=membership,
        after={"user": owner.get_username(), "role": Role.OWNER},
    )
    return team


def _lock_owners(team: Team) -> int:
    """Lock the team's owner rows and count them, so two concurrent demotions
    cannot both pass the last-owner check."""
    return len(
        list(Membership.objects.select_for_update().filter(team=team, role=Role.OWNER).values_list("pk", flat=True))
    )


@transaction.atomic
def membership_change_role(*, membership: Membership, role: str, actor, actor_membership: Membership) -> Membership:
    """Give ``membership`` a new role. Rules: only admins+ manage members;
    only owners grant the owner role or change an owner's role; the last
    owner cannot be demoted. Raises AccountsInvalid for an unknown role,
    AccountsForbidden when the actor's role does not allow it,
    AccountsConflict for the last owner."""
    require_known_role(role)
    require_member_manager(actor_membership)
    membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
    if (role == Role.OWNER or membership.role == Role.OWNER) and actor_membership.role != Role.OWNER:
        raise AccountsForbidden("Only owners make owners or change an owner's role.")
    if membership.role == role:
        return membership
    if membership.role == Role.OWNER and _lock_owners(membership.team) <= 1:
        raise AccountsConflict("The last owner cannot be demoted: make someone else an owner first.")
    before = {"user": membership.user.get_username(), "role": membership.role}
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(
        action=AuditAction.MEMBERSHIP_CHANGE_ROLE,
        team=membership.team,
        user=actor,
        obj=membership,
        before=before,
        after={"user": membership.user.get_username(), "role": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor, actor_membership: Membership) -> None:
    """Remove a member (or let one leave: ``actor`` is the member). Others
    are removed by admins+; owners only by owners; the last owner can neither
    leave nor be removed. Raises AccountsForbidden when the actor's role does
    not allow it, AccountsConflict for the last owner."""
    membership = Membership.objects.select_for_update().select_related("user", "team").get(pk=membership.pk)
    leaving = membership.user_id == actor.pk
    if not leaving:
        require_member_manager(actor_membership)
        if membership.role == Role.OWNER and actor_membership.role != Role.OWNER:
            raise AccountsForbidden("Only owners remove an owner.")
    if membership.role == Role.OWNER and _lock_owners(membership.team) <= 1:
        raise AccountsConflict("The last owner cannot leave or be removed: make someone else an owner first.")
    before = {"user": membership.user.get_username(), "role": membership.role}
    audit_record(
        action=AuditAction.MEMBERSHIP_LEAVE if leaving else AuditAction.MEMBERSHIP_REMOVE,
        team=membership.team,
        user=actor,
        obj=membership,
        before=before,
    )
    membership.delete()
