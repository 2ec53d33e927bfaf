"""Small builders for test data. They call the real services where one
exists, so tests exercise the same write path as the product."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model

from accounts.models import Bank, Membership, Role, Team
from accounts.services import api_token_create, bank_create

_seq = itertools.count(1)


def make_user(username: str | None = None, password: str = "pw-for-tests-only"):
    n = next(_seq)
    return get_user_model().objects.create_user(
        username=username or f"user{n}", email=f"user{n}@example.com", password=password
    )


def make_team(*, owner=None, slug: str | None = None) -> Team:
    n = next(_seq)
    team = Team.objects.create(name=f"Team {n}", slug=slug or f"team-{n}")
    if owner is not None:
        Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def make_member(team: Team, role: str = Role.VIEWER, user=None):
    user = user or make_user()
    Membership.objects.create(team=team, user=user, role=role)
    return user


def make_bank(*, team: Team | None = None, slug: str | None = None, **settings) -> Bank:
    n = next(_seq)
    return bank_create(team=team or make_team(), name=f"Bank {n}", slug=slug or f"bank-{n}", **settings)


def make_token(bank: Bank, scopes=("retrieve", "ingest"), **kwargs) -> str:
    """Create a token and return its secret, ready for an Authorization header."""
    return api_token_create(bank=bank, name=kwargs.pop("name", "test"), scopes=list(scopes), **kwargs).secret
