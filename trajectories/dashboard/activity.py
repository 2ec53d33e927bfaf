"""How the dashboard's recent activity words a change of a memory item: the
version's action (``memories.items.versions``), as "<who> <did what>: <title>"."""

from __future__ import annotations

# What MemoryItemVersion.actor_label reads: the author's name, else the review token's.
ACTOR_FIELDS = ("author__username", "actor_token__prefix", "actor_token__name")

ITEM_ACTION_WORDS = {
    "merged": "merged into another item",
    "merged-in": "merged another item into",
    "flagged": "flagged for another look",
    "kept-both": "kept apart from its near-duplicates",
    "stale": "marked stale",
    "validity": "set how long it holds",
    "kept": "kept in service",
    "proposed-for-retirement": "proposed for retirement",
    "archived-as-wrong": "archived as wrong",
    "confirmed-current": "confirmed still current",
}


def item_action_words(action: str) -> str:
    """``action`` as a verb phrase: "marked stale"; an action without words of its own, with spaces."""
    return ITEM_ACTION_WORDS.get(action, action.replace("-", " ").replace("_", " "))
