"""What a bank knows: memory items, the past experiences they came from, the
record of what was served to whom, and who reviews what. Every model and
shared limit is importable from here (``from memories.models import X``)."""

from memories.models.experiences import EMBEDDING_DIM, Experience
from memories.models.items import (
    CONTENT_MAX,
    DESCRIPTION_MAX,
    REASON_MAX,
    SOURCE_METADATA_MAX,
    TAG_MAX_LENGTH,
    TAG_PATTERN,
    TAGS_MAX,
    TITLE_MAX,
    ItemOrigin,
    ItemStatus,
    MemoryItem,
    MemoryItemSupport,
    MemoryItemVersion,
    SupportKind,
    item_search_vector,
    normalize_tags,
)
from memories.models.learning import BankLearning
from memories.models.releases import (
    BankReleasing,
    ImportState,
    PublishMode,
    Release,
    ReleaseImport,
    ReleaseMember,
    ReleaseSource,
)
from memories.models.retrieval import Arm, ItemSide, RetrievalEvent, RetrievalTally
from memories.models.review import ReviewAssignment, ReviewPresence
from memories.models.review_policy import (
    GUIDELINES_MAX,
    Distribution,
    ReviewPolicy,
    ReviewSeat,
    ReviewVote,
    SavedQueueView,
    SeatSource,
    VoteDecision,
)
from memories.models.risks import FindingSource, RiskFinding
from memories.models.trust import TIER_BY_NAME, TIER_NAMES, AuditVerdict, AutoApproval, TrustPolicy, VerdictTier

__all__ = [
    "CONTENT_MAX",
    "DESCRIPTION_MAX",
    "EMBEDDING_DIM",
    "GUIDELINES_MAX",
    "REASON_MAX",
    "SOURCE_METADATA_MAX",
    "TAGS_MAX",
    "TAG_MAX_LENGTH",
    "TAG_PATTERN",
    "TIER_BY_NAME",
    "TIER_NAMES",
    "TITLE_MAX",
    "Arm",
    "AuditVerdict",
    "AutoApproval",
    "BankLearning",
    "BankReleasing",
    "Distribution",
    "Experience",
    "FindingSource",
    "ImportState",
    "ItemOrigin",
    "ItemSide",
    "ItemStatus",
    "MemoryItem",
    "MemoryItemSupport",
    "MemoryItemVersion",
    "PublishMode",
    "Release",
    "ReleaseImport",
    "ReleaseMember",
    "ReleaseSource",
    "RetrievalEvent",
    "RetrievalTally",
    "ReviewAssignment",
    "ReviewPolicy",
    "ReviewPresence",
    "ReviewSeat",
    "ReviewVote",
    "RiskFinding",
    "SavedQueueView",
    "SeatSource",
    "SupportKind",
    "TrustPolicy",
    "VerdictTier",
    "VoteDecision",
    "item_search_vector",
    "normalize_tags",
]
