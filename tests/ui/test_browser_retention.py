"""Deleting a trajectory in a real headless Chromium: an admin clicks Delete
on the trajectory page, reads the confirmation page, confirms, lands on the
list with the message; the item distilled from it says where it came from."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from tests import factories
from trajectories.models import Trajectory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_delete_a_trajectory_with_confirmation(page, live_server, login, bank, owner):
    trajectory = factories.make_done_trajectory(bank, external_id="run-99")
    item = factories.propose_item(bank, trajectory)
    url = f"/banks/{bank.public_id}/trajectories/{trajectory.public_id}/"
    login(page, live_server, owner, url)

    page.get_by_role("button", name="Delete…").click()
    page.locator("#delete-confirm").wait_for()
    assert "1 memory item distilled from it stay" in page.locator("#delete-confirm").inner_text()
    assert Trajectory.objects.filter(pk=trajectory.pk).exists()  # nothing happens before the confirmation

    page.get_by_role("button", name="Delete the trajectory").click()
    page.wait_for_url(f"{live_server.url}/banks/{bank.public_id}/trajectories/")
    assert f"Trajectory {trajectory.public_id} deleted" in page.content()
    assert not Trajectory.objects.filter(pk=trajectory.pk).exists()
    assert AuditEvent.objects.get(action="trajectory.delete").actor_user == owner

    page.goto(f"{live_server.url}/banks/{bank.public_id}/items/{item.public_id}/")
    assert page.locator(".deleted-source").first.inner_text() == "a deleted trajectory"
