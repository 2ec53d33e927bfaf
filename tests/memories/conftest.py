import pytest

from memories.services import memory_item_approve, memory_item_create


@pytest.fixture
def approved(owner):
    """Builder: an approved item of a bank, embedded inline."""

    def make(bank, title, description="", content="", **kwargs):
        item = memory_item_create(
            bank=bank, title=title, description=description, content=content, author=owner, **kwargs
        )
        return memory_item_approve(item=item, author=owner)

    return make
