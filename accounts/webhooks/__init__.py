"""Signed webhooks (the Standard Webhooks scheme): a bank's subscriptions,
the events they receive and their deliveries.

``events`` names the events; ``addresses`` decides which receivers may be
called; ``subscriptions`` adds, removes and re-enables them and emits events
(``webhook_events_emit``, which the other apps' services call); ``delivery``
makes one signed attempt and decides what follows; ``models`` holds the rows
(imported by ``accounts.models``, so this package re-exports nothing: import
from the submodules)."""
