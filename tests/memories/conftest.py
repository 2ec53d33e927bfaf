import pytest

from memories.services import memory_item_approve, memory_item_create, memory_item_embed_refresh


@pytest.fixture
def approved(owner):
    """Builder: an approved item of a bank, embedded (as the worker does after the create)."""

    def make(bank, title, description="", content="", **kwargs):
        item = memory_item_create(
            bank=bank, title=title, description=description, content=content, author=owner, **kwargs
        )
        memory_item_embed_refresh(item_id=item.pk)
        item.refresh_from_db()
        return memory_item_approve(item=item, author=owner, confirm_duplicate=True)  # twins too: tests build many

    return make
