import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(db):
    # The database cache table is not a model: transactional tests' flush keeps it.
    cache.clear()
    yield
    cache.clear()
