"""Fixtures the accounts services tests share."""

import pytest

from accounts.models import Membership


@pytest.fixture
def owner_m(team, owner):
    return Membership.objects.get(team=team, user=owner)
