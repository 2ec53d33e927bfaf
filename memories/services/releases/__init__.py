"""Bank releases, by sub-domain: ``publishing`` (the draft published as the
next release, by hand or automatically after each change) and ``labels``
(production, the canary and its share, promotion, rollback, the automatic
rollback policy)."""

from memories.services.releases.labels import (
    canary_fraction_check,
    release_canary_set,
    release_canary_stop,
    release_notice_dismiss,
    release_policy_set,
    release_promote,
    release_rollback,
    releasing_locked,
)
from memories.services.releases.publishing import (
    ReleaseOutcome,
    release_mode_set,
    release_publish,
    releases_items_changed,
)

__all__ = [
    "ReleaseOutcome",
    "canary_fraction_check",
    "release_canary_set",
    "release_canary_stop",
    "release_mode_set",
    "release_notice_dismiss",
    "release_policy_set",
    "release_promote",
    "release_publish",
    "release_rollback",
    "releases_items_changed",
    "releasing_locked",
]
