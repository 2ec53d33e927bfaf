import os
import shutil

import pytest

from tests import factories

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def skip_unless(condition: bool, reason: str) -> None:
    """Skip when an optional outside part (a browser, redis-server) is missing
    on a developer machine; under CI=true a missing part fails instead."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def which(binary: str) -> str | None:
    return shutil.which(binary)


@pytest.fixture
def owner(db):
    return factories.make_user("owner")


@pytest.fixture
def team(owner):
    return factories.make_team(owner=owner, slug="acme")


@pytest.fixture
def bank(team):
    return factories.make_bank(team=team, slug="web-agents")


@pytest.fixture
def other_bank(db):
    """A bank of another team: its objects must answer 404 to us."""
    return factories.make_bank(team=factories.make_team(owner=factories.make_user()), slug="theirs")


@pytest.fixture
def token(bank):
    return factories.make_token(bank)


@pytest.fixture
def auth(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One clear block of what was NOT tested here and why (grouped by reason)."""
    from collections import Counter

    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: Counter[str] = Counter()
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    terminalreporter.write_sep("-", f"{len(skipped)} test(s) SKIPPED: not tested on this machine", yellow=True)
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"  {count} x {reason}")
    if not IN_CI:
        terminalreporter.write_line("  (under CI=true a missing redis-server or browser fails instead of skipping)")
