"""The retrieve path stays short: a newcomer reading what `POST /api/v1/retrieve` does crosses at most
``MAX_FILES`` of the apps' files (migrations aside), in either retrieval mode. Counted by tracing the
Python functions a warm request calls, so the count is of code that runs, not of imports. The site's
request plumbing that every request passes through (``reasoningbank_site``: request ids, logs, metrics,
security headers) is not part of the path."""

import sys
from pathlib import Path

import pytest

from accounts.models import RetrievalMode
from memories.embedding.items import memory_item_embed_refresh
from memories.items.experiences import experience_create
from memories.items.services import memory_item_propose
from memories.review.decisions import memory_item_approve
from tests.helpers import ROOT, retrieve

APPS = ("accounts", "memories", "trajectories")
MAX_FILES = 8


def app_files_called(call) -> set[str]:
    """The app files whose functions run while ``call()`` does."""
    seen: set[str] = set()

    def profile(frame, event, _arg):
        if event == "call":
            path = Path(frame.f_code.co_filename)
            if path.is_relative_to(ROOT):
                relative = path.relative_to(ROOT)
                if relative.parts[0] in APPS and "migrations" not in relative.parts:
                    seen.add(str(relative))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("mode", [RetrievalMode.ITEMS, RetrievalMode.EXPERIENCES])
def test_retrieve_crosses_few_app_files(client, bank, owner, token, mode):
    bank.retrieval_mode = mode
    bank.min_similarity = -1.0
    bank.save(update_fields=["retrieval_mode", "min_similarity"])
    past = experience_create(bank=bank, task="Log into the shop and open my orders")
    item = memory_item_propose(
        bank=bank,
        title="Sign in first",
        description="Use when the task needs an account.",
        content="Find the login form and submit it before anything else.",
        origin="success",
        experience=past,
        source_agents=["a"],
    )
    memory_item_embed_refresh(item_id=item.pk)
    item.refresh_from_db()
    memory_item_approve(item=item, author=owner)
    assert retrieve(client, token).status_code == 200  # warm: imports and caches
    answers = []
    files = app_files_called(lambda: answers.append(retrieve(client, token, "log into my account")))
    assert [item["title"] for item in answers[0].json()["items"]] == ["Sign in first"]
    assert len(files) <= MAX_FILES, "\n".join(sorted(files))
