"""The people of a team, one per role, and a client logged in as any of them."""

import pytest

from accounts.models import Role
from tests import factories


@pytest.fixture
def people(team, owner):
    return {
        "owner": owner,
        "admin": factories.make_member(team, Role.ADMIN),
        "reviewer": factories.make_member(team, Role.REVIEWER),
        "viewer": factories.make_member(team, Role.VIEWER),
        "stranger": factories.make_user(),
    }


@pytest.fixture
def as_(client):
    def login(user):
        client.force_login(user)
        return client

    return login
