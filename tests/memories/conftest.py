import pytest

from memories.services import memory_item_approve, memory_item_create


@pytest.fixture
def eager_celery():
    """Run enqueued tasks in-process (the real task code; only the broker hop is skipped)."""
    from reasoningbank_site.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = previous


@pytest.fixture
def approved(owner):
    """Builder: an approved item of a bank, embedded inline."""

    def make(bank, title, description="", content="", **kwargs):
        item = memory_item_create(
            bank=bank, title=title, description=description, content=content, author=owner, **kwargs
        )
        return memory_item_approve(item=item, author=owner)

    return make
