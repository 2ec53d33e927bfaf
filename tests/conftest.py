"""Fixtures every test directory shares: the account/bank/token chain, members
by role and the review UI's scene (a processed trajectory and an item proposed
from it), Celery in eager mode, the fake LLM server, the broker-queue cleanup,
and suite-wide settings (a fast password hasher)."""

import json
import os
import shutil

import pytest
from django.conf import settings as django_settings

from accounts.models import Role
from reasoningbank_site.celery import app as celery_app
from tests import factories
from tests.fake_llm import FakeLLM

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def pytest_configure(config):
    # Users are created by the hundred; PBKDF2's deliberate slowness buys nothing in tests.
    from django.contrib.auth.hashers import get_hashers, get_hashers_by_algorithm

    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    get_hashers.cache_clear()
    get_hashers_by_algorithm.cache_clear()


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


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, migrated; and a copy of it taken before any test ran (tests/migrated.py)
    for the tests that need a freshly migrated database of their own."""
    from tests import migrated

    if not migrated.test_database_is_set_up():  # no collected test uses the database
        yield
        return
    with django_db_blocker.unblock():
        migrated.snapshot()
    yield
    with django_db_blocker.unblock():
        migrated.drop()


@pytest.fixture(scope="session")
def migrated_template(django_db_setup, django_db_blocker) -> str | None:
    """The name of the copy of the freshly migrated test database (tests/migrated.py), or None when this session
    has no test database (no collected test uses the database): the caller then migrates as before."""
    from tests import migrated

    with django_db_blocker.unblock():
        return migrated.template_name() if migrated.test_database_is_set_up() else None


@pytest.fixture(scope="session")
def migrated_dump(migrated_template, tmp_path_factory):
    """migrated_template as a pg_dump archive (tests/migrated.py's ``restore`` loads it), or None without it."""
    from tests import migrated

    return migrated.dump(tmp_path_factory.mktemp("migrated") / "migrated.dump") if migrated_template else None


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


# --- the review UI's members and scene (the memories and trajectories view tests) ----------


@pytest.fixture
def reviewer(team):
    return factories.make_member(team, Role.REVIEWER)


@pytest.fixture
def viewer(team):
    return factories.make_member(team, Role.VIEWER)


@pytest.fixture
def alice(team):
    """A reviewer named alice (the several-reviewers tests: names show in conflicts and presence)."""
    return factories.make_member(team, Role.REVIEWER, user=factories.make_user("alice"))


@pytest.fixture
def bob(team):
    """A second reviewer, bob."""
    return factories.make_member(team, Role.REVIEWER, user=factories.make_user("bob"))


@pytest.fixture
def stranger(other_bank):
    """A member (owner even) of another team."""
    return other_bank.team.memberships.first().user


@pytest.fixture
def trajectory(bank):
    return factories.make_done_trajectory(bank)


@pytest.fixture
def item(bank, trajectory):
    return factories.propose_item(bank, trajectory)


@pytest.fixture
def eager_celery():
    """Run enqueued tasks in-process (the real task code; only the broker hop
    is skipped; countdowns too). Errors do not propagate: Celery's eager retry
    would become a raised Retry, so tests check results explicitly instead."""
    saved = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = False
    yield celery_app
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = saved


@pytest.fixture
def fake_llm(settings):
    """A fake OpenAI-compatible server (tests.fake_llm) the app is pointed at."""
    server = FakeLLM().start()
    settings.RB_LLM_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = ""
    settings.RB_LLM_MODEL = "fake-model"
    settings.RB_LLM_TIMEOUT = 5.0
    yield server
    server.stop()


@pytest.fixture
def no_llm(settings):
    """No LLM endpoint configured."""
    settings.RB_LLM_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


class BrokerQueue:
    """The queues of a Redis-protocol broker (the embedded one, or REDIS_URL) as a test sees them: kombu's
    Redis transport pushes each message (JSON, a unique id in its headers) onto a list named after its queue,
    and a consumer pops from the other end, so a list read backwards is oldest first."""

    def __init__(self, url: str):
        import redis

        path = url.removeprefix("redis+socket://")
        self.client = (
            redis.Redis(unix_socket_path=path, socket_timeout=10)
            if path != url
            else redis.Redis.from_url(url, socket_timeout=10)
        )

    def _messages(self) -> list[tuple[bytes, bytes]]:
        """(list name, message) of every waiting message, oldest first in each list."""
        found = []
        for name in sorted(self.client.scan_iter(_type="list")):
            found += [(name, raw) for raw in reversed(self.client.lrange(name, 0, -1))]
        return found

    def snapshot(self) -> set[bytes]:
        """The messages waiting now (compare with a later ``queued_tasks``)."""
        return {raw for _name, raw in self._messages()}

    def remove_new(self, since: set[bytes]) -> None:
        for name, raw in self._messages():
            if raw not in since:
                self.client.lrem(name, 0, raw)


@pytest.fixture(autouse=True)
def broker_queue():
    """The test process's broker queues (BrokerQueue). Messages our tests enqueue are removed afterwards
    so no later worker picks them up."""
    queue = BrokerQueue(django_settings.CELERY_BROKER_URL)
    before = queue.snapshot()
    yield queue
    queue.remove_new(before)
    queue.client.close()


def queued_tasks(queue: BrokerQueue, since: set[bytes]) -> list[tuple[str, str]]:
    """(task name, argsrepr) of the messages that arrived after ``since`` (a ``snapshot``), oldest first."""
    found = []
    for _name, raw in queue._messages():
        if raw not in since:
            headers = json.loads(raw)["headers"]
            found.append((headers["task"], headers["argsrepr"]))
    return found


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
        terminalreporter.write_line(
            "  (under CI=true a missing redis-server, browser, node or podman fails instead of skipping)"
        )
