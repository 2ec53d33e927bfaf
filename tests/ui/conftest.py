"""What the browser tests need besides tests/conftest.py: a hook that lets
the browser fixture see whether the test failed (for its screenshot). The
builders they share with the view tests are in tests/factories.py."""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets the browser fixture see whether the test failed (for its screenshot).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
