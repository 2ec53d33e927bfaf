"""Bank releases, by sub-domain: ``publishing`` (the draft published as the
next release, by hand or automatically after each change) and ``labels``
(production, the canary and its share, promotion, rollback, the automatic
rollback policy) and ``transfer`` (a release exported by one bank imported
as the next release of another; import it from ``memories.services.releases.transfer``:
item changes, which this package publishes, are made by services it uses)."""

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
    release_may_change,
    release_mode_set,
    release_publish,
    release_write,
    releases_items_changed,
)

__all__ = [
    "ReleaseOutcome",
    "canary_fraction_check",
    "release_canary_set",
    "release_canary_stop",
    "release_may_change",
    "release_mode_set",
    "release_notice_dismiss",
    "release_policy_set",
    "release_promote",
    "release_publish",
    "release_rollback",
    "release_write",
    "releases_items_changed",
    "releasing_locked",
]
